@_spi(Engine) @testable import Operations
import OperationsComposition
import OperationsTestSupport
import Testing

/// Conditions and exclusivity categories are gates the engine keeps: consulted once the
/// dependencies have finished, never an operation of their own, and what they contribute
/// follows the guarded operation.
@Suite("Gates: conditions and categories")
struct GateTests {
    /// An operation that, once started, opens `started` and blocks until `hold` opens.
    private func heldOperation() -> (BlockOperation, started: TestGate, hold: BlockingSignal) {
        let started = TestGate(), hold = BlockingSignal()
        return (blockOperationHeld(until: hold) { started.open() }, started, hold)
    }

    /// Cancels an operation whose condition contributes a held operation, once that one has
    /// started and `beforeCancel` has run on the guarded one, and checks that the
    /// cancellation reached the contributed operation.
    private func expectCancellationReachesContributed(
        beforeCancel: (BlockOperation) -> Void = { _ in }, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let (signIn, started, hold) = heldOperation()
        let guarded = BlockOperation {}
        guarded.addCondition(BlockCondition(dependency: { _ in signIn }) { _ in true })
        OperationQueue().addOperation(guarded)
        await started.wait()
        beforeCancel(guarded)
        guarded.cancel()
        #expect(
            signIn.isCancelled, "the contributed operation kept running after its guarded operation was cancelled",
            sourceLocation: sourceLocation)
        hold.open()
        await guarded.waitUntilFinished()
        await signIn.waitUntilFinished()
    }

    /// An operation in `category` whose condition holds until the returned gate opens,
    /// added to `queue`; returned once its condition is being evaluated.
    private func addHeldInItsCondition(
        category: String, to queue: OperationQueue
    ) async -> (BlockOperation, release: TestGate) {
        let evaluating = TestGate(), release = TestGate()
        let guarded = BlockOperation {}
        guarded.addCondition(BlockCondition { _ async in
            evaluating.open()
            await release.wait()
            return true
        })
        guarded.addExclusivity(category)
        queue.addOperation(guarded)
        await evaluating.wait()
        return (guarded, release)
    }

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
        let (slow, slowStarted, hold) = heldOperation()
        slow.name = "slow refresh"
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
        await expectCancellationReachesContributed()
    }

    @Test("a contributed operation another guarded operation still needs is not cancelled")
    func sharedContributedSurvives() async {
        let (signIn, started, hold) = heldOperation()
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
        let queue = OperationQueue()
        let seen = Shared<Set<ObjectIdentifier>>([])
        let subscription = queue.addEventHandler { event in seen.update { _ = $0.insert(ObjectIdentifier(event.operation)) } }
        let (guarded, release) = await addHeldInItsCondition(category: unique("gates"), to: queue)
        #expect(queue.operationCount == 1)
        #expect(queue.operations.count == 1 && queue.operations.first === guarded)
        release.open()
        await queue.waitUntilAllOperationsAreFinished()
        #expect(seen() == [ObjectIdentifier(guarded)], "events named operations the user never added")
        subscription.cancel()
    }

    @Test("a dependency added after the categories were granted gives them back until it has finished")
    func laterDependencyReleasesCategory() async {
        let category = unique("gates")
        // A serial queue kept busy: the guarded operation is granted its category, then
        // waits for the slot.
        let busyRelease = BlockingSignal(), busyStarted = TestGate()
        let serial = OperationQueue()
        serial.maxConcurrentOperationCount = 1
        serial.addOperation(blockOperationHeld(until: busyRelease) { busyStarted.open() })
        await busyStarted.wait()
        let guarded = BlockOperation {}
        guarded.addExclusivity(category)
        serial.addOperation(guarded)
        // Granted: an outsider in the same category waits.
        let outsider = BlockOperation {}
        outsider.addExclusivity(category)
        let other = OperationQueue()
        other.addOperation(outsider)
        #expect(outsider.waitReasons == [.gate(.exclusivity([category]))])
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

    @Test("a dependency added while the operation waits for its category is checked by its conditions again")
    func laterDependencyCheckedByConditions() async {
        let category = unique("gates")
        // An outsider holds the category: the guarded operation's conditions held, and it
        // waits for the category.
        let holderStarted = TestGate(), holderRelease = BlockingSignal()
        let holder = blockOperationHeld(until: holderRelease) { holderStarted.open() }
        holder.addExclusivity(category)
        OperationQueue().addOperation(holder)
        await holderStarted.wait()
        let ran = Shared(false)
        let guarded = BlockOperation { ran.update { $0 = true } }
        guarded.addCondition(NoFailedDependenciesCondition())
        guarded.addExclusivity(category)
        let queue = OperationQueue()
        queue.addOperation(guarded)
        #expect(guarded.waitReasons == [.gate(.exclusivity([category]))])
        // A dependency that fails, added now.
        let failing = ValueBlockOperation<Int> { throw TestError(code: 9) }
        guarded.addDependency(failing)
        queue.addOperation(failing)
        holderRelease.open()
        let outcome = await guarded.outcome(within: .seconds(60))
        #expect(outcome?.isCancelled == true, "the operation ran although a dependency added later failed")
        #expect(!ran())
    }

    @Test("a suspended queue consults no gate: categories are asked for when it resumes")
    func suspendedQueueConsultsNothing() async {
        let category = unique("gates")
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
        #expect(guarded.waitReasons == [.gate(.condition("SignedIn", waitsFor: signIn))])
        #expect(guarded.waitDescription.contains("SignedIn") && guarded.waitDescription.contains("\"sign in\""))
        signInQueue.isSuspended = false
        guarded.waitUntilFinished()
    }

    // MARK: Interleavings

    /// A dependency added to an admitted operation that finishes at once must find the gates
    /// closed again, so that its finish consults them. Forced: an `isReady` observer, told
    /// inside `addDependency`, lets the dependency finish before `addDependency` returns.
    @Test("a new dependency that finishes before the gates are released does not strand the operation")
    func dependencyFinishingBeforeRelease() {
        let busyRelease = BlockingSignal(), busyStarted = BlockingSignal()
        let serial = OperationQueue()
        serial.maxConcurrentOperationCount = 1
        serial.addOperation(blockOperationHeld(until: busyRelease) { busyStarted.open() })
        _ = busyStarted.wait()
        let guarded = BlockOperation {}
        guarded.addCondition(BlockCondition { _ in true })
        serial.addOperation(guarded) // admitted at once, in the ready list behind the busy one
        let depRelease = BlockingSignal()
        let dependency = blockOperationHeld(until: depRelease)
        OperationQueue().addOperation(dependency)
        let armed = Shared(false)
        let observation = guarded.observe(\.isReady, options: [.new]) { _, _ in
            guard armed.update({ let was = $0; $0 = false; return was }) else { return }
            // Runs inside addDependency, after the edge is counted, before the gates are released.
            depRelease.open()
            dependency.waitUntilFinished()
        }
        armed.update { $0 = true }
        let done = BlockingSignal()
        guarded.completionBlock = { done.open() }
        guarded.addDependency(dependency)
        busyRelease.open()
        #expect(done.wait(timeout: 10), "stranded: \(guarded.waitDescription)")
        observation.invalidate()
    }

    /// Contributed operations join at the first consultation, which may come after a barrier
    /// added after the guarded operation: they go ahead of it, as the guarded operation does
    /// (waiting for it would close the cycle barrier → guarded → contributed → barrier).
    @Test("a barrier added after a guarded operation does not deadlock with the operation its condition contributes")
    func barrierAfterGuarded() {
        let queue = OperationQueue()
        let dependency = BlockOperation {}
        let signIn = BlockOperation {}
        let guarded = BlockOperation {}
        guarded.addDependency(dependency)
        guarded.addCondition(BlockCondition(dependency: { _ in signIn }) { _ in true })
        queue.addOperation(guarded)
        let barrierRan = BlockingSignal()
        queue.addBarrierBlock { barrierRan.open() }
        OperationQueue().addOperation(dependency)
        #expect(barrierRan.wait(timeout: 10), "deadlock: \(guarded.waitDescription) / \(signIn.waitDescription)")
    }

    /// The end of the gates (cancel, finish) reaches every gate ever consulted, also when a
    /// later dependency ended the round in which they were.
    @Test("cancelling after a later dependency still cancels what the conditions contributed")
    func cancelAfterLaterDependency() async {
        await expectCancellationReachesContributed { guarded in guarded.addDependency(BlockOperation {}) }
    }

    /// A cancellation while the contributed operations join must reach all of them. Forced:
    /// an enqueue hook cancels the guarded operation when the first one joins.
    @Test("a cancellation while the contributed operations join cancels all of them")
    func cancelDuringJoin() {
        let queue = OperationQueue()
        let first = BlockOperation {}, second = BlockOperation {}
        let guarded = BlockOperation {}
        guarded.addCondition(BlockCondition(dependency: { _ in first }) { _ in true })
        guarded.addCondition(BlockCondition(dependency: { _ in second }) { _ in true })
        // Stands for another thread cancelling at that moment.
        let subscription = queue.addEnqueueHook { operation in
            if operation === first { guarded.cancel() }
        }
        queue.addOperation(guarded)
        guarded.waitUntilFinished()
        queue.waitUntilAllOperationsAreFinished()
        #expect(first.isCancelled)
        #expect(second.isCancelled, "the second contributed operation ran for a cancelled operation")
        subscription.cancel()
    }

    /// A condition decided after the queue was suspended must not hand over to the
    /// exclusivity gate: a category is not taken for work that cannot start.
    @Test("a queue suspended while a condition is evaluated takes no category")
    func suspendedDuringCondition() async {
        let category = unique("gates")
        let queue = OperationQueue()
        let (guarded, release) = await addHeldInItsCondition(category: category, to: queue)
        queue.isSuspended = true
        release.open()
        // Decided: either the gates opened, or the exclusivity gate waits for the resumption.
        #expect(eventually { guarded.isReady || guarded.waitReasons.contains(.gate(.exclusivity([category]))) })
        let outsider = BlockOperation {}
        outsider.addExclusivity(category)
        OperationQueue().addOperation(outsider)
        let outcome = await outsider.outcome(within: .seconds(10))
        #expect(outcome?.isSucceeded == true, "the suspended queue's operation holds the category: \(outsider.waitDescription)")
        queue.isSuspended = false
        await guarded.waitUntilFinished()
    }

    /// A suspended queue keeps an operation for its resumption only when its gates are due,
    /// once: not at every readiness change (one per finished dependency).
    @Test("a suspended queue keeps one entry per gated operation")
    func gatedWhileSuspendedGrows() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let guarded = BlockOperation {}
        guarded.addCondition(BlockCondition { _ in true })
        let dependencies = (0..<200).map { _ in BlockOperation {} }
        for dependency in dependencies { guarded.addDependency(dependency) }
        queue.addOperation(guarded)
        OperationQueue().addOperations(dependencies, waitUntilFinished: true)
        let held = queue.core.withLock { $0.suspension.gatedCount }
        #expect(held <= 1, "gatedWhileSuspended holds \(held) entries for one operation")
        queue.isSuspended = false
        guarded.waitUntilFinished()
    }

    /// A gate of the engine alone (no condition, no category) that keeps its passes for
    /// the test to admit, until their round ends (a pass holds its operation, which holds
    /// the gate).
    /// - Note: `@unchecked Sendable`: its passes are in a `Shared`, which has a lock.
    private final class KeptPassGate: OperationGate, @unchecked Sendable {
        let passes = Shared<[GatePass]>([])
        let consulted = BlockingSignal()
        var rank: Int { 0 }
        func consult(_ pass: GatePass) {
            passes.update { $0.append(pass) }
            consulted.open()
        }
        func release(_ pass: GatePass, because reason: GateRelease) {
            passes.update { $0.removeAll { $0.round == pass.round } }
        }
    }

    @Test("a gate deciding when its queue is suspended can have the resumption call it back; in no suspended queue it is not deferred")
    func deferUntilQueueResumes() {
        let gate = KeptPassGate()
        let guarded = BlockOperation {}
        #expect(guarded._gate(KeptPassGate.self, orAdd: { gate }) === gate)
        let queue = OperationQueue()
        queue.addOperation(guarded)
        #expect(gate.consulted.wait())
        let pass = gate.passes()[0]
        let deferredWhileRunning = pass.deferIfQueueSuspended { Issue.record("called back without a suspension") }
        #expect(!deferredWhileRunning)
        queue.isSuspended = true
        let resumed = Shared(0)
        let deferred = pass.deferIfQueueSuspended { resumed.update { $0 += 1 } }
        #expect(deferred)
        #expect(resumed() == 0, "called back while the queue is suspended")
        queue.isSuspended = false
        #expect(resumed() == 1, "not called back once by the resumption (it runs on the resuming thread)")
        queue.isSuspended = true
        queue.isSuspended = false
        #expect(resumed() == 1, "called back by a later resumption")
        pass.admit()
        guarded.waitUntilFinished()
        #expect(guarded.outcome?.isSucceeded == true)
    }

    /// The operations a child's conditions contribute join the group as children when the
    /// child's conditions are consulted (the group running, the child's dependencies done):
    /// the group counts them and finishes after them. A cancelled child consults nothing,
    /// so nothing joins a group that may be closing.
    @Test("the operations a child's conditions contribute join the group as children, and the group finishes after them")
    func contributedJoinGroup() {
        let signIn = BlockOperation {}
        let child = BlockOperation {}
        child.addCondition(BlockCondition(dependency: { _ in signIn }) { _ in true })
        let group = GroupOperation()
        group.addChild(child)
        #expect(!group.children.contains { $0 === signIn }, "joined before the group ran")
        OperationQueue().addOperation(group)
        group.waitUntilFinished()
        #expect(group.children.contains { $0 === signIn })
        #expect(signIn.isFinished && child.isFinished)
    }

    /// A contributed operation that fails is its condition's business (a condition
    /// may accept stale data); it does not fail the group.
    @Test("a contributed operation's failure does not fail the group; the condition decides")
    func contributedFailureIsTheConditions() {
        let refresh = ValueBlockOperation<Int> { throw TestError(code: 7) }
        let child = BlockOperation {}
        child.addCondition(BlockCondition(dependency: { _ in refresh }) { _ in true })
        let group = GroupOperation(operations: [child])
        OperationQueue().addOperation(group)
        group.waitUntilFinished()
        #expect(refresh.outcome?.isFailed == true)
        #expect(child.outcome?.isSucceeded == true)
        #expect(group.outcome?.isSucceeded == true, "\(String(describing: group.outcome))")
    }
}
