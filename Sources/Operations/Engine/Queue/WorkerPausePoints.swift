import Synchronization

/// Points where a test stops a queue's worker or watchdog to force an interleaving
/// (`package`: the package's tests only). Passed in debug builds only (unset, a point costs
/// a relaxed load there); release builds skip them.
extension OperationQueue {
    /// How many workers the queue allows now, and how many run (`package`: for tests that
    /// wait for the allowance to grow or fall back).
    package final var _workerAllowanceAndCount: (allowance: Int, running: Int) {
        _withQueueLock { ($0.pool.grownLimit, $0.pool.count) }
    }

    /// How many waits for the queue to become empty are waiting (`package`: for tests that
    /// must know a wait has begun).
    package final var _emptinessWaitCount: Int {
        _withQueueLock { $0.waits.count }
    }

    /// Queues this queue's worker for the shared pool on `queue` instead of Dispatch's pool
    /// (a test suspends it to play a pool that never begins the worker). For tests.
    package final func _useSharedPoolForTests(_ queue: DispatchQueue?) {
        _withQueueLock { $0.sharedPoolForTests = queue }
    }

    /// Stops replacing a worker the shared pool has not begun within a tick: on a loaded
    /// machine a tick can pass before the pool begins one, and a test that checks where
    /// operations start must see the pool's workers. For tests.
    package final func _keepUnbegunSharedWorkersForTests() {
        _withQueueLock { $0.pool.shared.turnChecksOff() }
    }
}

package enum WorkerPausePoints {
    /// Whether the engine passes the points (debug builds).
    package static var arePassed: Bool {
        #if DEBUG
        true
        #else
        false
        #endif
    }

    /// A worker returned from an operation and is about to take its queue's lock for the
    /// next one.
    package static let betweenOperations = PausePoint<Void>()
    /// The watchdog decided for a queue; the value is the number of workers it starts.
    package static let watchdogDecided = PausePoint<Int>()
    /// A worker of a queue ended; the value is the number of its workers still running.
    package static let workerEnded = PausePoint<Int>()
    /// An operation its worker runs found nobody watching its finish, and is about to
    /// finish quietly (`OperationCore.finishQuietly()`); the value is the operation.
    package static let quietFinishChosen = PausePoint<Operation>()
    /// A worker set the base state of the operation it runs to finished (its `isFinished`
    /// may read true) and is about to announce it; the value is the operation.
    package static let baseFinishMade = PausePoint<Operation>()
}

/// One pause point: the actions tests added (tests run in parallel, each filtering for its
/// own queue), each told the queue and a value. A value kept in a global, not a class:
/// passing it retains nothing.
package struct PausePoint<Value>: ~Copyable, Sendable {
    package typealias Action = @Sendable (OperationQueue, Value) -> Void

    private let isSet = Atomic(false)
    private let actions = Locked<(next: UInt64, list: [(id: UInt64, action: Action)])>((1, []))

    init() {}

    /// Adds an action that runs whenever a thread passes the point; returns its identifier.
    package borrowing func add(_ action: @escaping Action) -> UInt64 {
        actions.withLock { actions in
            defer { actions.next += 1 }
            actions.list.append((actions.next, action))
            isSet.store(true, ordering: .releasing)
            return actions.next
        }
    }

    /// Removes the action `id`.
    package borrowing func remove(_ id: UInt64) {
        let removed = actions.withLock { actions in
            let removed = actions.list.filter { $0.id == id }
            actions.list.removeAll { $0.id == id }
            isSet.store(!actions.list.isEmpty, ordering: .releasing)
            return removed
        }
        // The actions' captures are released here, after the lock.
        withExtendedLifetime(removed) {}
    }

    /// Whether any action was added (a caller may skip working out the value otherwise).
    package var hasActions: Bool { isSet.load(ordering: .relaxed) }

    /// Runs the actions added, if any, on the calling thread (no lock held).
    @inline(__always)
    borrowing func pass(_ queue: OperationQueue, _ value: Value) {
        guard isSet.load(ordering: .relaxed) else { return }
        for (_, action) in actions.withLock({ $0.list }) { action(queue, value) }
    }
}
