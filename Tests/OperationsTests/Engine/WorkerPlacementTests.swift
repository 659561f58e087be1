import Dispatch
import Operations
import OperationsTestSupport
import Testing

/// Where a queue's workers run: an operation whose `start()` launches work and returns is
/// started from Dispatch's shared pool (the thread that finished the previous one takes
/// the start, no thread woken or made); one that may block in `start()` runs on a lane, a
/// thread of its own.
@Suite("Worker placement: asynchronous starts on the shared pool, blocking work on lanes")
struct WorkerPlacementTests {
    @Test("asynchronous operations finished on other threads are started from the shared pool")
    func asynchronousStartsOnSharedPool() {
        let queue = OperationQueue()
        queue._keepUnbegunSharedWorkersForTests()
        queue.maxConcurrentOperationCount = 1
        let placements = Shared<[Bool?]>([])
        let operations = (0..<8).map { _ in
            DeferredOperation { operation in
                placements.update { $0.append(OperationQueue._workerIsOnSharedPool) }
                onNewThread { operation.finish() }
            }
        }
        queue.addOperations(operations, waitUntilFinished: true)
        #expect(placements().count == 8)
        #expect(placements().allSatisfy { $0 == true }, "started on: \(placements())")
    }

    @Test("an operation that may block in start() runs on a lane, also right after an asynchronous one")
    func blockingWorkRunsOnLane() {
        let queue = OperationQueue()
        queue._keepUnbegunSharedWorkersForTests()
        queue.maxConcurrentOperationCount = 1
        let placements = Shared<[String]>([])
        let first = DeferredOperation { operation in
            placements.append("async \(String(describing: OperationQueue._workerIsOnSharedPool))")
            onNewThread { operation.finish() }
        }
        let second = BlockOperation {
            placements.append("block \(String(describing: OperationQueue._workerIsOnSharedPool))")
        }
        let third = DeferredOperation { operation in
            placements.append("async \(String(describing: OperationQueue._workerIsOnSharedPool))")
            onNewThread { operation.finish() }
        }
        queue.addOperations([first, second, third], waitUntilFinished: true)
        // The third follows the block on its lane's worker (a lane may start anything).
        #expect(placements() == ["async Optional(true)", "block Optional(false)", "async Optional(false)"])
    }

    @Test("a synchronous subclass that says nothing of isAsynchronous runs on a lane")
    func synchronousSubclassRunsOnLane() {
        final class Synchronous: Operation, @unchecked Sendable {
            let placement = Shared<Bool?>(nil)
            override func main() { placement.update { $0 = OperationQueue._workerIsOnSharedPool } }
        }
        let queue = OperationQueue()
        let operation = Synchronous()
        queue.addOperations([operation], waitUntilFinished: true)
        #expect(operation.placement() == false)
    }

    @Test("blocking operations behind one that starts promptly all run at once, up to the queue's limit")
    func blockingOperationsOverlapBehindAsynchronousOne() {
        let queue = OperationQueue()
        let count = 6
        queue.maxConcurrentOperationCount = count
        let everyone = Rendezvous(count: count)
        let met = Shared(0)
        let brief = DeferredOperation { $0.finish() }
        let blocking = (0..<count).map { _ in
            BlockOperation { if everyone.arriveAndWait() { met.increment() } }
        }
        // Suspended, so that one wakeup sees the asynchronous operation first.
        queue.isSuspended = true
        queue.addOperations([brief] + blocking, waitUntilFinished: false)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(met() == count, "\(met()) of \(count) were running at once")
    }

    @Test("a worker the shared pool does not begin is replaced by a lane's worker, and touches nothing when it begins later")
    func workerTheSharedPoolDoesNotBeginIsReplaced() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        // A pool that never begins what is queued on it, until the end of the test.
        let stuckPool = DispatchQueue(label: "a pool that does not run", attributes: .concurrent)
        stuckPool.suspend()
        queue._useSharedPoolForTests(stuckPool)
        let placements = Shared<[String]>([])
        let ran = Shared(0)
        let first = DeferredOperation { operation in
            placements.append("async \(String(describing: OperationQueue._workerIsOnSharedPool))")
            onNewThread { operation.finish() }
        }
        let second = BlockOperation { ran.increment() }
        let done = BlockingSignal()
        second.completionBlock = { done.open() }
        queue.addOperations([first, second], waitUntilFinished: false)
        let progressed = done.wait()
        #expect(progressed, "the queue waited for a pool that does not begin its worker")
        guard progressed else {
            stuckPool.resume()
            return
        }
        queue.waitUntilAllOperationsAreFinished()
        #expect(placements() == ["async Optional(false)"])
        // The replaced worker begins now, and must leave the queue's slots alone.
        stuckPool.resume()
        stuckPool.sync(flags: .barrier) {}
        queue._useSharedPoolForTests(nil)
        let later = (0..<4).map { _ in DeferredOperation { operation in onNewThread { operation.finish() } } }
        queue.addOperations(later + [BlockOperation { ran.increment() }], waitUntilFinished: true)
        #expect(ran() == 2)
        #expect(queue.operationCount == 0)
        #expect(later.allSatisfy { $0.isFinished })
    }

    @Test("an asynchronous operation whose start() blocks does not hold back the next ones")
    func blockingStartOnSharedPoolDoesNotHoldTheQueue() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        let entered = BlockingSignal(), secondStarted = BlockingSignal()
        let sawSecond = Shared<Bool?>(nil)
        // Says isAsynchronous, yet blocks in start() until the next operation has started.
        let first = DeferredOperation { operation in
            entered.open()
            sawSecond.update { $0 = secondStarted.wait() }
            operation.finish()
        }
        queue.addOperation(first)
        #expect(entered.wait())
        // Added while the worker that started the first is inside its start().
        let second = DeferredOperation { operation in
            secondStarted.open()
            onNewThread { operation.finish() }
        }
        queue.addOperation(second)
        queue.waitUntilAllOperationsAreFinished()
        #expect(sawSecond() == true, "the second waited for the first's start() to return")
    }

    @Test("asynchronous starts that take a while overlap up to the limit when added one at a time")
    func slowAsynchronousStartsOverlap() {
        let queue = OperationQueue()
        // Without the tick's check, so that only the rule that a worker inside a start() is
        // not counted on lets the others start.
        queue._keepUnbegunSharedWorkersForTests()
        let count = 3
        queue.maxConcurrentOperationCount = count
        let everyone = Rendezvous(count: count)
        let met = Shared(0)
        let firstEntered = BlockingSignal()
        let operations = (0..<count).map { index in
            DeferredOperation { operation in
                if index == 0 { firstEntered.open() }
                // Each start() stays until all of them are inside theirs.
                if everyone.arriveAndWait() { met.increment() }
                operation.finish()
            }
        }
        queue.addOperation(operations[0])
        #expect(firstEntered.wait())
        for operation in operations.dropFirst() { queue.addOperation(operation) }
        queue.waitUntilAllOperationsAreFinished()
        #expect(met() == count, "\(met()) of \(count) start()s ran at once")
    }
}

