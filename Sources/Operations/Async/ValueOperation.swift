/// An operation that produces a value of type `Success`: the base of the typed operations.
///
/// Subclass it and override ``execute()`` for synchronous work (or use
/// ``ValueBlockOperation``); for `async` work use ``TaskOperation`` or
/// ``AsyncBlockOperation``. Await the value with ``value``; pass it along dependencies with
/// ``then(_:)->ValueBlockOperation<Next>`` and `combine(_:transform:)`.
///
/// An operation made by `then` or `combine` is cancelled, without running, when one of its
/// inputs failed or was cancelled, with the input's error as the reason
/// (``Operation/Outcome/cancelled(reason:)``), so an error travels down a chain. A plain
/// ``Operation/addDependency(_:)`` keeps Foundation's behaviour: the dependent runs anyway.
///
/// Cancellation travels up: when such an operation is cancelled before it finished, each
/// unfinished input that nobody else wants any more — no operation that is neither
/// cancelled nor finished depends on it, and nothing waits for it to finish (a task
/// awaiting its ``value``, `perform` or `waitUntilFinished()`, a blocked thread, a loop over
/// ``OperationResults``, a group it belongs to) — is cancelled too, with the same reason,
/// and so on up the chain. Whether an input is wanted is decided when the stage is
/// cancelled; a cancel made while another cancellation is being passed up on the same
/// thread (from an observer told of it) is passed up when that one has finished its level.
///
/// - Note: `@unchecked Sendable`: the work, inputs, task and value are guarded by
///   `storage`'s lock.
open class ValueOperation<Success: Sendable>: Operation, @unchecked Sendable {
    let storage: Locked<ValueStorage>
    /// Made by `then` or `combine`: its start checks its inputs (without, it takes no lock).
    private let _takesInputs: Bool

    public override init() {
        storage = Locked(ValueStorage())
        _takesInputs = false
        super.init()
    }

    init(inputs: [Operation]) {
        storage = Locked(ValueStorage(inputs: inputs))
        _takesInputs = !inputs.isEmpty
        super.init()
        for input in inputs { addDependency(input) }
    }

    /// With its work and inputs in place from the start (no lock to take).
    init(work: ValueStorage.Work, inputs: [Operation]) {
        storage = Locked(ValueStorage(work: work, inputs: inputs))
        _takesInputs = !inputs.isEmpty
        super.init()
        for input in inputs { addDependency(input) }
    }

    deinit {
        // The inputs and the closure that reads them hold the operations before this one:
        // released like dependencies, iteratively (a long chain never run would recurse).
        let (work, inputs) = storage.withLock { storage in
            defer {
                storage.work = .none
                storage.inputs = []
            }
            return (storage.work, storage.inputs)
        }
        if !inputs.isEmpty { ReleasePool.release(inputs) }
        if case .none = work { return }
        ReleasePool.release(other: work)
    }

    /// The work: returns the value, or throws to fail the operation with that error.
    /// The base implementation traps: a subclass must override it.
    open func execute() throws -> Success {
        Misuse.fail("\(_misuseName) must override execute() (a ValueOperation subclass produces its value there)")
    }

    /// Runs the work: ``execute()`` on the calling thread; ``TaskOperation`` starts a task.
    public final override func main() {
        _runWork()
    }

    /// Cancels the operation first when one of its inputs did not succeed.
    open override func start() {
        if _takesInputs, !isCancelled, let failure = _inputFailure() {
            if let reason = failure { cancel(with: reason) } else { cancel() }
        }
        super.start()
    }

    func _runWork() {
        do {
            _deliver(try execute())
        } catch {
            _recordFailure(error)
        }
    }

    /// Stores the value the work returned.
    final func _deliver(_ value: any Sendable) {
        // Replaced outside the lock (a value's deinit is user code).
        let previous = storage.withLock { storage in
            defer { storage.value = value }
            return storage.value
        }
        _ = previous
    }

    /// Releases the work and the finished task (after the lock: their deinits are user code).
    override func _releaseWork() {
        let released = storage.withLock { storage in
            defer {
                storage.work = .none
                storage.task = nil
                storage.slot = nil
                storage.inputs = []
            }
            return (storage.work, storage.task, storage.slot, storage.inputs)
        }
        _ = released
    }

    /// nil when every input succeeded (or there are none); otherwise the first failing
    /// input's error (`.some(nil)` for a cancellation without a reason).
    private func _inputFailure() -> (any Error)?? {
        for input in storage.withLock({ $0.inputs }) {
            switch input.outcome {
            case .failed(let error)?: return .some(error)
            case .cancelled(let reason)?: return .some(reason)
            default: continue
            }
        }
        return nil
    }

    /// How the operation ended, with its value: nil until it has finished.
    ///
    /// `.failure` holds the error it failed with, or, when it was cancelled, the reason
    /// (a `CancellationError` for a cancellation without one).
    public var result: Result<Success, any Error>? {
        guard let outcome else { return nil }
        return _result(for: outcome)
    }

    private func _result(for outcome: Outcome) -> Result<Success, any Error> {
        Result { try _value(for: outcome) }
    }

    /// The value for a finished operation's outcome, or the error it ended with.
    private func _value(for outcome: Outcome) throws -> Success {
        switch outcome {
        case .succeeded:
            guard let value = storage.withLock({ $0.value }) as? Success else {
                throw MissingValueError(operation: _misuseName)
            }
            return value
        case .failed(let error):
            throw error
        case .cancelled(let reason):
            throw reason ?? CancellationError()
        }
    }

    /// The value, once the operation has finished: suspends until then.
    ///
    /// Throws the error the operation failed with; when it was cancelled, the reason given
    /// to ``Operation/cancel(with:)`` (for a chain, the upstream's error), or
    /// `CancellationError` for a plain ``Operation/cancel()``.
    ///
    /// Cancelling the awaiting task throws `CancellationError` at once and does **not**
    /// cancel the operation (others may await it); ``OperationQueue/perform(_:)-(ValueOperation<Success>)`` does.
    ///
    /// When the operation cannot make progress (see ``OperationDiagnostic/stallReportDelay``),
    /// says so once, through ``OperationDiagnostic/handler``, and goes on waiting.
    public var value: Success {
        get async throws {
            guard let outcome = await _outcome() else { throw CancellationError() }
            return try _value(for: outcome)
        }
    }

    /// Sets ``Operation/isCancelled``. A stage made by `then` or `combine` lets go of its
    /// inputs: those nobody else wants any more are cancelled too (see ``ValueOperation``).
    open override func cancel() {
        // Read before the cancellation takes effect: once cancelled, its queue may run it
        // through `start()` to its finish, which lets go of the inputs, at once.
        let (inputs, wasCancelled) = storage.withLock { ($0.inputs, isCancelled) }
        super.cancel()
        if !inputs.isEmpty, !wasCancelled { UpstreamCancellation.stageCancelled(self, inputs: inputs) }
    }

    /// The value of a finished operation that succeeded, for the operations that take it
    /// as input (they start only after it finished).
    final func _inputValue() throws -> Success {
        guard let outcome else {
            preconditionFailure("Operations: \(_misuseName) is read as an input before it finished")
        }
        return try _value(for: outcome)
    }
}

/// Thrown by ``ValueOperation/value`` for an operation that finished without producing a
/// value (a subclass that overrides `start()` and finishes without calling `super`).
public struct MissingValueError: Error, CustomStringConvertible {
    /// The operation that finished without a value.
    public var operation: String

    public var description: String { "\(operation) finished without producing a value" }
}

/// A ``ValueOperation`` that runs a closure on the calling thread: the typed counterpart of
/// ``BlockOperation``, for CPU work in a chain.
///
/// - Note: `@unchecked Sendable`: the closure is in `storage`, under its lock.
open class ValueBlockOperation<Success: Sendable>: ValueOperation<Success>, @unchecked Sendable {
    /// Creates an operation whose value is what `body` returns.
    public init(_ body: @escaping @Sendable () throws -> Success) {
        super.init(work: .synchronous(body), inputs: [])
    }

    init(inputs: [Operation], body: @escaping @Sendable () throws -> Success) {
        super.init(work: .synchronous(body), inputs: inputs)
    }

    open override func execute() throws -> Success {
        let work = storage.withLock { storage in
            defer { storage.work = .none }
            return storage.work
        }
        guard case .synchronous(let body) = work else {
            preconditionFailure("Operations: the body of \(_misuseName) ran twice")
        }
        // The closure returns a `Success`, boxed.
        return try body() as! Success
    }
}
