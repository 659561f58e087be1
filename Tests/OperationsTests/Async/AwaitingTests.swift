@_spi(Engine) @testable import Operations
@testable import OperationsComposition
import OperationsTestSupport
import Testing

@Suite("Awaiting operations and queues without blocking", .timeLimit(.minutes(1)))
struct AwaitingTests {
    /// The finish hooks an operation still holds (what a cancelled waiter must not leave).
    private func hookCount(_ operation: Operation) -> Int {
        operation._update { $0.finishWaiters.count }
    }

    @Test("await waitUntilFinished() returns after the operation and its completion block")
    func awaitOperation() async {
        let gate = BlockingSignal()
        let completed = Shared(false)
        let operation = BlockOperation { gate.wait() }
        operation.completionBlock = { completed.update { $0 = true } }
        OperationQueue().addOperation(operation)
        gate.open()
        await operation.waitUntilFinished()
        #expect(operation.isFinished)
        #expect(completed())
    }

    @Test("cancelling the waiting task ends the wait, leaves no hook behind, and does not cancel the operation")
    func cancelledWaiter() async throws {
        let operation = AsyncBlockOperation { 5 }
        let queue = suspendedQueue(holding: operation)
        let waiting = TestGate()
        let waiter = Task {
            waiting.open()
            return try await operation.value
        }
        await waiting.waitIgnoringCancellation()
        // The hook is registered before the waiter suspends; wait until it is there.
        #expect(await eventuallyAsync { hookCount(operation) == 1 })
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(hookCount(operation) == 0)
        #expect(!operation.isCancelled)
        queue.isSuspended = false
        #expect(try await operation.value == 5)
    }

    @Test("await waitUntilAllOperationsAreFinished() waits for operations added while waiting")
    func awaitQueue() async {
        let queue = OperationQueue()
        let release = BlockingSignal()
        let second = Shared<Operation?>(nil)
        queue.addOperation {
            release.wait()
            let next = BlockOperation {}
            second.update { $0 = next }
            queue.addOperation(next)
        }
        let waiter = Task { await queue.waitUntilAllOperationsAreFinished() }
        release.open()
        await waiter.value
        #expect(queue.operationCount == 0)
        #expect(second()?.isFinished == true)
    }

    @Test("a cancelled queue waiter leaves, and the queue's later waiters still wake")
    func cancelledQueueWaiter() async {
        let queue = OperationQueue()
        let release = TestGate()
        queue.addOperation { await release.waitIgnoringCancellation() }
        let waiter = Task { await queue.waitUntilAllOperationsAreFinished() }
        #expect(await eventuallyAsync { queue.core.withLock { $0.waits.count } == 1 })
        waiter.cancel()
        await waiter.value
        #expect(queue.core.withLock { $0.waits.count } == 0)
        #expect(queue.operationCount == 1)
        release.open()
        await queue.waitUntilAllOperationsAreFinished()
        #expect(queue.operationCount == 0)
    }

    @Test("addOperation with an async closure returns an awaitable operation")
    func addAsyncClosure() async throws {
        let queue = OperationQueue()
        let operation = queue.addOperation { () async -> String in
            await Task.yield()
            return "hello"
        }
        #expect(try await operation.value == "hello")
        // A synchronous closure still makes a BlockOperation.
        queue.addOperation { }
        await queue.waitUntilAllOperationsAreFinished()
    }

    @Test("perform runs the body on the queue and returns its value")
    func perform() async throws {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let value = try await queue.perform { () async -> Int in
            #expect(OperationQueue.current === queue)
            return 9
        }
        #expect(value == 9)
    }

    @Test("cancelling the task that awaits perform cancels the operation")
    func performCancels() async {
        let queue = OperationQueue()
        let entered = TestGate()
        let operation = enteringThenWaitingForCancellation(entered, returning: 1)
        let caller = Task { try await queue.perform(operation) }
        await entered.waitIgnoringCancellation()
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        #expect(operation.isFinished)
        #expect(operation.outcome?.isCancelled == true)
    }

    @Test("OperationQueue.current is the queue inside a body, also after suspension points")
    func currentQueueAfterSuspension() async throws {
        let queue = OperationQueue()
        let other = OperationQueue()
        let operation = AsyncBlockOperation { () async -> [Bool] in
            let before = OperationQueue.current === queue
            await Task.yield()
            // A suspension that resumes on another thread.
            _ = await Task.detached { 1 }.value
            let after = OperationQueue.current === queue
            return [before, after]
        }
        queue.addOperation(operation)
        #expect(try await operation.value == [true, true])
        #expect(OperationQueue.current !== queue)
        // A nested operation on another queue sees its own queue.
        let nested = AsyncBlockOperation { OperationQueue.current === other }
        other.addOperation(nested)
        #expect(try await nested.value)
    }
}
