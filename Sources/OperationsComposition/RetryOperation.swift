// Retrying: a fresh operation per attempt, with waits between attempts.

@_spi(Engine) import Operations

/// Runs a fresh operation per attempt, made by a factory (operations are single-shot),
/// until one succeeds, the error is not worth retrying, or the attempts run out.
///
/// ```swift
/// let download = RetryOperation(maximumAttempts: 4, strategy: .exponential(initial: .seconds(1), maximum: .seconds(30))) { _ in
///     AsyncBlockOperation { try await fetch(url) }
/// }
/// queue.addOperation(download)
/// let data = try await download.value
/// ```
///
/// - The outcome and value are the last attempt's: its value when it succeeded, its error
///   when it failed (or, when it was cancelled on its own — say, by its timeout — a
///   cancellation with its reason).
/// - `shouldRetry` looks at an attempt's error (a cancelled attempt's reason) and says
///   whether another attempt may follow.
/// - The wait between attempts is measured on `clock`, blocking no thread.
/// - Cancelling the retry cancels the running attempt with the same reason and stops the
///   retries; a wait in progress ends at once.
/// - Attempts run on the retry's own queue, at the quality of service the retry runs at (its
///   own, never below its queue's; its queue's when it has none); the retry keeps its queue
///   slot meanwhile.
///
/// - Note: `@unchecked Sendable`: the running attempt is in a `Locked`; the rest never
///   changes after `init`.
open class RetryOperation<Success: Sendable>: TaskOperation<Success>, @unchecked Sendable {
    /// The most attempts made.
    public let maximumAttempts: Int
    /// The wait between attempts.
    public let strategy: RetryStrategy

    private let makeAttempt: @Sendable (Int) -> (Operation, @Sendable () throws -> Success)
    private let shouldRetry: @Sendable (any Error) -> Bool
    /// After a success: whether to run again (repeat, polling); nil for a plain retry.
    private let shouldRepeat: (@Sendable (Success) -> Bool)?
    private let sleep: @Sendable (Duration) async throws -> Void
    private let attempts = Locked<(count: Int, current: Operation?)>((0, nil))
    /// The queue the attempts run on (`package`: a recorder may watch it).
    package let attemptQueue = OwnedOperationQueue()

    init<C: Clock>(
        maximumAttempts: Int, strategy: RetryStrategy, clock: C,
        shouldRetry: @escaping @Sendable (any Error) -> Bool,
        shouldRepeat: (@Sendable (Success) -> Bool)?,
        makeAttempt: @escaping @Sendable (Int) -> (Operation, @Sendable () throws -> Success)
    ) where C.Duration == Duration {
        self.maximumAttempts = maximumAttempts
        self.strategy = strategy
        self.makeAttempt = makeAttempt
        self.shouldRetry = shouldRetry
        self.shouldRepeat = shouldRepeat
        sleep = { try await clock.sleep(until: clock.now.advanced(by: $0), tolerance: nil) }
        super.init()
        // Waits and decides on the composition layer's lanes, not on the cooperative pool.
        _preferExecutor(CompositionExecutor.shared)
        if maximumAttempts < 1 {
            Misuse.fail("\(_misuseName) was given at most \(maximumAttempts) attempts (maximumAttempts, or maximumRuns of a RepeatOperation); it must be at least 1")
        }
        attemptQueue.name = "RetryOperation attempts"
        attemptQueue.owner = self
    }

    /// Retries typed attempts: `makeAttempt` is given the attempt's number (1 for the
    /// first) and returns a fresh operation in no queue.
    public convenience init<C: Clock>(
        maximumAttempts: Int = 3, strategy: RetryStrategy = .immediate, clock: C,
        shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in true },
        makeAttempt: @escaping @Sendable (_ attempt: Int) -> ValueOperation<Success>
    ) where C.Duration == Duration {
        self.init(
            maximumAttempts: maximumAttempts, strategy: strategy, clock: clock, shouldRetry: shouldRetry,
            shouldRepeat: nil
        ) { number in
            let attempt = makeAttempt(number)
            return (attempt, { try attempt.result!.get() })
        }
    }

    /// Retries typed attempts, waiting on the continuous clock.
    public convenience init(
        maximumAttempts: Int = 3, strategy: RetryStrategy = .immediate,
        shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in true },
        makeAttempt: @escaping @Sendable (_ attempt: Int) -> ValueOperation<Success>
    ) {
        self.init(
            maximumAttempts: maximumAttempts, strategy: strategy, clock: ContinuousClock(),
            shouldRetry: shouldRetry, makeAttempt: makeAttempt)
    }

    /// The retry loop waits on the composition layer's lanes, not on the cooperative pool.

    /// The attempt running now, if any, for the wait graph.
    final var _currentAttempt: Operation? { attempts.withLock { $0.current } }

    /// How many attempts were made so far.
    public var attemptCount: Int { attempts.withLock { $0.count } }

    /// Runs attempts until one decides; see the type's description. Finishes only once
    /// everything in its attempts' queue has (an attempt's condition may have contributed
    /// an operation there): nothing it started outlives it.
    open override func run() async throws -> Success {
        do {
            let value = try await _runAttempts()
            await _attemptQueueFinished()
            return value
        } catch {
            await _attemptQueueFinished()
            throw error
        }
    }

    /// Waits, whatever the task's cancellation, until the attempts' queue is empty.
    private func _attemptQueueFinished() async {
        for operation in attemptQueue.operations { _ = await operation._finishedOutcome(for: self) }
    }

    private func _runAttempts() async throws -> Success {
        if !attemptQueue._isQualityOfServiceSet {
            attemptQueue.qualityOfService = _runQuality
        }
        var number = 0
        while true {
            number += 1
            let (attempt, value) = makeAttempt(number)
            let cancelled = attempts.withLock { state -> Bool in
                guard !isCancelled else { return true }
                state.count = number
                state.current = attempt
                return false
            }
            if cancelled { throw CancellationError() }
            // Raised with the retry: an attempt made after an escalation starts raised too.
            if let raised = _escalatedQuality { attempt._escalate(to: raised) }
            attemptQueue.addOperation(attempt)
            let outcome = await attempt._finishedOutcome(for: self)
            attempts.withLock { $0.current = nil }
            if isCancelled { throw CancellationError() }
            let wait: Bool
            switch outcome {
            case .succeeded:
                let result = try value()
                guard let shouldRepeat, number < maximumAttempts, shouldRepeat(result) else { return result }
                wait = true
            case .failed(let error):
                guard number < maximumAttempts, shouldRetry(error) else { throw error }
                wait = true
            case .cancelled(let reason):
                guard number < maximumAttempts, shouldRetry(reason ?? CancellationError()) else {
                    // The last attempt was cancelled on its own: so is the retry, with its reason.
                    if let reason { cancel(with: reason) } else { cancel() }
                    throw CancellationError()
                }
                wait = true
            }
            if wait {
                let delay = strategy.delay(afterAttempt: number)
                if delay > .zero { try await sleep(delay) }
            }
        }
    }

    /// Cancels the retry and its running attempt, with the same reason.
    open override func cancel() {
        super.cancel()
        guard isCancelled else { return }
        let reason = _cancellationReason
        // The running attempt, and anything its conditions contributed to the queue.
        let current = attempts.withLock { $0.current }
        Operation._cancelNotRunningFirst([current].compactMap { $0 } + attemptQueue.operations, reason: reason)
    }
}

extension RetryOperation where Success == Void {
    /// Retries untyped attempts (any `Operation`): a failed or cancelled attempt is
    /// retried as a typed one would be.
    public convenience init<C: Clock>(
        maximumAttempts: Int = 3, strategy: RetryStrategy = .immediate, clock: C,
        shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in true },
        makeOperation: @escaping @Sendable (_ attempt: Int) -> Operation
    ) where C.Duration == Duration {
        self.init(
            maximumAttempts: maximumAttempts, strategy: strategy, clock: clock, shouldRetry: shouldRetry,
            shouldRepeat: nil
        ) { number in (makeOperation(number), {}) }
    }
}

/// Runs a fresh operation again after each success, waiting between runs, until `until`
/// says its value is final or the runs run out: polling. A failed run ends it with that
/// error (unless `shouldRetry` says to go on). The value is the last run's.
///
/// ```swift
/// let ready = RepeatOperation(maximumRuns: 30, strategy: .constant(.seconds(2)), until: { $0.isDone }) { _ in
///     AsyncBlockOperation { try await fetchStatus(job) }
/// }
/// ```
///
/// - Note: `@unchecked Sendable`: see ``RetryOperation``.
open class RepeatOperation<Success: Sendable>: RetryOperation<Success>, @unchecked Sendable {
    /// Repeats on `clock`; `until` returns true for the value that ends the polling.
    public init<C: Clock>(
        maximumRuns: Int, strategy: RetryStrategy = .immediate, clock: C,
        shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in false },
        until isFinal: @escaping @Sendable (Success) -> Bool,
        makeRun: @escaping @Sendable (_ run: Int) -> ValueOperation<Success>
    ) where C.Duration == Duration {
        super.init(
            maximumAttempts: maximumRuns, strategy: strategy, clock: clock, shouldRetry: shouldRetry,
            shouldRepeat: { !isFinal($0) }
        ) { number in
            let run = makeRun(number)
            return (run, { try run.result!.get() })
        }
    }

    /// Repeats on the continuous clock.
    public convenience init(
        maximumRuns: Int, strategy: RetryStrategy = .immediate,
        shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in false },
        until isFinal: @escaping @Sendable (Success) -> Bool,
        makeRun: @escaping @Sendable (_ run: Int) -> ValueOperation<Success>
    ) {
        self.init(
            maximumRuns: maximumRuns, strategy: strategy, clock: ContinuousClock(), shouldRetry: shouldRetry,
            until: isFinal, makeRun: makeRun)
    }
}

extension Operation {
    /// Waits, for `waiter`, for the outcome without reacting to the waiting task's
    /// cancellation.
    final func _finishedOutcome(for waiter: Operation) async -> Outcome {
        let signal = AsyncSignal<Outcome>()
        _onFinish(for: .operation(WeakOperationReference(waiter))) { signal.resume(with: $0) }
        return await signal.value()
    }
}
