import Synchronization

/// Points where a test stops a queue's worker or watchdog to force an interleaving
/// (`package`: the package's tests only). Unset, each costs one relaxed load.
package enum WorkerPausePoints {
    /// A worker returned from an operation and is about to take its queue's lock for the
    /// next one.
    package static let betweenOperations = PausePoint<Void>()
    /// The watchdog decided for a queue; the value is the number of workers it starts.
    package static let watchdogDecided = PausePoint<Int>()
}

/// One pause point: the action a test set, told the queue and a value. A value kept in a
/// global (not a class): passing it retains nothing.
package struct PausePoint<Value>: ~Copyable, Sendable {
    private let isSet = Atomic(false)
    private let action = Locked<(@Sendable (OperationQueue, Value) -> Void)?>(nil)

    init() {}

    /// Sets (or, with nil, clears) what runs when a thread passes the point.
    package borrowing func set(_ action: (@Sendable (OperationQueue, Value) -> Void)?) {
        self.action.withLock { $0 = action }
        isSet.store(action != nil, ordering: .releasing)
    }

    /// Runs the action set, if any, on the calling thread (no lock held).
    @inline(__always)
    borrowing func pass(_ queue: OperationQueue, _ value: Value) {
        guard isSet.load(ordering: .relaxed) else { return }
        action.withLock { $0 }?(queue, value)
    }
}
