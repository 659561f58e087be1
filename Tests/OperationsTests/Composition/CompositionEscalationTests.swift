import Operations
import OperationsComposition
import OperationsTestSupport
import Testing

/// A condition that contributes `contributed` (a "sign in") and holds.
private struct Contributing: OperationCondition {
    let contributed: Operation
    func dependency(for operation: Operation) -> Operation? { contributed }
    func evaluate(for operation: Operation) async throws {}
}

/// An async operation that opens `entered` when its body runs and returns once `release`
/// opens.
private func heldOperation(entered: TestGate, release: TestGate) -> AsyncBlockOperation<Int> {
    AsyncBlockOperation { () async -> Int in
        entered.open()
        await release.waitIgnoringCancellation()
        return 1
    }
}

@Suite("Escalation reaches the work an operation runs on its behalf", .timeLimit(.minutes(1)))
struct CompositionEscalationTests {
    @Test("a high-priority task awaiting a group raises its running child, and a child that joins afterwards")
    func groupChildren() async {
        let queue = OperationQueue()
        let entered = TestGate(), release = TestGate()
        let running = heldOperation(entered: entered, release: release)
        let group = GroupOperation(operations: [running])
        queue.addOperation(group)
        await entered.wait()
        let waiter = Task(priority: .high) { await group.waitUntilFinished() }
        #expect(await eventuallyAsync { running._escalatedQuality == .userInitiated })
        // Held behind the running child, so that it is still waiting when it joins.
        let later = BlockOperation {}
        later.addDependency(running)
        group.addChild(later)
        #expect(later._escalatedQuality == .userInitiated)
        release.open()
        await waiter.value
        #expect(group.isFinished)
    }

    @Test("a high-priority task awaiting a retry raises its running attempt, and the attempts after it")
    func retryAttempts() async throws {
        let queue = OperationQueue()
        let entered = TestGate(), release = TestGate()
        let attempts = Shared<[ValueOperation<Int>]>([])
        let retry = RetryOperation<Int>(maximumAttempts: 2) { number in
            let attempt: AsyncBlockOperation<Int> =
                number == 1
                ? AsyncBlockOperation { () async throws -> Int in
                    entered.open()
                    await release.waitIgnoringCancellation()
                    throw TestError(code: 1)
                }
                : AsyncBlockOperation { () async -> Int in 2 }
            attempts.update { $0.append(attempt) }
            return attempt
        }
        queue.addOperation(retry)
        await entered.wait()
        let waiter = Task(priority: .high) { try await retry.value }
        #expect(await eventuallyAsync { attempts().first?._escalatedQuality == .userInitiated })
        release.open()
        #expect(try await waiter.value == 2)
        #expect(attempts().count == 2)
        #expect(attempts().last?._escalatedQuality == .userInitiated)
    }

    @Test("a high-priority task awaiting a guarded operation raises the operation its condition contributed")
    func conditionContributed() async {
        let queue = OperationQueue()
        let entered = TestGate(), release = TestGate()
        let signIn = heldOperation(entered: entered, release: release)
        signIn.name = "sign in"
        let guarded = BlockOperation {}
        guarded.addCondition(Contributing(contributed: signIn))
        queue.addOperation(guarded)
        await entered.wait()
        let waiter = Task(priority: .high) { await guarded.waitUntilFinished() }
        #expect(await eventuallyAsync { signIn._escalatedQuality == .userInitiated })
        release.open()
        await waiter.value
        #expect(guarded.isFinished && !guarded.isCancelled)
    }

    @Test("a high-priority task awaiting an operation in line for a category raises the category's holder")
    func categoryHolder() async {
        let queue = OperationQueue()
        let entered = TestGate(), release = TestGate()
        let holder = heldOperation(entered: entered, release: release)
        holder.addExclusivity("escalation-holder")
        queue.addOperation(holder)
        await entered.wait()
        let inLine = BlockOperation {}
        inLine.addExclusivity("escalation-holder")
        queue.addOperation(inLine)
        let waiter = Task(priority: .high) { await inLine.waitUntilFinished() }
        #expect(await eventuallyAsync { holder._escalatedQuality == .userInitiated })
        release.open()
        await waiter.value
    }

    @Test("an escalation reaches a dependency of a group's child and a child's contributed operation, transitively")
    func transitively() async {
        let queue = OperationQueue()
        queue.isSuspended = true
        let upstream = BlockOperation {}
        let child = BlockOperation {}
        child.addDependency(upstream)
        let signIn = BlockOperation {}
        let guardedChild = BlockOperation {}
        guardedChild.addCondition(Contributing(contributed: signIn))
        let group = GroupOperation(operations: [child, guardedChild])
        queue.addOperations([upstream, group], waitUntilFinished: false)
        let dependent = BlockOperation {}
        dependent.qualityOfService = .userInteractive
        dependent.addDependency(group)
        #expect(group._escalatedQuality == .userInteractive)
        #expect(child._escalatedQuality == .userInteractive)
        #expect(upstream._escalatedQuality == .userInteractive)
        #expect(guardedChild._escalatedQuality == .userInteractive)
        #expect(signIn._escalatedQuality == .userInteractive)
        queue.addOperation(dependent)
        queue.isSuspended = false
        await queue.waitUntilAllOperationsAreFinished()
    }
}
