import Operations
import OperationsComposition
import OperationsTestSupport
import Testing
import TestTraits

@Suite("Keys: coalescing, reprioritising, cancelling by key", .timeLimit(.minutes(3)))
struct KeyTests {
    @Test("an operation added under a key in flight joins it: one body, the same value for all")
    func coalescing() async throws {
        let queue = OperationQueue()
        let gate = TestGate()
        let made = Shared(0)
        let runs = Shared(0)
        let make = { () -> ValueOperation<Int> in
            made.increment()
            return AsyncBlockOperation { () async -> Int in
                runs.increment()
                await gate.wait()
                return 42
            }
        }
        let first = queue.addOperation(forKey: "image-1", make)
        let second = queue.addOperation(forKey: "image-1", make)
        let other = queue.addOperation(forKey: "image-2", make)
        #expect(first === second)
        #expect(first !== other)
        #expect(queue.operation(forKey: "image-1") === first)
        gate.open()
        #expect(try await first.value == 42)
        #expect(try await second.value == 42)
        _ = try await other.value
        #expect(made() == 2)
        #expect(runs() == 2)
    }

    @Test("the key is free again once its operation finished")
    func freedAtFinish() async throws {
        let queue = OperationQueue()
        let first = queue.addOperation(forKey: 1) { ValueBlockOperation { 1 } }
        _ = try await first.value
        #expect(await eventuallyAsync { queue.operation(forKey: 1) == nil })
        let second = queue.addOperation(forKey: 1) { ValueBlockOperation { 2 } }
        #expect(second !== first)
        #expect(try await second.value == 2)
    }

    @Test("cancelling by key cancels only when nobody else wants the work")
    func cancelByKey() async {
        let queue = OperationQueue()
        queue.isSuspended = true
        let operation = queue.addOperation(forKey: "row 7") { BlockOperation {} }
        queue.addOperation(forKey: "row 7") { BlockOperation {} }
        #expect(queue.cancelOperation(forKey: "row 7") == false)
        #expect(!operation.isCancelled)
        #expect(queue.cancelOperation(forKey: "row 7") == true)
        #expect(operation.isCancelled)
        // The key is free at once: new work under it is not the cancelled operation.
        let fresh = queue.addOperation(forKey: "row 7") { BlockOperation {} }
        #expect(fresh !== operation)
        #expect(queue.cancelOperation(forKey: "unknown") == false)
        queue.isSuspended = false
        await queue.waitUntilAllOperationsAreFinished()
    }

    /// Log out (everything cancelled, or the session's work itself), log in again: every
    /// form of request under the key gets fresh work, never the cancelled operation, which
    /// only finishes cancelled. The queue stays suspended until the perform waits, so the
    /// cancelled ones have not finished when the next requests come.
    @Test("a cancelled operation takes no new callers: the next request under its key gets fresh work", arguments: [true, false])
    func cancelledTakesNoCallers(cancelAll: Bool) async throws {
        let queue = OperationQueue()
        queue.isSuspended = true
        let typed = queue.addOperation(forKey: "typed") { ValueBlockOperation { 1 } }
        let untyped = queue.addOperation(forKey: "untyped") { BlockOperation {} }
        let performed = queue.addOperation(forKey: "performed") { ValueBlockOperation { 1 } }
        if cancelAll {
            queue.cancelAllOperations()
        } else {
            for operation in [typed, untyped, performed] { operation.cancel() }
        }
        for key in ["typed", "untyped", "performed"] {
            #expect(queue.operation(forKey: key) == nil, "operation(forKey: \(key)) is the cancelled operation")
        }
        #expect(queue.cancelOperation(forKey: "typed") == false, "the cancelled operation was cancelled again by key")
        queue.setQueuePriority(.veryHigh, forKey: "typed")
        #expect(typed.queuePriority == .normal, "the priority of the cancelled operation was set by key")
        let freshTyped = queue.addOperation(forKey: "typed") { ValueBlockOperation { 2 } }
        let freshUntyped = queue.addOperation(forKey: "untyped") { BlockOperation {} }
        #expect(freshTyped !== typed)
        #expect(freshUntyped !== untyped)
        #expect(queue.operation(forKey: "typed") === freshTyped)
        let performing = Task { try await queue.perform(forKey: "performed") { 2 } }
        // Resumed once the perform waits for the operation under the key (its waits: the
        // key's own finish hook, and the perform).
        #expect(await eventuallyAsync { queue.operation(forKey: "performed")?._finishWaiterCount == 2 })
        queue.isSuspended = false
        #expect(try await freshTyped.value == 2)
        #expect(try await performing.value == 2)
        await #expect(throws: CancellationError.self) { try await typed.value }
        await #expect(throws: CancellationError.self) { try await performed.value }
        await queue.waitUntilAllOperationsAreFinished()
        #expect(!freshUntyped.isCancelled && untyped.isCancelled)
    }

    @Test("perform(forKey:): one body for all callers; a cancelled waiter leaves the work to the others")
    func performJoins() async throws {
        let queue = OperationQueue()
        let gate = TestGate()
        let runs = Shared(0)
        let body: @Sendable () async throws -> String = {
            runs.increment()
            await gate.wait()
            return "pixels"
        }
        let leaving = Task { try await queue.perform(forKey: "url", body) }
        await eventuallyAsyncOperation(queue, key: "url")
        // The second caller joins synchronously: two interests now.
        let staying: ValueOperation<String> = queue.addOperation(forKey: "url") { AsyncBlockOperation(body) }
        leaving.cancel()
        await #expect(throws: CancellationError.self) { try await leaving.value }
        #expect(!staying.isCancelled)
        gate.open()
        #expect(try await staying.value == "pixels")
        #expect(runs() == 1)
    }

    @Test("a cancelled perform(forKey:) withdraws its interest in its own operation, not in a later one under the key")
    func performWithdrawsFromItsOwnOperation() async throws {
        // Forced: the leaving caller's task runs on a Dispatch queue the test suspends, so it
        // resumes from its cancellation only after its operation finished and another caller
        // put new work under the same key.
        let lane = DispatchQueue(label: "leaving caller")
        let executor = DispatchTaskExecutor(lane)
        let queue = OperationQueue()
        let firstGate = TestGate()
        let leaving = Task(executorPreference: executor) {
            try await queue.perform(forKey: "url") { () async -> Int in
                await firstGate.wait()
                return 1
            }
        }
        await eventuallyAsyncOperation(queue, key: "url")
        let first = try #require(queue.operation(forKey: "url"))
        lane.suspend()
        leaving.cancel()
        firstGate.open()
        await first.waitUntilFinished()
        let secondGate = TestGate()
        let second: ValueOperation<Int> = queue.addOperation(forKey: "url") {
            AsyncBlockOperation { () async -> Int in
                await secondGate.wait()
                return 2
            }
        }
        #expect(second !== first)
        lane.resume()
        await #expect(throws: CancellationError.self) { try await leaving.value }
        #expect(!second.isCancelled, "the leaving caller withdrew interest in work it never asked for")
        #expect(queue.operation(forKey: "url") === second)
        secondGate.open()
        #expect(try await second.value == 2)
    }

    @Test("raising the priority under a key moves the operation and its dependency ahead")
    func reprioritise() {
        let queue = suspendedSerialQueue()
        let log = Shared<[String]>([])
        let rows = (0..<3).map { index in
            queue.addOperation(forKey: index) { () -> Operation in
                let download = BlockOperation { log.append("download \(index)") }
                let filter = BlockOperation { log.append("filter \(index)") }
                filter.addDependency(download)
                queue.addOperation(download)
                return filter
            }
        }
        #expect(eventually { rows.allSatisfy { $0.dependencies.first!.waitReasons.contains { if case .queueSuspended = $0 { true } else { false } } } })
        queue.setQueuePriority(.veryHigh, forKey: 2)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(Array(log().prefix(2)) == ["download 2", "filter 2"])
    }

    @Test("a key holding an operation of another type stops with a message", .oneExitTestAtATime)
    func typeMismatch() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.isSuspended = true
            _ = queue.addOperation(forKey: "k") { ValueBlockOperation { 1 } }
            _ = queue.addOperation(forKey: "k") { ValueBlockOperation { "one" } }
        }.map { $0.standardErrorContent.containsText("under key k", "not a ValueOperation<String>") }.check()
    }
}

/// Runs jobs on a Dispatch queue, which a test may suspend to hold a task where it is.
final class DispatchTaskExecutor: TaskExecutor {
    let queue: DispatchQueue

    init(_ queue: DispatchQueue) { self.queue = queue }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Waits (without blocking) until an operation is in flight under `key`.
private func eventuallyAsyncOperation(_ queue: OperationQueue, key: String) async {
    _ = await eventuallyAsync { queue.operation(forKey: key) != nil }
}

@Suite("queuePriority changed while an operation waits in the ready list")
struct PriorityChangeTests {
    @Test("raising the priority of an operation already waiting in its queue makes it start first")
    func refiledOnChange() {
        let queue = suspendedSerialQueue()
        let log = Shared<[String]>([])
        let first = BlockOperation { log.append("first") }
        let second = BlockOperation { log.append("second") }
        queue.addOperations([first, second], waitUntilFinished: false)
        #expect(eventually { second.waitReasons.contains { if case .queueSuspended = $0 { true } else { false } } })
        second.queuePriority = .veryHigh
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["second", "first"])
    }

    @Test("an operation moved to another band is released once finished, also when it is the last one", arguments: [false, true])
    func movedReleased(alone: Bool) {
        weak var released: Operation?
        let queue = suspendedSerialQueue()
        do {
            let operation = BlockOperation {}
            released = operation
            // Another operation of the band, added first: the moved one's old entry is behind it.
            if !alone { queue.addOperation(BlockOperation {}) }
            queue.addOperation(operation)
            operation.queuePriority = .low
            operation.queuePriority = .veryHigh
            queue.isSuspended = false
            queue.waitUntilAllOperationsAreFinished()
        }
        #expect(eventually { released == nil }, "a finished operation is kept by its old entry in the ready list")
    }

    @Test("a queue whose moved operation holds the queue is released")
    func movedHoldingItsQueue() {
        weak var released: OperationQueue?
        do {
            let queue = suspendedSerialQueue()
            released = queue
            queue.addOperation(BlockOperation {})
            let operation = ClosureOperation { _ in _ = queue }
            queue.addOperation(operation)
            operation.queuePriority = .high
            queue.isSuspended = false
            queue.waitUntilAllOperationsAreFinished()
        }
        #expect(eventually { released == nil }, "the queue and its finished operation keep each other")
    }

    @Test("priorities changed many times while waiting, newest first: each runs in its last band, in the order added")
    func movedBackAndForth() {
        let queue = suspendedSerialQueue()
        let log = Shared<[Int]>([])
        let bands: [Operation.QueuePriority] = [.veryLow, .low, .normal, .high, .veryHigh]
        let count = 300
        let operations = (0..<count).map { index in BlockOperation { log.update { $0.append(index) } } }
        queue.addOperations(Array(operations[..<200]), waitUntilFinished: false)
        // Moves of every kind: once, twice, back to where it was; then more operations
        // join the bands the moved ones left, and some of those move too.
        for index in stride(from: 199, through: 0, by: -1) {
            for step in 0..<(index % 4) { operations[index].queuePriority = bands[(index + step * 2) % 5] }
        }
        queue.addOperations(Array(operations[200...]), waitUntilFinished: false)
        for index in stride(from: 299, through: 150, by: -3) { operations[index].queuePriority = bands[index % 5] }
        let expected = (0..<count).sorted { a, b in
            let (pa, pb) = (operations[a].queuePriority.rawValue, operations[b].queuePriority.rawValue)
            return pa != pb ? pa > pb : a < b
        }
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == expected)
        #expect(queue.operationCount == 0)
    }
}
