// What the layers above the engine (the composition module) read of an operation, without
// reaching into its state.

extension Operation {
    /// The queue the operation was added to, until it finished.
    package final var _queue: OperationQueue? { _update { $0.queue } }

    /// The queue the operation is in, while it has not finished; nil in no queue or finished.
    package final var _queueWhileUnfinished: OperationQueue? {
        _update { $0.phase.isFinishingOrFinished ? nil : $0.queue }
    }

    /// The reason it was cancelled with, once cancelled.
    package final var _cancellationReason: (any Error)? { _update { $0.extras?.cancellationReason } }

    /// The quality of service its work runs at (its own, raised by an escalation); nil when
    /// neither was set.
    package final var _threadQuality: QualityOfService? { _update { $0.threadQuality } }

    /// The quality of service an escalation raised it to; nil when none did.
    package final var _escalatedQuality: QualityOfService? { _update { $0.escalatedQuality } }
}
