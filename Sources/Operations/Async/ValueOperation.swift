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
/// - Note: `@unchecked Sendable`: the result is guarded by its lock; `_inputs` never
///   changes after `init`.
open class ValueOperation<Success: Sendable>: Operation, @unchecked Sendable {
    private let storedResult = Locked<Result<Success, any Error>?>(nil)
    /// The operations whose values this one takes (`then`, `combine`).
    let _inputs: [Operation]

    public override init() {
        _inputs = []
        super.init()
    }

    init(inputs: [Operation]) {
        _inputs = inputs
        super.init()
        for input in inputs { addDependency(input) }
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
        if !isCancelled, let failure = _inputFailure() {
            if let reason = failure { cancel(with: reason) } else { cancel() }
        }
        super.start()
    }

    func _runWork() {
        _deliver(Result { try execute() })
    }

    /// Stores the result of the work and reports a failure to the engine.
    final func _deliver(_ result: Result<Success, any Error>) {
        if case .failure(let error) = result { _recordFailure(error) }
        // Replaced outside the lock (a value's deinit is user code).
        let previous = storedResult.withLock { stored in
            defer { stored = result }
            return stored
        }
        _ = previous
    }

    /// nil when every input succeeded (or there are none); otherwise the first failing
    /// input's error (`.some(nil)` for a cancellation without a reason).
    private func _inputFailure() -> (any Error)?? {
        for input in _inputs {
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
        switch outcome {
        case .succeeded:
            if let stored = storedResult.withLock({ $0 }), case .success = stored { return stored }
            return .failure(MissingValueError(operation: _misuseName))
        case .failed(let error):
            return .failure(error)
        case .cancelled(let reason):
            return .failure(reason ?? CancellationError())
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
    public var value: Success {
        get async throws {
            guard let outcome = await _outcome() else { throw CancellationError() }
            return try _result(for: outcome).get()
        }
    }

    /// The value of a finished operation that succeeded, for the operations that take it
    /// as input (they start only after it finished).
    final func _inputValue() throws -> Success {
        guard let result else {
            preconditionFailure("Operations: \(_misuseName) is read as an input before it finished")
        }
        return try result.get()
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
/// - Note: `@unchecked Sendable`: the closure is set in `init` and only taken under its lock.
open class ValueBlockOperation<Success: Sendable>: ValueOperation<Success>, @unchecked Sendable {
    private let body: Locked<(@Sendable () throws -> Success)?>

    /// Creates an operation whose value is what `body` returns.
    public init(_ body: @escaping @Sendable () throws -> Success) {
        self.body = Locked(body)
        super.init()
    }

    init(inputs: [Operation], body: @escaping @Sendable () throws -> Success) {
        self.body = Locked(body)
        super.init(inputs: inputs)
    }

    open override func execute() throws -> Success {
        guard let body = body.withLock({ $0.take() }) else {
            preconditionFailure("Operations: the body of \(_misuseName) ran twice")
        }
        return try body()
    }

    override func _releaseWork() {
        let body = body.withLock { $0.take() }
        _ = body
    }
}
