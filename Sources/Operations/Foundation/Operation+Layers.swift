// What the layers above the engine (the composition module) read of an operation, without
// reaching into its state.

extension Operation {
    /// The queue the operation was added to, until it finished.
    package final var _queue: OperationQueue? { _readState { $0.queue } }

    /// The queue the operation is in, while it has not finished; nil in no queue or finished.
    package final var _queueWhileUnfinished: OperationQueue? {
        _readState { $0.phase.isFinishingOrFinished ? nil : $0.queue }
    }

    /// The reason it was cancelled with, once cancelled.
    package final var _cancellationReason: (any Error)? { _readState { $0.extras?.cancellationReason } }

    /// The quality of service its work runs at (its own, raised by an escalation); nil when
    /// neither was set.
    package final var _threadQuality: QualityOfService? { _readState { $0.threadQuality } }

    /// The quality of service an escalation raised it to; nil when none did.
    package final var _escalatedQuality: QualityOfService? { _readState { $0.escalatedQuality } }

    /// The quality of service the operation runs at: its own (raised by an escalation),
    /// never below its queue's; its queue's when it has none; in no queue, its own or
    /// `.default`. Work run on its behalf starts at this.
    package final var _runQuality: QualityOfService {
        QualityOfService.runningAt(own: _threadQuality, queue: _queue?._threadQuality)
    }

    /// Work run on `owner`'s behalf in `owner`'s queue (what its condition contributes)
    /// starts at the quality of service and priority `owner` runs at: the operation takes
    /// those it was not given. Before it joins the queue.
    package final func _takeQualityAndPriorityNotSet(from owner: Operation) {
        let quality = owner._runQuality
        let priority = owner._readState { $0.effectivePriority }
        let (qualityNotSet, priorityNotSet) = _readState { ($0.qualityOfService == nil, $0.queuePriority == nil) }
        if qualityNotSet { qualityOfService = quality }
        if priorityNotSet { queuePriority = priority }
    }
}
