import Operations
import OperationsComposition
import OperationsTestSupport
import Testing
import TestTraits

/// A condition that throws a given error.
private struct Refusing: OperationCondition {
    var code: Int
    func evaluate(for operation: Operation) async throws { throw TestError(code: code) }
}

/// A condition that holds when a flag is set, offering an operation that sets it.
private struct SignedIn: OperationCondition {
    let flag: Shared<Bool>
    let log: Shared<[String]>
    func dependency(for operation: Operation) -> Operation? {
        let signIn = BlockOperation { [flag, log] in
            log.append("sign in")
            flag.update { $0 = true }
        }
        signIn.name = "sign in"
        return signIn
    }
    func evaluate(for operation: Operation) async throws {
        log.append("evaluate")
        guard flag() else { throw TestError(code: 401) }
    }
}

@Suite("Conditions", .timeLimit(.minutes(3)))
struct ConditionTests {
    @Test("evaluated after the dependencies finished and before the operation starts")
    func order() {
        let log = Shared<[String]>([])
        let dependency = BlockOperation { log.append("dependency") }
        let operation = BlockOperation { log.append("main") }
        operation.addDependency(dependency)
        operation.addCondition(BlockCondition { _ in log.append("condition"); return true })
        let queue = OperationQueue()
        queue.addOperations([operation, dependency], waitUntilFinished: false)
        operation.waitUntilFinished()
        #expect(log() == ["dependency", "condition", "main"])
        #expect(operation.outcome?.error == nil)
        // Conditions are not dependencies the user sees.
        #expect(operation.dependencies.count == 1)
    }

    @Test("a dependency added after the condition is waited for too")
    func laterDependency() {
        let log = Shared<[String]>([])
        let operation = BlockOperation { log.append("main") }
        operation.addCondition(BlockCondition { _ in log.append("condition"); return true })
        let dependency = BlockOperation { log.append("dependency") }
        operation.addDependency(dependency)
        let queue = OperationQueue()
        queue.addOperation(operation)
        queue.addOperation(dependency)
        operation.waitUntilFinished()
        #expect(log() == ["dependency", "condition", "main"])
    }

    @Test("a failing condition cancels the operation with its error; main never runs")
    func failure() {
        let ran = Shared(0)
        let completed = BlockingSignal()
        let operation = BlockOperation { ran.increment() }
        operation.completionBlock = { completed.open() }
        operation.addCondition(Refusing(code: 5))
        OperationQueue().addOperation(operation)
        #expect(completed.wait())
        #expect(ran() == 0)
        guard case .cancelled(let reason as TestError)? = operation.outcome else { Issue.record("\(String(describing: operation.outcome))"); return }
        #expect(reason.code == 5)
    }

    @Test("a predicate returning false fails with ConditionFailedError naming the condition")
    func predicateFalse() {
        let operation = BlockOperation {}.named("guarded")
        operation.addCondition(BlockCondition(name: "is it Tuesday") { _ in false })
        OperationQueue().addOperation(operation)
        operation.waitUntilFinished()
        guard case .cancelled(let reason as ConditionFailedError)? = operation.outcome else { Issue.record("\(String(describing: operation.outcome))"); return }
        #expect(reason.condition == "is it Tuesday")
        #expect(reason.operation.contains("guarded"))
    }

    @Test("the first condition to fail decides: its error is the reason")
    func firstFailureDecides() {
        let log = Shared<[String]>([])
        let operation = BlockOperation {}
        operation.addCondition(BlockCondition { _ in log.append("one"); return true })
        operation.addCondition(Refusing(code: 2))
        operation.addCondition(BlockCondition { _ in log.append("three"); return true })
        OperationQueue().addOperation(operation)
        operation.waitUntilFinished()
        #expect(log().contains("one"))
        #expect((operation.outcome?.error as? TestError)?.code == 2)
    }

    @Test("an async condition holds the operation back without holding a thread")
    func asyncCondition() async {
        let gate = TestGate()
        let evaluating = TestGate()
        let ran = Shared(0)
        let operation = BlockOperation { ran.increment() }
        operation.addCondition(BlockCondition { _ in
            evaluating.open()
            await gate.waitIgnoringCancellation()
            return true
        })
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        queue.addOperation(operation)
        await evaluating.waitIgnoringCancellation()
        #expect(operation.waitReasons.contains(.gate(.condition("BlockCondition", waitsFor: nil))))
        // Other work still runs on the queue meanwhile.
        let other = queue.addOperation { () async -> Int in 1 }
        #expect(try! await other.value == 1)
        #expect(ran() == 0 && !operation.isFinished)
        gate.open()
        await operation.waitUntilFinished()
        #expect(ran() == 1)
    }

    @Test("a condition's operation runs first (sign in), then the condition, then the operation")
    func contributedOperation() {
        let log = Shared<[String]>([])
        let flag = Shared(false)
        let operation = BlockOperation { log.append("main") }
        operation.addCondition(SignedIn(flag: flag, log: log))
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.addOperation(operation)
        operation.waitUntilFinished()
        #expect(log() == ["sign in", "evaluate", "main"])
    }

    @Test("a condition's operation takes the quality of service and priority the guarded operation runs at, unless it was given its own")
    func contributedQualityAndPriority() {
        let signIn = BlockOperation {}
        let ownPriority = BlockOperation {}
        ownPriority.queuePriority = .low
        let guarded = BlockOperation {}
        guarded.queuePriority = .high
        guarded.qualityOfService = .userInitiated
        guarded.addCondition(BlockCondition(dependency: { _ in signIn }) { _ in true })
        guarded.addCondition(BlockCondition(dependency: { _ in ownPriority }) { _ in true })
        let queue = OperationQueue()
        queue.qualityOfService = .utility
        queue.addOperation(guarded)
        guarded.waitUntilFinished()
        #expect(signIn.queuePriority == .high && signIn.qualityOfService == .userInitiated)
        #expect(ownPriority.queuePriority == .low, "the priority it was given")
        #expect(ownPriority.qualityOfService == .userInitiated)
    }

    @Test("a silent condition does not run its operation")
    func silent() {
        let log = Shared<[String]>([])
        let operation = BlockOperation { log.append("main") }
        operation.addCondition(SignedIn(flag: Shared(false), log: log).silent())
        OperationQueue().addOperation(operation)
        operation.waitUntilFinished()
        #expect(log() == ["evaluate"])
        #expect((operation.outcome?.error as? TestError)?.code == 401)
    }

    @Test("negated conditions")
    func negated() {
        let holds = BlockOperation {}
        holds.addCondition(Refusing(code: 1).negated())
        let fails = BlockOperation {}
        fails.addCondition(NegatedCondition(BlockCondition(name: "predicate") { _ in true }))
        let queue = OperationQueue()
        queue.addOperations([holds, fails], waitUntilFinished: true)
        #expect(holds.outcome?.isCancelled == false)
        guard case .cancelled(let reason as ConditionFailedError)? = fails.outcome else { Issue.record("\(String(describing: fails.outcome))"); return }
        #expect(reason.condition == "not predicate")
    }

    @Test("no failed dependencies, no cancelled dependencies")
    func dependencyConditions() {
        let failed = ValueBlockOperation<Int> { throw TestError(code: 1) }
        let cancelled = BlockOperation {}
        cancelled.cancel()
        let fine = BlockOperation {}
        let afterFailed = BlockOperation {}
        afterFailed.addDependency(failed)
        afterFailed.addCondition(.noFailedDependencies)
        let afterCancelled = BlockOperation {}
        afterCancelled.addDependency(cancelled)
        afterCancelled.addCondition(.noCancelledDependencies)
        let afterFine = BlockOperation {}
        afterFine.addDependency(fine)
        afterFine.addCondition(.noFailedDependencies)
        afterFine.addCondition(.noCancelledDependencies)
        // Foundation's default is kept without a condition: this one runs.
        let plain = BlockOperation {}
        plain.addDependency(failed)
        let queue = OperationQueue()
        queue.addOperations([failed, cancelled, fine, afterFailed, afterCancelled, afterFine, plain], waitUntilFinished: true)
        #expect(afterFailed.outcome?.error is ConditionFailedError)
        #expect(afterCancelled.outcome?.error is ConditionFailedError)
        #expect(afterFine.outcome?.isCancelled == false)
        #expect(plain.outcome?.isCancelled == false)
    }

    @Test("a cancelled operation's conditions are not evaluated")
    func cancelledSkipsEvaluation() {
        let asked = Shared(0)
        let operation = BlockOperation {}
        operation.addCondition(BlockCondition { _ in asked.increment(); return true })
        operation.cancel()
        OperationQueue().addOperation(operation)
        operation.waitUntilFinished()
        #expect(operation.isCancelled)
        #expect(asked() == 0)
    }

    @Test("conditions on a serial queue")
    func serialQueue() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let log = Shared<[String]>([])
        let operations = (0..<5).map { index in
            let operation = BlockOperation { log.append("\(index)") }
            operation.addCondition(BlockCondition { _ in index != 2 })
            return operation
        }
        queue.addOperations(operations, waitUntilFinished: true)
        #expect(log() == ["0", "1", "3", "4"])
    }

    @Test("many guarded operations on busy queues: none is left waiting")
    func noneStuck() {
        let queues = (0..<3).map { _ in OperationQueue() }
        let count = 600
        let finished = Shared(0)
        var operations: [Operation] = []
        for index in 0..<count {
            let operation = BlockOperation { finished.increment() }
            operation.addCondition(BlockCondition { _ in
                if index % 3 == 0 { await Task.yield() }
                return true
            })
            if index > 0, index % 4 == 0 { operation.addDependency(operations[index - 1]) }
            operations.append(operation)
        }
        for (index, operation) in operations.enumerated() { queues[index % 3].addOperation(operation) }
        for queue in queues { queue.waitUntilAllOperationsAreFinished() }
        #expect(finished() == count)
    }

    @Test("adding a condition to an operation in a queue stops with a message", .oneExitTestAtATime)
    func addAfterEnqueue() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = Operation().named("queued")
            withExtendedLifetime(suspendedQueue(holding: operation)) { operation.addCondition(.noFailedDependencies) }
        }.map { $0.standardErrorContent.containsText("\"queued\"", "addCondition") }.check()
    }

    /// Conditions and categories add nothing to the queue: two operations added are two in
    /// `operations`, `operationCount`, the queue's progress and its `capacity`.
    @Test("conditions and categories are not listed, counted, or counted in progress or capacity")
    func conditionsAddNothingToTheQueue() async throws {
        let queue = OperationQueue()
        queue.isSuspended = true
        let guarded = BlockOperation {}
        guarded.addCondition(BlockCondition { _ in true })
        let categorised = BlockOperation {}
        categorised.addExclusivity("hidden-\(UInt64.random(in: 0...UInt64.max))")
        queue.progress.totalUnitCount = 2
        queue.addOperations([guarded, categorised], waitUntilFinished: false)
        #expect(queue.operationCount == 2)
        #expect(queue.operations.count == 2 && queue.operations[0] === guarded && queue.operations[1] === categorised)
        queue.isSuspended = false
        await queue.waitUntilAllOperationsAreFinished()
        #expect(queue.progress.completedUnitCount == 2)
        #expect(queue.operationCount == 0)
        // Capacity: room for two, both taken by the two operations.
        let limited = OperationQueue()
        limited.capacity = 2
        limited.isSuspended = true
        let first = BlockOperation {}
        first.addCondition(BlockCondition { _ in true })
        try await limited.enqueue(first)
        let second = BlockOperation {}
        let admitted = Shared(false)
        let producer = Task {
            try await limited.enqueue(second)
            admitted.update { $0 = true }
        }
        let wasAdmitted = await eventuallyAsync { admitted() }
        #expect(wasAdmitted, "the second producer waited: something else took the place")
        producer.cancel()
        _ = try? await producer.value
        limited.isSuspended = false
        await limited.waitUntilAllOperationsAreFinished()
    }

    /// With only a condition still being evaluated for a cancelled operation, the queue
    /// lists and counts nothing, and its `underlyingQueue` may be set as for an empty
    /// queue.
    @Test("a queue whose only pending work is a condition of a cancelled operation counts as empty for underlyingQueue")
    func underlyingQueueWithPendingCondition() async {
        let evaluating = TestGate(), release = TestGate()
        let operation = BlockOperation {}
        operation.addCondition(BlockCondition { _ in
            evaluating.open()
            await release.waitIgnoringCancellation()
            return true
        })
        let queue = OperationQueue()
        queue.addOperation(operation)
        await evaluating.waitIgnoringCancellation()
        operation.cancel()
        await operation.waitUntilFinished()
        // It leaves the queue just after it finished.
        #expect(await eventuallyAsync { queue.operationCount == 0 })
        queue.underlyingQueue = DispatchQueue(label: "later")
        release.open()
        await queue.waitUntilAllOperationsAreFinished()
    }
}

/// Blocks every thread of Swift's pool for background-priority tasks (Dispatch keeps a
/// pool per quality of service, as wide as the processor count); returns the release.
func blockBackgroundPool() -> @Sendable () -> Void {
    let width = max(ProcessInfo.processInfo.activeProcessorCount, 2) * 2
    let release = DispatchSemaphore(value: 0)
    let blocked = Shared(0)
    for _ in 0..<width {
        Task.detached(priority: .background) {
            blocked.increment()
            release.wait()
        }
    }
    _ = eventually { blocked() >= ProcessInfo.processInfo.activeProcessorCount }
    return { for _ in 0..<width { release.signal() } }
}

@Suite("The composition layer without Swift's cooperative pool", .serialized, .timeLimit(.minutes(1)))
struct CompositionLaneTests {
    @Test("conditions are evaluated while every cooperative thread is blocked")
    func conditionWithPoolBlocked() {
        let release = blockBackgroundPool()
        defer { release() }
        let finished = BlockingSignal()
        let operation = BlockOperation {}
        operation.addCondition(BlockCondition { _ in
            await Task.yield()
            return true
        })
        operation.completionBlock = { finished.open() }
        let queue = OperationQueue()
        queue.qualityOfService = .background
        queue.addOperation(operation)
        #expect(finished.wait(timeout: 10))
        #expect(operation.outcome?.isCancelled == false)
    }

    @Test("a delay finishes while every cooperative thread is blocked")
    func delayWithPoolBlocked() {
        let release = blockBackgroundPool()
        defer { release() }
        let finished = BlockingSignal()
        let delay = DelayOperation(for: .zero)
        delay.completionBlock = { finished.open() }
        let queue = OperationQueue()
        queue.qualityOfService = .background
        queue.addOperation(delay)
        #expect(finished.wait(timeout: 10))
    }

    @Test("an operation a condition contributed runs on when the guarded operation is cancelled while a thread waits for it")
    func contributedWaitedForRunsOn() {
        let queue = OperationQueue()
        let release = BlockingSignal()
        let signIn = BlockOperation { _ = release.wait() }
        let guarded = BlockOperation {}
        guarded.addCondition(BlockCondition(name: "signed in", dependency: { _ in signIn }) { _ in true })
        queue.addOperation(guarded)
        #expect(eventually { signIn.isExecuting })
        let waitsBefore = signIn._finishWaiterCount
        let returned = BlockingSignal()
        onNewThread {
            signIn.waitUntilFinished()
            returned.open()
        }
        #expect(eventually { signIn._finishWaiterCount > waitsBefore })
        guarded.cancel()
        #expect(!signIn.isCancelled, "cancelled though a thread waits for it")
        release.open()
        #expect(returned.wait())
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("an operation two guarded operations' conditions contribute runs on when the first is cancelled before the second's conditions are consulted")
    func sharedContributedRunsOnForTheSecond() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let other = OperationQueue()
        let releaseAhead = BlockingSignal(), releaseDependency = BlockingSignal()
        let ran = Shared<[String]>([])
        let ahead = BlockOperation { _ = releaseAhead.wait() }
        let dependency = BlockOperation { _ = releaseDependency.wait() }
        let signIn = BlockOperation { ran.append("sign in") }
        let first = BlockOperation { ran.append("first") }
        let second = BlockOperation { ran.append("second") }
        first.addCondition(BlockCondition(name: "first signed in", dependency: { _ in signIn }) { _ in true })
        second.addCondition(BlockCondition(name: "second signed in", dependency: { _ in signIn }) { _ in true })
        second.addDependency(dependency)
        other.addOperation(dependency)
        queue.addOperations([ahead, first, second], waitUntilFinished: false)
        // The first guarded operation's conditions were consulted: the sign-in joined the queue.
        #expect(eventually { signIn._queue != nil })
        first.cancel()
        #expect(!signIn.isCancelled, "cancelled though the second guarded operation still needs it")
        releaseAhead.open()
        releaseDependency.open()
        queue.waitUntilAllOperationsAreFinished()
        other.waitUntilAllOperationsAreFinished()
        #expect(ran() == ["sign in", "second"])
    }
}
