import Operations
import OperationsComposition
import Testing
import TestTraits

/// A tutorial asynchronous operation whose `deinit` runs `body` (user code
/// that touches a queue or another operation) and then opens `died`.
private final class DeinitProbeOperation: TutorialAsyncOperation, @unchecked Sendable {
    let died: BlockingSignal
    let body: @Sendable () -> Void

    init(died: BlockingSignal, _ body: @escaping @Sendable () -> Void) {
        self.died = died
        self.body = body
    }

    override func main() { finish() }

    deinit {
        body()
        died.open()
    }
}

/// User code the engine calls (a `deinit`, an event handler) runs with none of the
/// library's locks held; each test forces the call at the point where a lock could be held.
@Suite("User code runs outside the library's locks")
struct UserCodeOutsideLocksTests {
    /// An error whose `deinit` reads its operation's state (takes the operation's lock).
    final class LockTouchingError: Error, @unchecked Sendable {
        let operation: Operation
        init(_ operation: Operation) { self.operation = operation }
        deinit { _ = operation.name }
    }

    /// A subclass whose `cancel()` does not call `super`: the reason `cancel(with:)` offered
    /// stays pending until the finish gives it up.
    final class OwnCancelOperation: Operation, @unchecked Sendable {
        override func cancel() {}
    }

    /// Forced: the offered reason is the error's only owner when `start()` finishes the
    /// operation; the finish must drop it after the operation's lock, or the error's
    /// `deinit` traps ("Recursive call to lock Mutex").
    @Test("an error the finish gives up is released after the lock", .oneExitTestAtATime)
    func errorReleasedOutsideLock() async {
        await #expect(processExitsWith: .success) {
            let operation = OwnCancelOperation()
            operation.cancel(with: LockTouchingError(operation))
            operation.start()
        }
    }

    /// Forced: two queues' handlers, each delivering its own queue's events (a rendezvous
    /// makes both be inside a handler at once), each cancel an operation of the other
    /// queue. Recording an event must not wait for the other queue's deliverer, or each
    /// waits for the other for good.
    @Test("handlers of two queues that act on each other's operations do not deadlock", .oneExitTestAtATime)
    func crossQueueHandlers() async {
        await #expect(processExitsWith: .success) {
            let first = OperationQueue(), second = OperationQueue()
            first.isSuspended = true
            second.isSuspended = true
            let x1 = BlockOperation {}, x2 = BlockOperation {}
            first.addOperation(x1)
            second.addOperation(x2)
            let firstInside = BlockingSignal(), secondInside = BlockingSignal()
            let done = BlockingSignal()
            let s1 = first.addEventHandler { event in
                guard case .enqueued = event.kind, event.operation !== x1 else { return }
                firstInside.open()
                secondInside.wait()
                x2.cancel()
            }
            let s2 = second.addEventHandler { event in
                guard case .enqueued = event.kind, event.operation !== x2 else { return }
                secondInside.open()
                firstInside.wait()
                x1.cancel()
            }
            let group = DispatchGroup()
            onNewThread(group: group) { first.addOperation {} }
            onNewThread(group: group) { second.addOperation {} }
            group.notify(queue: .global()) { done.open() }
            if !done.wait() { fatalError("deadlock: the two handlers wait for each other") }
            withExtendedLifetime((s1, s2)) {}
            // Let the queues empty before the process exits: a suspended queue keeps itself
            // and its operations alive, which the leak checker (ASan runs) reports.
            first.isSuspended = false
            second.isSuspended = false
            first.waitUntilAllOperationsAreFinished()
            second.waitUntilAllOperationsAreFinished()
        }
    }

    /// An operation the queue drops runs its `deinit` outside the queue's lock: a `deinit`
    /// that reads `queue.operationCount` must not trap ("Recursive call to lock Mutex").
    /// Forced: the queue is suspended, so the ready operation waits in the ready list; it
    /// is then finished by hand (the tutorial's `finish()`), which takes it out of the
    /// queue's members, and the test drops its reference: the ready list holds the last
    /// one. Resuming makes a worker pop it, refuse it (finished), and drop it, and its
    /// `deinit` reads `queue.operationCount`.
    @Test("an operation released by the queue runs its deinit outside the queue's lock", .oneExitTestAtATime)
    func deinitOutsideQueueLock() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let queue = suspendedSerialQueue()
            let died = BlockingSignal()
            do {
                let operation = DeinitProbeOperation(died: died) { _ = queue.operationCount }
                queue.addOperation(operation)
                operation.finish()
            }
            let next = BlockingSignal()
            queue.addOperation { next.open() }
            queue.isSuspended = false
            guard next.wait(), died.wait() else { fatalError("the queue did not go on, or the operation was not released") }
            queue.waitUntilAllOperationsAreFinished()
        }.expectQuietChild()
    }

    /// A barrier drops the operations it waited for outside its own lock: a `deinit` of
    /// such an operation that reads the barrier's properties must not trap. Forced: on a
    /// suspended serial queue, `member` is added, then a barrier; the barrier is found as
    /// the last of `queue.operations` and handed to the member, and the test drops its
    /// reference to the member. After resuming, the member finishes and leaves the queue,
    /// so the barrier's hidden dependency is its last reference; the barrier completes and
    /// drops it. The member's `deinit` reads the barrier's `name` and `dependencies`.
    @Test("a barrier releases the operations it waited for outside its own lock", .oneExitTestAtATime)
    func barrierReleasesMembersOutsideItsLock() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let queue = suspendedSerialQueue()
            let died = BlockingSignal()
            let barrierBox = WeakOperationBox()
            do {
                let member = DeinitProbeOperation(died: died) {
                    guard let barrier = barrierBox.operation else { return }
                    _ = barrier.name
                    _ = barrier.dependencies
                }
                queue.addOperation(member)
            }
            queue.addBarrierBlock {}
            guard let barrier = queue.operations.last else { fatalError("no barrier in the queue") }
            barrierBox.operation = barrier
            queue.isSuspended = false
            guard died.wait() else { fatalError("the member was never released") }
            queue.waitUntilAllOperationsAreFinished()
            _ = barrier
        }.expectQuietChild()
    }
}

/// A handler added while the last one is being removed keeps hearing events.
@Suite("Event handlers added while the last one goes away")
struct EventHandlerRaceTests {
    /// Blocks in its `deinit` until told to go on: user code in the middle of a removal.
    final class SlowToDie: Sendable {
        let dying = BlockingSignal(), proceed = BlockingSignal()
        deinit {
            dying.open()
            proceed.wait()
        }
    }

    /// Forced: the removed handler's capture blocks in its `deinit` (which runs when the
    /// removal drops the handler); meanwhile a new handler is added. The removal must not
    /// then store "nobody listens" over the new handler's "listening", which would leave
    /// the new handler hearing nothing, ever (in release builds the drop happens early, so
    /// the window is wide there).
    @Test("a handler added during the removal of the last one hears every event")
    func addedDuringRemoval() {
        let queue = OperationQueue()
        var slow: SlowToDie? = SlowToDie()
        let dying = slow!.dying, proceed = slow!.proceed
        let first = queue.addEventHandler { [slow] _ in _ = slow }
        slow = nil
        let removed = BlockingSignal()
        onNewThread {
            first.cancel()
            removed.open()
        }
        #expect(dying.wait())
        let heard = Shared(0)
        let second = queue.addEventHandler { _ in heard.increment() }
        proceed.open()
        #expect(removed.wait())
        for _ in 0..<5 { queue.addOperation {} }
        queue.waitUntilAllOperationsAreFinished()
        #expect(heard() == 15, "enqueued, started and finished for 5 operations")
        _ = second
    }
}
