import Operations
import OperationsComposition
import Testing

@Suite("BlockOperation: concurrent blocks, completion block, release of blocks")
struct BlockOperationTests {
    @Test("execution blocks run concurrently and start() returns after all of them")
    func concurrentBlocks() {
        let rendezvous = Rendezvous(count: 6)
        let arrivals = Shared(0)
        let operation = BlockOperation {
            #expect(rendezvous.arriveAndWait())
            arrivals.increment()
        }
        for _ in 1..<6 {
            operation.addExecutionBlock {
                #expect(rendezvous.arriveAndWait())
                arrivals.increment()
            }
        }
        #expect(operation.executionBlocks.count == 6)
        operation.start()
        #expect(arrivals() == 6)
        #expect(operation.isFinished)
    }

    @Test("the completion block runs after the last execution block")
    func completionAfterBlocks() {
        let done = Shared(0)
        let completionSaw = Shared(-1)
        let completed = Gate()
        let operation = BlockOperation()
        for _ in 0..<4 {
            operation.addExecutionBlock { usleep(2_000); done.increment() }
        }
        operation.completionBlock = {
            completionSaw.update { $0 = done() }
            completed.open()
        }
        OperationQueue().addOperation(operation)
        #expect(completed.wait())
        #expect(completionSaw() == 4)
    }

    @Test("init() with no block finishes; init(block:) holds one block")
    func initializers() {
        let empty = BlockOperation()
        #expect(empty.executionBlocks.isEmpty)
        empty.start()
        #expect(empty.isFinished)
        let one = BlockOperation {}
        #expect(one.executionBlocks.count == 1)
    }

    @Test("blocks are released once they have run")
    func blocksReleased() {
        final class Token: Sendable {}
        weak var weakToken: Token?
        let operation: BlockOperation
        do {
            let token = Token()
            weakToken = token
            operation = BlockOperation { _ = token }
        }
        #expect(weakToken != nil)
        operation.start()
        #expect(weakToken == nil)
    }
}
