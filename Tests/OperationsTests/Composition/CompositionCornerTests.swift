import Operations
import OperationsComposition
import OperationsTestSupport
import Testing

/// A child whose first `cancel()` stops inside, after the base cancel, until released.
private final class SlowCancel: BlockOperation, @unchecked Sendable {
    // `@unchecked Sendable`: the gates and the flag are Sendable; nothing else is stored.
    let inCancel = Gate(), proceed = Gate()
    let first = Shared(true)
    override func cancel() {
        super.cancel()
        if takeOnce(first) {
            inCancel.open()
            _ = proceed.wait(timeout: 600)
        }
    }
}

/// Corners of the composition layer: groups, contributed operations, retries. Each
/// interleaving is forced (a child held inside its `cancel()`, a gate), not timed.
@Suite("Composition: corners", .timeLimit(.minutes(1)))
struct CompositionCornerTests {
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
        let cancelled = Gate()
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

    /// (The holds below outlast any starvation of the test: with a 20 s hold, a test
    /// starved under Thread Sanitizer can see the hold expire and the retry finish.)
    ///
    /// A retry must not finish when its attempt does while an operation the attempt's
    /// condition contributed still runs (holding a category scoped to the retry): the
    /// retry cancels and waits for everything in its attempts' queue. Deterministic: the
    /// contributed operation is held on a gate.
    @Test("a retry finishes after what its attempts' conditions contributed, and cancels it with itself")
    func retryWaitsForContributed() async {
        let started = TestGate(), release = Gate()
        let prerequisite = BlockOperation {
            started.open()
            _ = release.wait(timeout: 600)
        }
        let retry = RetryOperation<Int>(maximumAttempts: 1) { _ in
            let attempt = ValueBlockOperation<Int> { 1 }
            attempt.addCondition(BlockCondition(dependency: { _ in prerequisite }) { _ in true })
            return attempt
        }
        OperationQueue().addOperation(retry)
        await started.waitIgnoringCancellation()
        retry.cancel()
        #expect(prerequisite.isCancelled)
        let finishedEarly = await eventuallyAsync(timeout: 1) { retry.isFinished }
        #expect(!finishedEarly, "the retry finished while the contributed operation ran")
        release.open()
        await retry.waitUntilFinished()
        #expect(prerequisite.isFinished)
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
