import Operations
import OperationsComposition
import Testing
import TestTraits

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
            let firstInside = Gate(), secondInside = Gate()
            let done = Gate()
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
}

/// A handler added while the last one is being removed keeps hearing events.
@Suite("Event handlers added while the last one goes away")
struct EventHandlerRaceTests {
    /// Blocks in its `deinit` until told to go on: user code in the middle of a removal.
    final class SlowToDie: Sendable {
        let dying = Gate(), proceed = Gate()
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
        let removed = Gate()
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
