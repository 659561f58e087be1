@testable import Operations
@testable import OperationsComposition
import OperationsTestSupport
import Testing
import TestTraits

private let underlyingKey = DispatchSpecificKey<Int>()

/// Corners of the async layer: long chains, large batches, cancelled loops, where the next
/// body starts. Each case is forced by its setup, not by timing.
@Suite("Async layer: corners", .timeLimit(.minutes(3)))
struct AsyncCornerTests {
    @Test("a 20,000-stage then chain whose head fails does not overflow the stack", .oneExitTestAtATime)
    func longFailingChain() async {
        // Each stage is cancelled at start (its input failed) and finished at once. The
        // thread that ended one body must not start the next inside that finish: that would
        // take one stack frame group per stage, a crash at a few thousand.
        await #expect(processExitsWith: .success) {
            struct Boom: Error {}
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            let head = AsyncBlockOperation<Int> { throw Boom() }
            var stages: [ValueOperation<Int>] = [head]
            for _ in 0..<20_000 { stages.append(stages.last!.then { value async in value + 1 }) }
            queue.addOperations(stages, waitUntilFinished: false)
            await queue.waitUntilAllOperationsAreFinished()
            precondition(stages.allSatisfy { $0.isFinished })
        }
    }

    @Test("a 200,000-stage then chain that never ran is released without recursion", .oneExitTestAtATime)
    func abandonedChainReleased() async {
        // Each stage holds its input (for its value) besides listing it as a dependency:
        // dropping the last stage must not release the chain one nested deinit per stage.
        await #expect(processExitsWith: .success) {
            var last: ValueOperation<Int> = ValueBlockOperation { 0 }
            for _ in 0..<200_000 { last = last.then { $0 + 1 } }
            _ = consume last
        }
    }

    @Test("cancelling 50,000 queued async operations behind running bodies does not overflow the stack", .oneExitTestAtATime)
    func cancelLargeBatch() async {
        await #expect(processExitsWith: .success) {
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 4
            let entered = AsyncCounter()
            let running = (0..<4).map { _ in
                AsyncBlockOperation {
                    entered.increment()
                    await TestGate().wait()
                }
            }
            queue.addOperations(running, waitUntilFinished: false)
            await entered.wait(for: 4)
            queue.addOperations((0..<50_000).map { _ in AsyncBlockOperation {} }, waitUntilFinished: false)
            queue.cancelAllOperations()
            await queue.waitUntilAllOperationsAreFinished()
        }
    }

    @Test("a results loop whose task is cancelled throws CancellationError instead of ending as if complete")
    func cancelledLoopThrows() async {
        let queue = OperationQueue()
        let first = AsyncBlockOperation { 0 }
        let rest = (0..<2).map { _ in
            AsyncBlockOperation { () async throws -> Int in
                await TestGate().wait()
                try Task.checkCancellation()
                return 1
            }
        }
        let gotFirst = TestGate()
        let consumer = Task { () async throws -> [Int] in
            var values: [Int] = []
            for try await value in queue.results(adding: [first] + rest) {
                values.append(value)
                gotFirst.open()
            }
            return values
        }
        await gotFirst.waitIgnoringCancellation()
        consumer.cancel()
        await #expect(throws: CancellationError.self) { try await consumer.value }
        await queue.waitUntilAllOperationsAreFinished()
        #expect(rest.allSatisfy { $0.outcome?.isCancelled == true })
    }

    @Test("a results loop that is left takes its finish hooks off operations that never run")
    func hooksRemovedWhenLoopEnds() async {
        // Never added to a queue: nothing will ever finish them.
        let operations = (0..<3).map { _ in ValueBlockOperation { 1 } }
        let consumer = Task {
            for try await _ in OperationResults(operations) {}
        }
        #expect(await eventuallyAsync { operations.allSatisfy { $0._update { $0.finishWaiters.count } == 1 } })
        consumer.cancel()
        _ = await consumer.result
        #expect(await eventuallyAsync { operations.allSatisfy { $0._update { $0.finishWaiters.count } == 0 } })
    }

    @Test("with an underlying queue, the next async operation is started there, not on the thread the last body ended on")
    func underlyingQueueRespected() async {
        let underlying = DispatchQueue(label: "underlying")
        underlying.setSpecific(key: underlyingKey, value: 7)
        let queue = OperationQueue()
        queue.underlyingQueue = underlying
        queue.maxConcurrentOperationCount = 1
        let first = AsyncBlockOperation { await Task.yield() }
        let second = AsyncBlockOperation {}
        let startedOn = Shared<[Int?]>([])
        let observation = second.observe(\.isExecuting, options: [.new]) { _, change in
            if change.newValue == true { startedOn.update { $0.append(DispatchQueue.getSpecific(key: underlyingKey)) } }
        }
        queue.addOperations([first, second], waitUntilFinished: false)
        await queue.waitUntilAllOperationsAreFinished()
        #expect(startedOn() == [7])
        _ = observation
    }

    @Test("OperationQueue.current is the queue while an async operation is being started after another's body")
    func currentDuringInlineStart() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let first = AsyncBlockOperation { await Task.yield() }
        let second = AsyncBlockOperation {}
        let current = Shared<[Bool]>([])
        let observation = second.observe(\.isExecuting, options: [.new]) { _, change in
            if change.newValue == true { current.update { $0.append(OperationQueue.current === queue) } }
        }
        queue.addOperations([first, second], waitUntilFinished: false)
        await queue.waitUntilAllOperationsAreFinished()
        #expect(current() == [true])
        _ = observation
    }

    @Test("enqueue returns the operation it added, as its closure form does")
    func enqueueReturnsOperation() async throws {
        let queue = OperationQueue()
        let operation = try await queue.enqueue(ValueBlockOperation { 3 })
        #expect(try await operation.value == 3)
    }
}
