import Dispatch
import Operations
import OperationsComposition
import Testing

@Suite("Retention: what operations and queues keep alive, and when they release it")
struct RetentionTests {
    final class Token: Sendable {}

    @Test("finished operations are released, also when the completion block captures them")
    func finishedReleased() {
        weak var weakOperation: Operation?
        do {
            let queue = OperationQueue()
            let operation = BlockOperation {}
            operation.completionBlock = { _ = operation.isFinished }
            weakOperation = operation
            queue.addOperation(operation)
            queue.waitUntilAllOperationsAreFinished()
        }
        // The worker that ran it drops its reference just after waking the waiter.
        #expect(eventually { weakOperation == nil })
    }

    @Test("a queue with pending operations stays alive with no other reference, then is released")
    func queueKeptAlive() {
        weak var weakQueue: OperationQueue?
        let release = BlockingSignal()
        let finished = BlockingSignal()
        do {
            let queue = OperationQueue()
            weakQueue = queue
            let operation = BlockOperation { release.wait() }
            operation.completionBlock = { finished.open() }
            queue.addOperation(operation)
        }
        #expect(weakQueue != nil)
        release.open()
        #expect(finished.wait())
        #expect(eventually { weakQueue == nil })
    }

    @Test("a dependent nobody holds goes away before its dependency runs, and the dependency still runs and finishes")
    func abandonedDependentGoesAway() {
        let dependency = BlockOperation {}
        weak var weakDependent: Operation?
        do {
            let dependents = (0..<8).map { _ in BlockOperation {} }
            for dependent in dependents { dependent.addDependency(dependency) }
            weakDependent = dependents[3]
        }
        #expect(weakDependent == nil)
        let queue = OperationQueue()
        queue.addOperation(dependency)
        queue.waitUntilAllOperationsAreFinished()
        #expect(dependency.isFinished)
    }

    @Test("a dependent cancelled before its dependency finishes first and goes away; the dependency then runs and finishes")
    func cancelledDependentGoesAwayFirst() {
        let queue = OperationQueue()
        let dependency = BlockOperation {}
        weak var weakDependent: Operation?
        do {
            let dependent = BlockOperation {}
            dependent.addDependency(dependency)
            weakDependent = dependent
            // Cancelled, it is ready at once: it finishes while its dependency waits.
            dependent.cancel()
            queue.addOperation(dependent)
            dependent.waitUntilFinished()
        }
        #expect(eventually { weakDependent == nil })
        queue.addOperation(dependency)
        queue.waitUntilAllOperationsAreFinished()
        #expect(dependency.isFinished)
    }

    @Test("dependents released on other threads while their dependencies finish: each dependency finishes, each dependent goes away")
    func dependentsReleasedWhileDependenciesFinish() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        // Fewer under a sanitizer, where each round is many times slower (this test blocks a
        // thread of the test runner's pool while it runs).
        let rounds = isSanitized ? 200 : 2_000
        let released = DispatchGroup()
        let releasing = DispatchQueue(label: "releasing dependents")
        var dependencies: [Operation] = []
        for _ in 0..<rounds {
            let dependency = BlockOperation {}
            var dependents: [Operation]? = (0..<3).map { _ in BlockOperation {} }
            for dependent in dependents! { dependent.addDependency(dependency) }
            dependencies.append(dependency)
            queue.addOperation(dependency)
            // The last references go on another thread, racing the finish.
            let box = UncheckedBox(dependents.take()!)
            releasing.async(group: released) { box.value = [] }
        }
        #expect(released.wait(timeout: .now() + 60) == .success)
        queue.waitUntilAllOperationsAreFinished()
        #expect(dependencies.allSatisfy { $0.isFinished })
    }

    @Test("releasing a long dependency chain does not overflow the stack")
    func longChain() async {
        // On a thread of its own, and shorter under a sanitizer: there a loop of a million
        // creations and edges takes minutes, and its atomics, which every thread creating
        // operations shares, slow the whole suite down. A release one stack frame per link
        // would overflow a thread's stack long before 100,000 links.
        let links = isSanitized ? 100_000 : 1_000_000
        let released = await onOwnThread {
            var last = Operation()
            for _ in 0..<links {
                let next = Operation()
                next.addDependency(last)
                last = next
            }
            weak let weakLast = last
            last = Operation()
            return weakLast == nil
        }
        #expect(released)
    }

    /// A queue of two slots, one held by `holder` for the whole check. `waiting`, added
    /// between `older` and `newer` (all normal priority), is changed by `change` while they
    /// wait behind a second held operation; then that one is let go. `waiting` runs first (it
    /// was raised) and finishes; the same worker then starts `older`, which holds the queue
    /// busy, with `newer` still waiting. By `older`'s start the worker dropped its references
    /// to `waiting`: only a list of the queue could still hold it. True when `waiting` was
    /// released by then.
    static func releasedWhileQueueBusy(change: (Operation) -> Void) -> Bool {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        let releaseHolder = BlockingSignal(), releaseSecond = BlockingSignal(), releaseOlder = BlockingSignal()
        let holderStarted = BlockingSignal(), secondStarted = BlockingSignal(), olderStarted = BlockingSignal()
        queue.addOperation {
            holderStarted.open()
            releaseHolder.wait()
        }
        queue.addOperation {
            secondStarted.open()
            releaseSecond.wait()
        }
        #expect(holderStarted.wait() && secondStarted.wait())
        let older = BlockOperation {
            olderStarted.open()
            releaseOlder.wait()
        }
        weak var weakWaiting: Operation?
        let finished = BlockingSignal()
        do {
            let waiting = BlockOperation { finished.open() }
            weakWaiting = waiting
            queue.addOperations([older, waiting, BlockOperation {}], waitUntilFinished: false)
            change(waiting)
        }
        releaseSecond.open()
        #expect(finished.wait(), "the changed operation never ran")
        #expect(olderStarted.wait(), "the older operation never started")
        let released = weakWaiting == nil
        releaseOlder.open()
        releaseHolder.open()
        queue.waitUntilAllOperationsAreFinished()
        return released
    }

    @Test("a finished operation whose queuePriority was raised while it waited is released while its queue stays busy")
    func raisedPriorityReleased() {
        #expect(Self.releasedWhileQueueBusy { $0.queuePriority = .veryHigh })
    }

    @Test("a finished operation whose queuePriority changed twice while it waited is released while its queue stays busy")
    func priorityChangedTwiceReleased() {
        #expect(Self.releasedWhileQueueBusy { operation in
            operation.queuePriority = .high
            operation.queuePriority = .veryHigh
        })
    }

    @Test("a finished operation escalated by a dependent while it waited is released while its queue stays busy")
    func escalatedReleased() {
        #expect(Self.releasedWhileQueueBusy { operation in
            // A dependent of higher quality of service raises it; the dependent goes away.
            let urgent = BlockOperation {}
            urgent.qualityOfService = .userInteractive
            urgent.addDependency(operation)
        })
    }

    @Test("operations a pending barrier waits for are released as they finish, while the barrier still waits")
    func barrierReleasesFinishedMembers() {
        let queue = OperationQueue()
        let release = BlockingSignal()
        queue.addOperation { _ = release.wait() }
        weak var weakFirst: Operation?
        do {
            let first = BlockOperation {}
            weakFirst = first
            queue.addOperation(first)
            queue.addBarrierBlock {}
            first.waitUntilFinished()
        }
        // The barrier still waits for the held operation; nothing else holds "first".
        #expect(eventually { weakFirst == nil }, "the pending barrier keeps a finished operation alive")
        release.open()
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("closures the library holds are released when the operation finishes")
    func closuresReleased() {
        weak var weakToken: Token?
        let operation = BlockOperation()
        do {
            let token = Token()
            weakToken = token
            operation.addExecutionBlock { _ = token }
            operation.completionBlock = { _ = token }
        }
        let queue = OperationQueue()
        queue.addOperation(operation)
        queue.waitUntilAllOperationsAreFinished()
        #expect(weakToken == nil)
    }
}

/// Hands an array to another thread, which drops it (the array is only touched there).
private final class UncheckedBox: @unchecked Sendable {
    // Touched by one thread at a time: filled here, emptied by the thread it is handed to.
    var value: [Operation]
    init(_ value: [Operation]) { self.value = value }
}
