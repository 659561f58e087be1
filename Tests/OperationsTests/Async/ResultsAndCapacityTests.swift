@_spi(Engine) @testable import Operations
@testable import OperationsComposition
import OperationsTestSupport
import Testing
import TestTraits

@Suite("Results as they complete, and back-pressure", .timeLimit(.minutes(3)))
struct ResultsAndCapacityTests {
    @Test("results(adding:) yields values in the order the operations finish")
    func completionOrder() async throws {
        let queue = OperationQueue()
        let gates = (0..<4).map { _ in TestGate() }
        let operations = (0..<4).map { index in
            AsyncBlockOperation { () async -> Int in
                await gates[index].waitIgnoringCancellation()
                return index
            }
        }
        var seen: [Int] = []
        // Finish them in the order 2, 0, 3, 1: each gate opens after the previous value came.
        let order = [2, 0, 3, 1]
        gates[order[0]].open()
        for try await value in queue.results(adding: operations) {
            seen.append(value)
            if seen.count < order.count { gates[order[seen.count]].open() }
        }
        #expect(seen == order)
    }

    @Test("the loop throws the first failure; break cancels the operations that have not finished")
    func failureAndBreak() async throws {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let first = AsyncBlockOperation<Int> { throw TestError(code: 4) }
        let rest = (0..<3).map { _ in AsyncBlockOperation<Int> { 1 } }
        queue.isSuspended = true
        let results = queue.results(adding: [first] + rest)
        queue.isSuspended = false
        await #expect(throws: TestError(code: 4)) {
            for try await _ in results {}
        }
        await queue.waitUntilAllOperationsAreFinished()

        let gate = TestGate()
        let slow = (0..<3).map { _ in
            AsyncBlockOperation { () async throws -> Int in
                await gate.wait()
                try Task.checkCancellation()
                return 0
            }
        }
        let fast = AsyncBlockOperation { () async -> Int in 7 }
        for try await value in queue.results(adding: [fast] + slow) {
            #expect(value == 7)
            break
        }
        await queue.waitUntilAllOperationsAreFinished()
        #expect(slow.allSatisfy { $0.outcome?.isCancelled == true })
    }

    @Test("cancelling the iterating task cancels the batch")
    func cancelIteratingTask() async {
        let queue = OperationQueue()
        let entered = AsyncCounter()
        let operations = (0..<3).map { _ in
            AsyncBlockOperation { () async throws -> Int in
                entered.increment()
                await TestGate().wait()
                try Task.checkCancellation()
                return 0
            }
        }
        let consumer = Task {
            var count = 0
            for try await _ in queue.results(adding: operations) { count += 1 }
            return count
        }
        await entered.wait(for: 3)
        consumer.cancel()
        _ = try? await consumer.value
        await queue.waitUntilAllOperationsAreFinished()
        #expect(operations.allSatisfy { $0.outcome?.isCancelled == true })
    }

    @Test("OperationResults over operations added elsewhere only watches them")
    func watchOnly() async throws {
        let queue = OperationQueue()
        let operations = (0..<5).map { index in ValueBlockOperation { index * 2 } }
        queue.addOperations(operations, waitUntilFinished: false)
        var values: [Int] = []
        for try await value in OperationResults(operations) { values.append(value) }
        #expect(values.sorted() == [0, 2, 4, 6, 8])
    }

    @Test("enqueue suspends the producer while the queue holds capacity operations")
    func backPressure() async throws {
        let queue = OperationQueue()
        queue.capacity = 3
        queue.maxConcurrentOperationCount = 2
        let meter = ConcurrencyMeter()
        let mostHeld = Shared(0)
        // Enough to fill the queue twenty times over. Each one takes several hops between
        // threads of the queue's quality of service, background: on a loaded machine those
        // get a tenth of a busy thread's share of the processors, so a few hundred take
        // most of a minute there.
        let total = 60
        for index in 0..<total {
            try await queue.enqueue {
                meter.enter()
                if index % 7 == 0 { await Task.yield() }
                meter.leave()
            }
            mostHeld.update { $0 = max($0, queue.operationCount) }
        }
        await queue.waitUntilAllOperationsAreFinished()
        #expect(mostHeld() <= 3)
        #expect(meter.most <= 2)
        #expect(queue.core.withLock { $0.reservedPlaces } == 0)
    }

    @Test("producers wait in line; one cancelled while waiting adds nothing and keeps nobody stuck")
    func producersInLine() async throws {
        let queue = OperationQueue()
        queue.capacity = 1
        let release = TestGate()
        try await queue.enqueue { await release.waitIgnoringCancellation() }
        let order = Shared<[Int]>([])
        let waiting = { queue.core.withLock { $0.capacityWaiters.count } }
        let first = Task { try await queue.enqueue(BlockOperation { order.update { $0.append(1) } }) }
        #expect(await eventuallyAsync { waiting() == 1 })
        let cancelled = Task { try await queue.enqueue(BlockOperation { order.update { $0.append(99) } }) }
        #expect(await eventuallyAsync { waiting() == 2 })
        let third = Task { try await queue.enqueue(BlockOperation { order.update { $0.append(3) } }) }
        #expect(await eventuallyAsync { waiting() == 3 })
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(waiting() == 2)
        release.open()
        _ = try await first.value
        _ = try await third.value
        await queue.waitUntilAllOperationsAreFinished()
        #expect(order() == [1, 3])
        #expect(queue.core.withLock { $0.reservedPlaces } == 0)
    }

    @Test("a capacity below 1 stops the process with a message naming the queue", .oneExitTestAtATime)
    func badCapacity() async {
        await #expect(processExitsWith: .failure) {
            let queue = OperationQueue()
            queue.name = "bounded"
            queue.capacity = 0
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

    @Test("enqueue returns the operation it added, as its closure form does")
    func enqueueReturnsOperation() async throws {
        let queue = OperationQueue()
        let operation = try await queue.enqueue(ValueBlockOperation { 3 })
        #expect(try await operation.value == 3)
    }
}
