// Timeouts: cancel an operation with a `TimeoutError` when it runs too long.

@_spi(Engine) import Operations

/// The reason an operation is cancelled with when its timeout expires
/// (``Operations/OperationExtensions/timeout(after:clock:)``).
public struct TimeoutError: Error, CustomStringConvertible {
    /// The operation that timed out.
    public var operation: String
    /// The timeout it was given.
    public var timeout: String

    public var description: String { "\(operation) timed out after \(timeout)" }
}

extension OperationExtensions where Self: Operation {
    /// Gives the operation a timeout: if it has not finished `duration` after it **started**
    /// (measured on `clock`), it is cancelled with a ``TimeoutError`` as the reason.
    ///
    /// The timer starts when `start()` begins the work (time spent waiting in a queue does
    /// not count), is cancelled when the operation finishes, and holds only a weak
    /// reference to it. Cancelling is all a timeout does: work that never checks
    /// `isCancelled` runs on (a ``GroupOperation`` passes the cancellation to its children,
    /// so a group's timeout bounds them all). Several timeouts may be given; the first to
    /// expire wins. A zero or negative `duration` has expired when the work starts: the
    /// operation is cancelled then (ProcedureKit ignores such a timeout; a deadline computed
    /// as "what is left" that has run out should stop the work, not lift the limit).
    /// - Note: "Started" is the base `start()` beginning the work (subclasses that override
    ///   `start()` call `super.start()`, as `TaskOperation` does); a classic asynchronous
    ///   subclass that never calls `super.start()` never starts the timer.
    public func timeout<C: Clock>(after duration: C.Duration, clock: C) {
        let timer = TimeoutTimer()
        let description = "\(duration)"
        _onStart { [weak self] in
            guard let self else { return }
            let name = _misuseName
            // On the composition lanes: a timer must fire even when the cooperative pool is blocked.
            let task = Task(executorPreference: CompositionExecutor.shared) { [weak self] in
                do {
                    try await clock.sleep(until: clock.now.advanced(by: duration), tolerance: nil)
                } catch {
                    return
                }
                self?.cancel(with: TimeoutError(operation: name, timeout: description))
            }
            timer.arm(task)
        }
        _onFinish(for: .bookkeeping) { _ in timer.disarm() }
    }

    /// Gives the operation a timeout on the continuous clock (see
    /// ``timeout(after:clock:)``).
    public func timeout(after duration: Duration) {
        timeout(after: duration, clock: ContinuousClock())
    }
}

/// The task of one timeout, cancelled when its operation finishes.
final class TimeoutTimer: Sendable {
    private enum State {
        case idle
        case armed(Task<Void, Never>)
        case disarmed
    }

    private let state = Locked(State.idle)

    func arm(_ task: Task<Void, Never>) {
        let disarmed = state.withLock { state -> Bool in
            if case .disarmed = state { return true }
            state = .armed(task)
            return false
        }
        if disarmed { task.cancel() }
    }

    func disarm() {
        let task = state.withLock { state -> Task<Void, Never>? in
            defer { state = .disarmed }
            if case .armed(let task) = state { return task }
            return nil
        }
        task?.cancel()
    }
}
