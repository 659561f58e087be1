// Waiting as an operation: finishes after an interval or at a deadline, blocking no thread.

import Operations

/// An operation that finishes after an interval, or at a deadline, measured on a `Clock`;
/// no thread is blocked while it waits (its body is a suspended task).
///
/// ```swift
/// let pause = DelayOperation(for: .seconds(2))
/// retryUpload.addDependency(pause)
/// ```
///
/// The interval starts when the operation starts, not when it is made. Cancelling it ends
/// the wait at once (the outcome is cancelled). Pass a manual clock in tests
/// (`OperationsTestSupport`'s `ManualClock`).
///
/// - Note: `@unchecked Sendable`: `wait` never changes after `init`.
open class DelayOperation: TaskOperation<Void>, @unchecked Sendable {
    private let wait: @Sendable () async throws -> Void

    /// Waits `interval` on `clock` once started.
    public init<C: Clock>(for interval: C.Duration, clock: C) {
        wait = { try await clock.sleep(until: clock.now.advanced(by: interval), tolerance: nil) }
        super.init()
        // Waits on the composition layer's lanes, not on the cooperative pool.
        _preferExecutor(CompositionExecutor.shared)
    }

    /// Waits `interval` on the continuous clock once started.
    public convenience init(for interval: Duration) {
        self.init(for: interval, clock: ContinuousClock())
    }

    /// Waits `interval` seconds on the continuous clock once started.
    public convenience init(interval: TimeInterval) {
        self.init(for: .seconds(interval), clock: ContinuousClock())
    }

    /// Waits until `deadline` on `clock` (finishes at once when it has passed by the time
    /// the operation starts).
    public init<C: Clock>(until deadline: C.Instant, clock: C) {
        wait = { try await clock.sleep(until: deadline, tolerance: nil) }
        super.init()
        // Waits on the composition layer's lanes, not on the cooperative pool.
        _preferExecutor(CompositionExecutor.shared)
    }

    /// Waits until `date` (wall-clock time, read when the operation starts).
    public convenience init(until date: Date) {
        self.init(until: date, clock: ContinuousClock())
    }

    /// Waits until `date`, read when the operation starts, measuring the rest on `clock`.
    public init<C: Clock>(until date: Date, clock: C) where C.Duration == Duration {
        wait = {
            let remaining = date.timeIntervalSinceNow
            guard remaining > 0 else { return }
            try await clock.sleep(until: clock.now.advanced(by: .seconds(remaining)), tolerance: nil)
        }
        super.init()
        // Waits on the composition layer's lanes, not on the cooperative pool.
        _preferExecutor(CompositionExecutor.shared)
    }

    /// Waits; a cancellation ends the wait.
    open override func run() async throws {
        try await wait()
    }
}
