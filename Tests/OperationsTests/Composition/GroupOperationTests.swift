import Operations
import OperationsComposition
import OperationsTestSupport
import Testing
import TestTraits

/// A child whose first `cancel()` stops inside, after the base cancel, until released.
private final class SlowCancel: BlockOperation, @unchecked Sendable {
    // `@unchecked Sendable`: the gates and the flag are Sendable; nothing else is stored.
    let inCancel = BlockingSignal(), proceed = BlockingSignal()
    let first = Shared(true)
    override func cancel() {
        super.cancel()
        if takeOnce(first) {
            inCancel.open()
            _ = proceed.wait(timeout: 600)
        }
    }
}

/// A child that records its completion block, so that tests can check finish order.
private func recorded(_ name: String, into log: Shared<[String]>, _ body: @escaping @Sendable () -> Void = {}) -> BlockOperation {
    let operation = BlockOperation(block: body)
    operation.name = name
    operation.completionBlock = { log.append(name) }
    return operation
}

/// Whether `other` was cancelled when the cancellation of `observed` was first announced
/// (its `.prior` notification of `isCancelled`), nil until then; and the observer, which the
/// test removes from `observed` at its end.
private func wasCancelled(
    _ other: Operation, whenTheCancellationOf observed: Operation
) -> (Shared<Bool?>, CallbackObserver) {
    let wasCancelled = Shared<Bool?>(nil)
    let observer = CallbackObserver { _, change in
        guard change.isPrior, wasCancelled() == nil else { return }
        wasCancelled.update { $0 = other.isCancelled }
    }
    observed.addObserver(observer, forKeyPath: "isCancelled", options: [.prior], context: nil)
    return (wasCancelled, observer)
}

@Suite("GroupOperation", .timeLimit(.minutes(3)))
struct GroupOperationTests {
    @Test("finishes after every child, after their completion blocks")
    func finishesAfterChildren() {
        let log = Shared<[String]>([])
        let group = GroupOperation(operations: [recorded("a", into: log), recorded("b", into: log)])
        group.completionBlock = { log.append("group") }
        let queue = OperationQueue()
        queue.addOperation(group)
        group.waitUntilFinished()
        #expect(log().count == 3)
        #expect(log().last == "group")
        #expect(group.outcome?.isCancelled == false)
        #expect(group.outcome?.error == nil)
    }

    @Test("addOperation and addOperations add children (the WWDC sample's spelling)")
    func addOperationSpelling() {
        let ran = Shared(0)
        let group = GroupOperation()
        group.addOperation(BlockOperation { ran.increment() })
        group.addOperations([BlockOperation { ran.increment() }, BlockOperation { ran.increment() }])
        OperationQueue().addOperation(group)
        group.waitUntilFinished()
        #expect(ran() == 3)
        #expect(group.children.count == 3)
    }

    @Test("an empty group finishes")
    func empty() {
        let group = GroupOperation()
        OperationQueue().addOperation(group)
        group.waitUntilFinished()
        guard case .succeeded? = group.outcome else { Issue.record("outcome \(String(describing: group.outcome))"); return }
    }

    @Test("children wait until the group starts")
    func childrenWaitForGroup() {
        let ran = Shared(0)
        let child = BlockOperation { ran.increment() }
        let group = GroupOperation(operations: [child])
        let blocker = BlockOperation {}
        group.addDependency(blocker)
        let queue = OperationQueue()
        queue.addOperation(group)
        // The group's queue is suspended until the group starts: the child cannot run.
        #expect(child.waitReasons.contains { if case .queueSuspended = $0 { true } else { false } })
        #expect(ran() == 0)
        queue.addOperation(blocker)
        group.waitUntilFinished()
        #expect(ran() == 1)
    }

    @Test("children added while it runs (a child producing more) are waited for")
    func childrenAddedWhileRunning() {
        let log = Shared<[String]>([])
        let group = GroupOperation()
        let release = BlockingSignal()
        let producer = BlockOperation { [unowned group] in
            group.addChild(recorded("produced", into: log) { release.wait() })
        }
        producer.completionBlock = { log.append("producer") }
        group.addChild(producer)
        group.completionBlock = { log.append("group") }
        OperationQueue().addOperation(group)
        #expect(eventually { log().contains("producer") })
        #expect(!group.isFinished)
        release.open()
        group.waitUntilFinished()
        #expect(log() == ["producer", "produced", "group"])
    }

    @Test("cancelling the group cancels its children with the same reason; it finishes after them")
    func cancelPropagatesReason() {
        let log = Shared<[String]>([])
        let started = BlockingSignal()
        let running = recorded("running", into: log)
        running.addExecutionBlock { [unowned running] in
            started.open()
            while !running.isCancelled { usleep(100) }
        }
        let waiting = recorded("waiting", into: log)
        let group = GroupOperation(operations: [running, waiting])
        group.maxConcurrentChildCount = 1
        group.completionBlock = { log.append("group") }
        OperationQueue().addOperation(group)
        #expect(started.wait())
        group.cancel(with: TestError(code: 7))
        group.waitUntilFinished()
        for child in [running, waiting] {
            guard case .cancelled(let reason as TestError)? = child.outcome else {
                Issue.record("\(child.name!): \(String(describing: child.outcome))"); continue
            }
            #expect(reason.code == 7)
        }
        guard case .cancelled(let reason as TestError)? = group.outcome else { Issue.record("group \(String(describing: group.outcome))"); return }
        #expect(reason.code == 7)
        #expect(log().last == "group")
        #expect(group.errors.isEmpty)
    }

    @Test("a group cancelled before it starts still finishes after its (cancelled) children")
    func cancelledBeforeStart() {
        let log = Shared<[String]>([])
        let ran = Shared(0)
        let child = recorded("child", into: log) { ran.increment() }
        let group = GroupOperation(operations: [child])
        group.completionBlock = { log.append("group") }
        group.cancel()
        OperationQueue().addOperation(group)
        group.waitUntilFinished()
        #expect(ran() == 0)
        #expect(child.isCancelled && child.isFinished)
        #expect(log() == ["child", "group"])
        #expect(group.outcome?.isCancelled == true)
    }

    /// `first` runs (and ignores the cancellation) until the gate opens: the group, cancelled,
    /// still waits for it when `late` joins. Cancelled before it ran, `first` would finish
    /// at once, and the group with it, before `late` could join.
    @Test("a child added to a cancelled group is cancelled as it joins")
    func addToCancelledGroup() {
        let started = BlockingSignal(), gate = BlockingSignal()
        let first = BlockOperation {
            started.open()
            gate.wait()
        }
        let group = GroupOperation(operations: [first])
        OperationQueue().addOperation(group)
        #expect(started.wait())
        group.cancel(with: TestError(code: 3))
        let late = BlockOperation {}
        group.addChild(late)
        gate.open()
        group.waitUntilFinished()
        guard case .cancelled(let reason as TestError)? = late.outcome else { Issue.record("\(String(describing: late.outcome))"); return }
        #expect(reason.code == 3)
    }

    @Test("failing children fail the group: all errors kept, the first is the group's error")
    func failuresKept() {
        let group = GroupOperation(operations: [
            ValueBlockOperation<Int> { throw TestError(code: 1) },
            ValueBlockOperation { 5 },
            ValueBlockOperation<Int> { throw TestError(code: 2) },
        ])
        group.maxConcurrentChildCount = 1
        OperationQueue().addOperation(group)
        group.waitUntilFinished()
        #expect(group.errors.compactMap { ($0 as? TestError)?.code } == [1, 2])
        guard case .failed(let error as TestError)? = group.outcome else { Issue.record("\(String(describing: group.outcome))"); return }
        #expect(error.code == 1)
        #expect(group.children.allSatisfy { $0.isFinished })
    }

    @Test("failFast cancels the other children with the first error")
    func failFast() {
        let ran = Shared(0)
        let failing = ValueBlockOperation<Int> { throw TestError(code: 9) }
        let later = BlockOperation { ran.increment() }
        let group = GroupOperation(operations: [failing, later], failurePolicy: .failFast)
        group.maxConcurrentChildCount = 1
        OperationQueue().addOperation(group)
        group.waitUntilFinished()
        #expect(ran() == 0)
        guard case .cancelled(let reason as TestError)? = later.outcome else { Issue.record("\(String(describing: later.outcome))"); return }
        #expect(reason.code == 9)
        // The children it cancelled are not failures of their own.
        #expect(group.errors.count == 1)
        guard case .failed(let error as TestError)? = group.outcome else { Issue.record("\(String(describing: group.outcome))"); return }
        #expect(error.code == 9)
    }

    @Test("progress counts finished children by weight")
    func progressWeighted() {
        let gate = BlockingSignal()
        let light = BlockOperation {}
        let heavy = BlockOperation { gate.wait() }
        let group = GroupOperation()
        group.addChild(light, weight: 1)
        group.addChild(heavy, weight: 3)
        #expect(group.progress.totalUnitCount == 4)
        OperationQueue().addOperation(group)
        #expect(eventually { group.progress.completedUnitCount == 1 })
        #expect(group.progress.fractionCompleted == 0.25)
        gate.open()
        group.waitUntilFinished()
        #expect(group.progress.completedUnitCount == 4)
        #expect(group.progress.fractionCompleted == 1)
    }

    @Test("nested groups finish children first, at every level")
    func nestedOrder() {
        for _ in 0..<20 {
            let log = Shared<[String]>([])
            let inner = GroupOperation(operations: [recorded("a", into: log), recorded("b", into: log)])
            inner.completionBlock = { log.append("inner") }
            let outer = GroupOperation(operations: [inner, recorded("c", into: log)])
            outer.completionBlock = { log.append("outer") }
            OperationQueue().addOperation(outer)
            outer.waitUntilFinished()
            let order = log()
            #expect(order.last == "outer")
            let innerAt = order.firstIndex(of: "inner")!
            #expect(order.firstIndex(of: "a")! < innerAt && order.firstIndex(of: "b")! < innerAt)
        }
    }

    @Test("the children's queue can be suspended by the user")
    func suspension() {
        let ran = Shared(0)
        let group = GroupOperation()
        group.isChildQueueSuspended = true
        group.addChild(BlockOperation { ran.increment() })
        OperationQueue().addOperation(group)
        #expect(eventually { group.isExecuting })
        #expect(ran() == 0)
        group.isChildQueueSuspended = false
        group.waitUntilFinished()
        #expect(ran() == 1)
    }

    @Test("a typed group delivers its children's values in the order added")
    func typedValues() async throws {
        let group = ValueGroupOperation<Int>([
            AsyncBlockOperation { () async -> Int in 1 },
            ValueBlockOperation { 2 },
        ])
        group.addChild(ValueBlockOperation { 3 })
        group.addOperation(ValueBlockOperation { 4 })
        OperationQueue().addOperation(group)
        #expect(try await group.values == [1, 2, 3, 4])
    }

    @Test("a typed group throws its first child's error")
    func typedFailure() async {
        let group = ValueGroupOperation<Int>([ValueBlockOperation { throw TestError(code: 4) }])
        OperationQueue().addOperation(group)
        await #expect(throws: TestError(code: 4)) { try await group.values }
    }

    @Test("adding a child to a finished group stops with a message naming the group", .oneExitTestAtATime)
    func addAfterFinish() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let group = GroupOperation()
            group.name = "closed group"
            OperationQueue().addOperation(group)
            group.waitUntilFinished()
            group.addChild(Operation())
        }.map { $0.standardErrorContent.containsText("\"closed group\"", "cannot join") }.check()
    }

    /// A group cancelled while it is being started must not finish at once, without its
    /// children, leaving them in its suspended queue forever: it finishes after them.
    /// Forced: a `.prior` observer of the group's `isExecuting` cancels the group when
    /// `start()` announces that it begins executing, so the cancellation lands after the
    /// start's checks read "not cancelled".
    @Test("a group cancelled while it starts still finishes after its children", arguments: [false, true])
    func cancelledWhileStarting(withReason: Bool) {
        let child = BlockOperation {}
        child.name = "child"
        let group = GroupOperation(operations: [child])
        group.name = "group"
        let armed = Shared(true)
        let observer = CallbackObserver { _, change in
            guard change.isPrior, takeOnce(armed) else { return }
            if withReason { group.cancel(with: TestError(code: 7)) } else { group.cancel() }
        }
        group.addObserver(observer, forKeyPath: "isExecuting", options: [.prior], context: nil)
        OperationQueue().addOperation(group)
        group.waitUntilFinished()
        #expect(!armed(), "the hook did not fire: start() announced no isExecuting change")
        #expect(child.isFinished, "the group finished before its child: \(child.waitDescription)")
        #expect(group.outcome?.isCancelled == true)
        if !child.isFinished { child.cancel() }
        group.removeObserver(observer, forKeyPath: "isExecuting")
    }

    /// Cancelling a group cancels its children newest first, as `cancelAllOperations()`
    /// does: a later stage is cancelled before the stage it waits for, so the cancelled
    /// earlier stage's finish can never start it. Forced: a `.prior` observer of the first
    /// child's `isCancelled` looks at the second child when the first one's cancellation is
    /// announced.
    @Test("cancelling a group cancels its children newest first")
    func cancelsNewestFirst() {
        let started = BlockingSignal(), release = BlockingSignal()
        let first = blockOperationHeld(until: release) { started.open() }
        let second = BlockOperation {}
        second.addDependency(first)
        let group = GroupOperation(operations: [first, second])
        let (secondWasCancelled, observer) = wasCancelled(second, whenTheCancellationOf: first)
        OperationQueue().addOperation(group)
        #expect(started.wait())
        group.cancel()
        release.open()
        group.waitUntilFinished()
        #expect(secondWasCancelled() == true, "the first child's cancellation was announced before the second child was cancelled")
        first.removeObserver(observer, forKeyPath: "isCancelled")
    }

    /// Forced: the running child's `cancel()` ends its body, then waits until the child
    /// queued after it (made before it, so earlier in the dependency order) either ran its
    /// work or finished. A queued child not cancelled by then takes the freed slot and runs.
    @Test("cancelling a group cancels its queued children before its running one: none runs in a slot a cancelled child frees")
    func cancelsQueuedChildrenFirst() {
        let ran = Shared<[String]>([])
        let (queued, queuedSettled) = operationLoggingItsWork("queued", to: ran)
        let running = CancelEndsBodyOperation { #expect(queuedSettled.wait(), "the queued child neither ran nor finished") }
        let queuedLater = BlockOperation { ran.append("queued later") }
        let group = GroupOperation(operations: [running, queued, queuedLater])
        group.maxConcurrentChildCount = 1
        OperationQueue().addOperation(group)
        #expect(running.bodyStarted.wait())
        group.cancel()
        group.waitUntilFinished()
        #expect(ran() == [], "queued children ran their work after their group was cancelled")
        #expect([running, queued, queuedLater].allSatisfy { $0.isCancelled && $0.isFinished })
        #expect(group.outcome?.isCancelled == true)
    }

    /// `cancel()` makes the group ready before it cancels the children; a start in between
    /// must not open the children's queue with the children not yet cancelled, letting them
    /// run their work inside a group reported cancelled. Forced: the group waits in a
    /// suspended queue; an observer of its `isCancelled` (after the change, before
    /// `cancel()` reaches the children) resumes the queue and waits until the child has
    /// finished.
    @Test("children of a group started while it is being cancelled are cancelled, never run")
    func startedDuringCancel() {
        let ran = Shared(false)
        let child = BlockOperation { ran.update { $0 = true } }
        let group = GroupOperation(operations: [child])
        let queue = OperationQueue()
        queue.isSuspended = true
        queue.addOperation(group)
        let armed = Shared(true)
        let observer = CallbackObserver { _, change in
            guard !change.isPrior, takeOnce(armed) else { return }
            queue.isSuspended = false
            _ = eventually { child.isFinished }
        }
        group.addObserver(observer, forKeyPath: "isCancelled", options: [], context: nil)
        group.cancel()
        group.waitUntilFinished()
        #expect(!armed(), "the hook did not fire")
        #expect(!ran(), "the child ran its work inside a cancelled group")
        #expect(child.isCancelled)
        group.removeObserver(observer, forKeyPath: "isCancelled")
    }

    /// "Newest first" does not go by the order children were added alone: a later stage
    /// added before the stage it waits for must still be cancelled before it, or the
    /// earlier stage's cancelled finish could start it. Dependents first, whatever the
    /// order added. Forced: a `.prior` observer of the later stage's `isCancelled` looks at
    /// the earlier stage when the later one's cancellation is announced.
    @Test("cancelling a group cancels dependents before what they wait for, whatever the order added")
    func cancelsDependentsFirst() {
        let gate = BlockOperation {}   // never runs: the first stage waits for it
        let first = BlockOperation {}
        first.addDependency(gate)
        let second = BlockOperation {}
        second.addDependency(first)
        let group = GroupOperation(operations: [second, first])
        let (firstWasCancelled, observer) = wasCancelled(first, whenTheCancellationOf: second)
        OperationQueue().addOperation(group)
        // Running: its cancellation is the only pass over the children (a cancelled start would
        // make a second one, concurrently).
        #expect(eventually { group.isExecuting })
        group.cancel()
        group.waitUntilFinished()
        #expect(firstWasCancelled() == false, "the earlier stage was cancelled before the stage that waits for it")
        #expect(second.isCancelled)
        second.removeObserver(observer, forKeyPath: "isCancelled")
    }

    /// An operation a child's condition contributes (a "sign in") goes to the group's
    /// queue and joins as a child (weight 0: it adds no unit to the group's progress), so
    /// the group's cancellation reaches it and the group does not finish while it still
    /// runs. Deterministic: the contributed operation is held on a gate while the group is
    /// cancelled and its guarded child finishes.
    @Test("an operation a child's condition contributes is a child: cancelled with the group, finished before it")
    func contributedOperationsAreChildren() {
        let started = BlockingSignal(), release = BlockingSignal()
        let signIn = blockOperationHeld(until: release) { started.open() }
        signIn.name = "sign in"
        let guarded = BlockOperation {}
        guarded.addCondition(BlockCondition(dependency: { _ in signIn }) { _ in true })
        let group = GroupOperation(operations: [guarded])
        OperationQueue().addOperation(group)
        #expect(started.wait())
        group.cancel(with: TestError(code: 9))
        #expect(eventually { guarded.isFinished })
        #expect(signIn.isCancelled, "the group's cancellation did not reach the contributed operation")
        #expect(!group.isFinished, "the group finished while the contributed operation still ran")
        #expect(group.children.contains { $0 === signIn })
        release.open()
        group.waitUntilFinished()
        #expect(signIn.isFinished)
        #expect(group.progress.totalUnitCount == 1)
    }

    /// A group's progress must not read 3 of 4 when the group finishes, as it would if a
    /// child counted its unit after the decision that the last child had finished (a
    /// window hit in about 0.5% of unforced runs). Forced: a `.prior` observer of the
    /// group's `completedUnitCount` holds the first child's count back until the other
    /// child has finished.
    @Test("a group's progress is complete when it finishes")
    func progressCompleteAtFinish() {
        let releaseSecond = BlockingSignal()
        let first = BlockOperation {}
        let second = BlockOperation { _ = releaseSecond.wait(timeout: 600) }
        let group = GroupOperation(operations: [first, second])
        let atFinish = Shared<Int64?>(nil)
        group.completionBlock = { atFinish.update { $0 = group.progress.completedUnitCount } }
        let armed = Shared(true)
        let observer = CallbackObserver { _, change in
            guard change.isPrior, takeOnce(armed) else { return }
            releaseSecond.open()
            // Returns once the second child's finish hooks have run (the group's hook was
            // registered first, so it runs before this waiter is woken): had the second
            // finish closed the group, the completion block has read the count by now.
            second.waitUntilFinished()
        }
        group.progress.addObserver(observer, forKeyPath: "completedUnitCount", options: [.prior], context: nil)
        OperationQueue().addOperation(group)
        group.waitUntilFinished()
        #expect(eventually { atFinish() != nil })
        #expect(atFinish() == 2, "the group finished with \(atFinish().map(String.init) ?? "?") of 2 units counted")
        group.progress.removeObserver(observer, forKeyPath: "completedUnitCount")
    }

    @Test("a condition added to a child after it joined its group stops with a message naming the group", .oneExitTestAtATime)
    func conditionAfterJoining() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let child = BlockOperation {}
            child.name = "late child"
            let group = GroupOperation(operations: [child])
            group.name = "the group"
            child.addCondition(.noFailedDependencies)
        }.map { $0.standardErrorContent.containsText("\"late child\"", "\"the group\"", "addCondition") }.check()
    }

    @Test("Outcome says succeeded, failed or cancelled")
    func outcomeKinds() {
        let succeeded = BlockOperation {}
        let failed = ValueBlockOperation<Int> { throw TestError(code: 1) }
        let cancelled = BlockOperation {}
        cancelled.cancel()
        let queue = OperationQueue()
        queue.addOperations([succeeded, failed, cancelled], waitUntilFinished: true)
        #expect(succeeded.outcome?.isSucceeded == true && succeeded.outcome?.isFailed == false)
        #expect(failed.outcome?.isFailed == true && failed.outcome?.isSucceeded == false)
        #expect(cancelled.outcome?.isCancelled == true && cancelled.outcome?.isSucceeded == false && cancelled.outcome?.isFailed == false)
    }

    /// `cancel()` takes the children under the group's lock and cancels them after it; a
    /// start in between must not take "already being cancelled" as done, cancel nobody
    /// and open the queue: a child not reached yet must not run. Forced: the first child
    /// cancelled (the newest) stops inside its `cancel()` while the suspended queue is
    /// resumed.
    @Test("a group started while another thread is still cancelling its children runs none of them")
    func startDuringChildCancellation() {
        let ran = Shared(false)
        let victim = BlockOperation { ran.update { $0 = true } }
        let slow = SlowCancel()
        let group = GroupOperation(operations: [victim, slow])
        let queue = OperationQueue()
        queue.isSuspended = true
        queue.addOperation(group)
        let cancelled = BlockingSignal()
        Thread.detachNewThread {
            group.cancel()
            cancelled.open()
        }
        #expect(slow.inCancel.wait())
        queue.isSuspended = false
        #expect(eventually { victim.isFinished })
        slow.proceed.open()
        #expect(cancelled.wait())
        group.waitUntilFinished()
        #expect(!ran(), "a child ran inside a cancelled group")
        #expect(victim.isCancelled)
    }
}

/// What a child adds to its own queue (`OperationQueue.current`, the group's queue) is a child
/// of the group, as in ProcedureKit: the group finishes after it.
@Suite("Groups: operations added to the group's queue")
struct GroupQueueAdditionTests {
    @Test("an operation a child adds to OperationQueue.current is a child: the group finishes after it")
    func addedToCurrentQueueIsChild() async {
        let started = TestGate(), release = BlockingSignal()
        let added = Shared<Operation?>(nil)
        let child = BlockOperation {
            let operation = blockOperationHeld(until: release) { started.open() }
            added.update { $0 = operation }
            OperationQueue.current!.addOperation(operation)
        }
        let group = GroupOperation(operations: [child])
        OperationQueue().addOperation(group)
        await started.wait()
        await child.waitUntilFinished()
        // The group decides when its last child has finished, before this wait returns.
        #expect(!group.isFinished, "the group finished while an operation added to its queue still ran")
        release.open()
        await group.waitUntilFinished()
        let operation = added()!
        #expect(operation.isFinished)
        #expect(group.children.contains { $0 === operation })
    }

    @Test("blocks, batches and async bodies added to the group's queue are children too")
    func everyWayOfAdding() async {
        let ran = Shared(0)
        let child = BlockOperation {
            let queue = OperationQueue.current!
            queue.addOperation { ran.update { $0 += 1 } }
            queue.addOperations([BlockOperation { ran.update { $0 += 1 } }], waitUntilFinished: false)
            _ = queue.addOperation { () async -> Int in
                ran.update { $0 += 1 }
                return 1
            }
        }
        let group = GroupOperation(operations: [child])
        OperationQueue().addOperation(group)
        await group.waitUntilFinished()
        #expect(ran() == 3, "the group finished before what its child added to its queue ran")
        #expect(group.children.count == 4)
    }
}

@Suite("Small things a newcomer reads")
struct ReadableMessagesTests {
    @Test("an outcome reads as succeeded, failed: <error>, cancelled, or cancelled: <reason>")
    func outcomeDescription() {
        #expect(String(describing: Operation.Outcome.succeeded) == "succeeded")
        #expect(String(describing: Operation.Outcome.cancelled(reason: nil)) == "cancelled")
        #expect(String(describing: Operation.Outcome.cancelled(reason: CancellationError())) == "cancelled: CancellationError()")
        #expect(String(describing: Operation.Outcome.failed(TestError(code: 3))).hasPrefix("failed: "))
    }

    @Test("a failed condition's error quotes the condition's name")
    func conditionNameQuoted() {
        let operation = BlockOperation {}
        operation.name = "upload"
        operation.addCondition(BlockCondition(name: "has quota") { _ in false })
        OperationQueue().addOperation(operation)
        operation.waitUntilFinished()
        let description = operation.outcome?.error.map { String(describing: $0) } ?? ""
        #expect(description.hasPrefix("condition \"has quota\" of operation \"upload\""), "\(description)")
    }

    @Test("messages about a group's queue name the group")
    func groupQueueNamedAfterGroup() {
        let child = BlockOperation {}
        let group = GroupOperation(operations: [child])
        group.name = "upload"
        #expect(child.waitDescription.contains("\"upload children\""), "\(child.waitDescription)")
    }
}

@Suite("Typed groups: every way of adding a child")
struct ValueGroupAddingTests {
    @Test("values of typed children added by addChildren, produceOperation and the group's queue are delivered")
    func everyWayDelivers() async throws {
        let group = ValueGroupOperation<Int>()
        group.addChildren([ValueBlockOperation { 1 }, ValueBlockOperation { 2 }])
        let producer = ValueBlockOperation<Int> { 10 }
        let produced = ValueBlockOperation<Int> { 20 }
        producer.addObserver(BlockObserver(didStart: { $0.produceOperation(produced) }))
        group.addChild(producer)
        OperationQueue().addOperation(group)
        let values = try await group.values
        #expect(values.sorted() == [1, 2, 10, 20])
    }
}


@Suite("Groups that never run")
struct UnrunGroupTests {
    /// A token whose release the test can see.
    private final class Token: Sendable {}

    @Test("a group dropped without ever being added to a queue releases its children and what their blocks capture")
    func droppedGroupReleasesChildren() {
        weak var weakChild: Operation?
        weak var weakToken: Token?
        do {
            let token = Token()
            weakToken = token
            let child = BlockOperation { _ = token }
            weakChild = child
            _ = GroupOperation(operations: [child])
        }
        #expect(eventually { weakChild == nil && weakToken == nil }, "the children of a dropped group stayed alive")
    }
}

/// One at a time: each runs thousands of groups in a child process, which under a
/// sanitizer takes a processor for a long while.
///
/// The child process must not exit while a level is being deallocated on another thread:
/// `waitUntilFinished()` returns before the queue's threads have let go of the groups, and the
/// last of them to do so releases what it held (thousands of levels) while the process may be
/// exiting. Under `--sanitize=address`, the leak check at exit would then find a group whose
/// queue of children is gone but whose memory is not yet freed, and report its weak-reference
/// side table as leaked: only the group's reference count points to it, in a form the check
/// cannot read (the queue's weak `owner` reference, which it could, went with the queue). So
/// the finish and cancel tests hold the outermost group until the process exits, and the
/// release test waits until every level is gone, watching each through a weak reference
/// (which keeps its side table visible to the check) held until the process exits.
@Suite("Deeply nested groups", .serialized)
struct DeepGroupTests {
    /// The depths are divided by this under a sanitizer (`OPERATIONS_SANITIZED=1`, set by
    /// CI), whose instrumented runs are ten or more times slower; the plain run checks the
    /// full depths.
    static var scale: Int { isSanitized ? 10 : 1 }

    /// What a child process holds until it exits (a global, so the leak check finds it).
    static let heldUntilExit = Shared<[AnyObject]>([])

    /// Groups nested `depth` deep, the innermost holding one block; returns the outermost.
    static func nested(_ depth: Int, ran: Shared<Bool>) -> GroupOperation {
        var inner: Operation = BlockOperation { ran.update { $0 = true } }
        for _ in 0..<depth { inner = GroupOperation(operations: [inner]) }
        return inner as! GroupOperation
    }

    /// Every level of `outer`, down to the innermost block, each through a weak reference.
    static func weakLevels(of outer: GroupOperation) -> [WeakOperationBox] {
        var levels: [WeakOperationBox] = []
        var level: Operation? = outer
        while let current = level {
            let box = WeakOperationBox()
            box.operation = current
            levels.append(box)
            level = (current as? GroupOperation)?.children.first
        }
        return levels
    }

    @Test("groups nested 10,000 deep finish level by level without a stack frame per level", .oneExitTestAtATime)
    func deepFinish() async {
        // In a child process: a stack frame per level would overflow the stack.
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let ran = Shared(false)
            let outer = DeepGroupTests.nested(10_000 / DeepGroupTests.scale, ran: ran)
            let queue = OperationQueue()
            queue.addOperation(outer)
            outer.waitUntilFinished()
            guard ran(), outer.isFinished, !outer.isCancelled else { exit(1) }
            DeepGroupTests.heldUntilExit.update { $0.append(outer) }
        }.expectQuietChild()
    }

    @Test("30,000 nested finished groups are released without a stack frame per level", .oneExitTestAtATime)
    func deepRelease() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let ran = Shared(false)
            var outer: GroupOperation? = DeepGroupTests.nested(30_000 / DeepGroupTests.scale, ran: ran)
            OperationQueue().addOperation(outer!)
            outer!.waitUntilFinished()
            guard ran() else { exit(1) }
            let levels = DeepGroupTests.weakLevels(of: outer!)
            DeepGroupTests.heldUntilExit.update { $0.append(contentsOf: levels) }
            outer = nil
            guard eventually({ levels.allSatisfy { $0.operation == nil } }) else { exit(1) }
        }.expectQuietChild()
    }

    @Test("cancelling groups nested 10,000 deep cancels every level", .oneExitTestAtATime)
    func deepCancel() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let ran = Shared(false)
            let outer = DeepGroupTests.nested(10_000 / DeepGroupTests.scale, ran: ran)
            outer.cancel()
            OperationQueue().addOperation(outer)
            outer.waitUntilFinished()
            guard !ran(), outer.isCancelled else { exit(1) }
            DeepGroupTests.heldUntilExit.update { $0.append(outer) }
        }.expectQuietChild()
    }
}
