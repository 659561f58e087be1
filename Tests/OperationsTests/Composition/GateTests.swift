import Operations
import OperationsComposition
import OperationsTestSupport
import Testing

/// Conditions and exclusivity categories are gates the engine keeps: consulted once the
/// dependencies have finished, never an operation of their own, and what they contribute
/// follows the guarded operation.
@Suite("Gates: conditions and categories")
struct GateTests {
    @Test("an operation a condition contributes joins the queue only after the guarded operation's own dependencies")
    func contributedAfterDependencies() {
        let fetch = BlockOperation {}
        let signIn = BlockOperation {}
        signIn.name = "sign in"
        let fetchDoneWhenSigningIn = Shared<Bool?>(nil)
        signIn.addExecutionBlock { fetchDoneWhenSigningIn.update { $0 = fetch.isFinished } }
        let guarded = BlockOperation {}
        guarded.addDependency(fetch)
        guarded.addCondition(BlockCondition(dependency: { _ in signIn }) { _ in true })
        let queue = OperationQueue()
        queue.addOperation(guarded)
        // The dependency is in no queue yet: nothing may have made the sign-in join.
        #expect(!queue.operations.contains { $0 === signIn }, "the contributed operation joined before the guarded operation's dependencies finished")
        #expect(!signIn.isExecuting && !signIn.isFinished)
        queue.addOperation(fetch)
        guarded.waitUntilFinished()
        #expect(fetchDoneWhenSigningIn() == true)
        #expect(guarded.outcome?.isSucceeded == true)
    }

    @Test("a condition that fails decides at once; the contributed operation nothing else needs is cancelled")
    func failureDecidesAtOnce() async {
        let hold = Gate()
        let slowStarted = TestGate()
        let slow = BlockOperation {}
        slow.name = "slow refresh"
        slow.addExecutionBlock {
            slowStarted.open()
            _ = hold.wait(timeout: 600)
        }
        let guarded = BlockOperation {}
        guarded.addCondition(BlockCondition(dependency: { _ in slow }) { _ in true })
        guarded.addCondition(BlockCondition(name: "quota") { _ async in
            await slowStarted.wait()
            return false
        })
        OperationQueue().addOperation(guarded)
        let outcome = await guarded.outcome(within: .seconds(60))
        #expect(outcome?.isCancelled == true, "the guarded operation waited for the contributed one: \(guarded.waitDescription)")
        #expect((outcome?.error as? ConditionFailedError)?.condition == "quota")
        #expect(slow.isCancelled, "the contributed operation nobody needs kept running")
        hold.open()
        await slow.waitUntilFinished()
    }

    @Test("cancelling the guarded operation cancels what its conditions contributed")
    func cancelCancelsContributed() async {
        let hold = Gate()
        let started = TestGate()
        let signIn = BlockOperation {}
        signIn.addExecutionBlock {
            started.open()
            _ = hold.wait(timeout: 600)
        }
        let guarded = BlockOperation {}
        guarded.addCondition(BlockCondition(dependency: { _ in signIn }) { _ in true })
        OperationQueue().addOperation(guarded)
        await started.wait()
        guarded.cancel()
        #expect(signIn.isCancelled, "the contributed operation kept running after its guarded operation was cancelled")
        hold.open()
        await guarded.waitUntilFinished()
        await signIn.waitUntilFinished()
    }

    @Test("a contributed operation another guarded operation still needs is not cancelled")
    func sharedContributedSurvives() async {
        let hold = Gate()
        let started = TestGate()
        let signIn = BlockOperation {}
        signIn.addExecutionBlock {
            started.open()
            _ = hold.wait(timeout: 600)
        }
        let first = BlockOperation {}, second = BlockOperation {}
        for guarded in [first, second] {
            guarded.addCondition(BlockCondition(dependency: { _ in signIn }) { _ in true })
        }
        let queue = OperationQueue()
        queue.addOperations([first, second], waitUntilFinished: false)
        await started.wait()
        first.cancel()
        #expect(!signIn.isCancelled)
        hold.open()
        await second.waitUntilFinished()
        #expect(second.outcome?.isSucceeded == true)
    }

    @Test("conditions and categories add nothing to the queue: operationCount, operations and events show only the user's operations")
    func nothingHidden() async {
        let evaluating = TestGate(), release = TestGate()
        let queue = OperationQueue()
        let seen = Shared<Set<ObjectIdentifier>>([])
        let subscription = queue.addEventHandler { event in seen.update { _ = $0.insert(ObjectIdentifier(event.operation)) } }
        let guarded = BlockOperation {}
        guarded.addCondition(BlockCondition { _ async in
            evaluating.open()
            await release.wait()
            return true
        })
        guarded.addExclusivity("gates-\(UInt64.random(in: 0...UInt64.max))")
        queue.addOperation(guarded)
        await evaluating.wait()
        #expect(queue.operationCount == 1)
        #expect(queue.operations.count == 1 && queue.operations.first === guarded)
        release.open()
        await queue.waitUntilAllOperationsAreFinished()
        #expect(seen() == [ObjectIdentifier(guarded)], "events named operations the user never added")
        subscription.cancel()
    }

    @Test("a dependency added after the categories were granted gives them back until it has finished")
    func laterDependencyReleasesCategory() async {
        let category = "gates-\(UInt64.random(in: 0...UInt64.max))"
        // A serial queue kept busy: the guarded operation is granted its category, then
        // waits for the slot.
        let busyRelease = Gate(), busyStarted = TestGate()
        let serial = OperationQueue()
        serial.maxConcurrentOperationCount = 1
        serial.addOperation {
            busyStarted.open()
            _ = busyRelease.wait(timeout: 600)
        }
        await busyStarted.wait()
        let guarded = BlockOperation {}
        guarded.addExclusivity(category)
        serial.addOperation(guarded)
        // Granted: an outsider in the same category waits.
        let outsider = BlockOperation {}
        outsider.addExclusivity(category)
        let other = OperationQueue()
        other.addOperation(outsider)
        #expect(outsider.waitReasons == [.exclusivity([category])])
        // A new dependency of the guarded operation: the category goes to the outsider.
        let later = BlockOperation {}
        guarded.addDependency(later)
        let outsiderOutcome = await outsider.outcome(within: .seconds(60))
        #expect(outsiderOutcome?.isSucceeded == true, "the category stayed with the guarded operation: \(outsider.waitDescription)")
        #expect(guarded.waitReasons.contains(.dependency(later, isInQueue: false)))
        other.addOperation(later)
        busyRelease.open()
        let guardedOutcome = await guarded.outcome(within: .seconds(60))
        #expect(guardedOutcome?.isSucceeded == true, "\(guarded.waitDescription)")
    }

    @Test("a suspended queue consults no gate: categories are asked for when it resumes")
    func suspendedQueueConsultsNothing() async {
        let category = "gates-\(UInt64.random(in: 0...UInt64.max))"
        let queue = OperationQueue()
        queue.isSuspended = true
        let guarded = BlockOperation {}
        guarded.addExclusivity(category)
        queue.addOperation(guarded)
        let outsider = BlockOperation {}
        outsider.addExclusivity(category)
        OperationQueue().addOperation(outsider)
        await outsider.waitUntilFinished()
        queue.isSuspended = false
        await guarded.waitUntilFinished()
        #expect(guarded.outcome?.isSucceeded == true)
    }

    @Test("a stall report names the condition and the operation it waits for")
    func waitReasonNamesCondition() {
        let signIn = BlockOperation {}
        signIn.name = "sign in"
        let guarded = BlockOperation {}
        guarded.addCondition(BlockCondition(name: "SignedIn", dependency: { _ in signIn }) { _ in true })
        let queue = OperationQueue()
        // The sign-in joins a suspended queue: the guarded operation waits for it.
        let signInQueue = OperationQueue()
        signInQueue.isSuspended = true
        signInQueue.addOperation(signIn)
        queue.addOperation(guarded)
        #expect(guarded.waitReasons == [.condition("SignedIn", waitsFor: signIn)])
        #expect(guarded.waitDescription.contains("SignedIn") && guarded.waitDescription.contains("\"sign in\""))
        signInQueue.isSuspended = false
        guarded.waitUntilFinished()
    }
}
