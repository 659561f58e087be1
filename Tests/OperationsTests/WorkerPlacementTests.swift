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
        queue.maxConcurrentOperationCount = 2
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
}
