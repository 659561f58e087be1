@testable import Operations
@testable import OperationsComposition
import OperationsTestSupport
import Testing

private let mainQueueKey = DispatchSpecificKey<Int>()

@Suite("Main actor and priority escalation", .timeLimit(.minutes(1)))
struct MainActorAndEscalationTests {
    /// True when called on the main dispatch queue (where the main actor runs here).
    private static func onMainQueue() -> Bool {
        DispatchQueue.getSpecific(key: mainQueueKey) == 1
    }

    @Test("bodies on OperationQueue.main run on the main actor, nonisolated ones too")
    func mainQueueBodies() async throws {
        DispatchQueue.main.setSpecific(key: mainQueueKey, value: 1)
        let plain = AsyncBlockOperation { () async -> [Bool] in
            let first = Self.onMainQueue()
            await Task.yield()
            return [first, Self.onMainQueue()]
        }
        OperationQueue.main.addOperation(plain)
        #expect(try await plain.value == [true, true])
        let isolated = AsyncBlockOperation { @MainActor () -> Bool in
            MainActor.assertIsolated()
            return Self.onMainQueue()
        }
        OperationQueue.main.addOperation(isolated)
        #expect(try await isolated.value)
        // A @MainActor closure on another queue runs on the main actor too.
        let elsewhere = AsyncBlockOperation { @MainActor () -> Bool in Self.onMainQueue() }
        OperationQueue().addOperation(elsewhere)
        #expect(try await elsewhere.value)
        // And a plain body elsewhere does not.
        let plainElsewhere = AsyncBlockOperation { () async -> Bool in Self.onMainQueue() }
        OperationQueue().addOperation(plainElsewhere)
        #expect(try await !plainElsewhere.value)
    }

    /// A suspended serial queue holding a block operation and, added after it, an async one;
    /// each appends its name ("early", "late") to `order` when it runs.
    private func suspendedSerialQueueWithEarlyAndLate() -> (OperationQueue, Shared<[String]>, AsyncBlockOperation<Void>) {
        let queue = suspendedSerialQueue()
        let order = Shared<[String]>([])
        let early = BlockOperation { order.append("early") }
        let late = AsyncBlockOperation { order.append("late") }
        queue.addOperations([early, late], waitUntilFinished: false)
        return (queue, order, late)
    }

    @Test("awaiting from a high-priority task lets a waiting operation jump its serial queue")
    func awaitEscalatesQueued() async throws {
        let (queue, order, late) = suspendedSerialQueueWithEarlyAndLate()
        let waiter = Task(priority: .high) { try await late.value }
        #expect(await eventuallyAsync { late._update { $0.escalatedQuality } == .userInitiated })
        queue.isSuspended = false
        try await waiter.value
        await queue.waitUntilAllOperationsAreFinished()
        #expect(order() == ["late", "early"])
    }

    @Test("without an escalation the serial queue keeps its order")
    func noEscalationKeepsOrder() async throws {
        let (queue, order, late) = suspendedSerialQueueWithEarlyAndLate()
        let gate = TestGate()
        late.completionBlock = { gate.open() }
        queue.isSuspended = false
        await gate.waitIgnoringCancellation()
        await queue.waitUntilAllOperationsAreFinished()
        #expect(order() == ["early", "late"])
    }

    @Test("a dependent of higher QoS escalates its dependency and what that waits for")
    func dependencyEscalates() async {
        let queue = suspendedSerialQueue()
        let order = Shared<[String]>([])
        let other = BlockOperation { order.append("other") }
        let root = BlockOperation { order.append("root") }
        let middle = BlockOperation { order.append("middle") }
        middle.addDependency(root)
        queue.addOperations([other, root, middle], waitUntilFinished: false)
        let urgent = BlockOperation { order.append("urgent") }
        urgent.qualityOfService = .userInteractive
        urgent.addDependency(middle)
        #expect(middle._update { $0.escalatedQuality } == .userInteractive)
        #expect(root._update { $0.escalatedQuality } == .userInteractive)
        #expect(other._update { $0.escalatedQuality } == nil)
        #expect(root.qualityOfService == .default)
        queue.addOperation(urgent)
        queue.isSuspended = false
        await queue.waitUntilAllOperationsAreFinished()
        // Without the escalation: other, root, middle (FIFO). (On a serial queue the urgent
        // operation's own QoS gives it no band, so it does not overtake "other" itself.)
        #expect(Array(order().prefix(2)) == ["root", "middle"])
    }

    @Test("awaiting an operation whose work waits for another raises that other one")
    func escalationFollowsWaitsInsideWork() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let waited = BlockOperation {}
        let waiting = BlockOperation { waited.waitUntilFinished() }
        queue.addOperation(waiting)
        #expect(await eventuallyAsync { waiting._isBlockedInWait })
        let awaiter = Task(priority: .high) { await waiting.waitUntilFinished() }
        #expect(await eventuallyAsync { waited._escalatedQuality == .userInitiated })
        // In no queue until now: started by hand, it ends the wait.
        waited.start()
        await awaiter.value
    }

    @Test("a wait begun inside an escalated operation raises what it waits for")
    func waitAfterEscalationIsRaised() {
        let queue = OperationQueue()
        let parked = OperationQueue()
        parked.isSuspended = true
        let go = BlockingSignal(), started = BlockingSignal()
        let waited = BlockOperation {}
        let waiting = BlockOperation {
            started.open()
            _ = go.wait()
            waited.waitUntilFinished()
        }
        parked.addOperation(waited)
        queue.addOperation(waiting)
        #expect(started.wait())
        waiting._escalate(to: .userInitiated)
        go.open()
        #expect(eventually { waiting._isBlockedInWait })
        #expect(waited._escalatedQuality == .userInitiated)
        parked.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("awaiting a running body from a high-priority task raises its task's priority")
    func runningBodyEscalates() async throws {
        let queue = OperationQueue()
        queue.qualityOfService = .utility
        let entered = TestGate()
        let gate = TestGate()
        let operation = AsyncBlockOperation { () async -> (TaskPriority, TaskPriority) in
            let before = Task.currentPriority
            entered.open()
            await gate.waitIgnoringCancellation()
            return (before, Task.currentPriority)
        }
        queue.addOperation(operation)
        await entered.waitIgnoringCancellation()
        let waiter = Task(priority: .high) { try await operation.value }
        #expect(await eventuallyAsync { operation._update { $0.escalatedQuality } == .userInitiated })
        gate.open()
        let (before, after) = try await waiter.value
        #expect(before == .low)
        #expect(after >= .high)
    }

    @Test("raising the priority of a task that already waits raises the operation it awaits")
    func escalatedWaiterEscalates() async throws {
        let operation = AsyncBlockOperation { 1 }
        let queue = suspendedQueue(holding: operation)
        let waiter = Task(priority: .low) { try await operation.value }
        // The waiter is registered (its finish hook is there) before it is raised.
        #expect(await eventuallyAsync { operation._update { $0.finishWaiters.count } == 1 })
        #expect(operation._update { $0.escalatedQuality } == nil)
        waiter.escalatePriority(to: .high)
        #expect(await eventuallyAsync { operation._update { $0.escalatedQuality } == .userInitiated })
        queue.isSuspended = false
        #expect(try await waiter.value == 1)
    }
}

@Suite("The main queue starts async operations on the main queue", .timeLimit(.minutes(1)))
struct MainQueueStartTests {
    @Test("a second async operation on OperationQueue.main is started (isExecuting announced) on the main queue")
    func startedOnMainQueue() async throws {
        DispatchQueue.main.setSpecific(key: mainQueueStartKey, value: 1)
        let first = AsyncBlockOperation { await Task.yield() }
        let second = AsyncBlockOperation { }
        let startedOnMain = Shared<[Bool]>([])
        let observation = second.observe(\.isExecuting, options: [.new]) { _, change in
            if change.newValue == true {
                startedOnMain.update { $0.append(DispatchQueue.getSpecific(key: mainQueueStartKey) == 1) }
            }
        }
        OperationQueue.main.addOperations([first, second], waitUntilFinished: false)
        await second.waitUntilFinished()
        #expect(startedOnMain() == [true])
        _ = observation
    }
}

private let mainQueueStartKey = DispatchSpecificKey<Int>()
