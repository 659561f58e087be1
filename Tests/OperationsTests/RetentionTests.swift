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
        let release = Gate()
        let finished = Gate()
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

    @Test("releasing a long dependency chain does not overflow the stack")
    func longChain() {
        var last = Operation()
        for _ in 0..<1_000_000 {
            let next = Operation()
            next.addDependency(last)
            last = next
        }
        weak let weakLast = last
        last = Operation()
        #expect(weakLast == nil)
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
