@_spi(Engine) @testable import Operations
import OperationsTestSupport
import Testing

/// A queue runs the `async` bodies it starts one after another in the same task where it
/// can; a cancellation or an escalation must still reach only its own operation's body.
@Suite("Async bodies run in turn: cancellation and priority stay per operation", .timeLimit(.minutes(1)))
struct BodyTaskReuseTests {
    @Test("a body that cancels its own operation leaves the next body of a serial queue uncancelled")
    func selfCancelDoesNotReachNext() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let seen = Shared<[Bool]>([])
        let itself = Shared<Operation?>(nil)
        let first = AsyncBlockOperation<Void> {}
        let cancelling = AsyncBlockOperation<Void> {
            itself()?.cancel()
            seen.update { $0.append(Task.isCancelled) }
        }
        itself.update { $0 = cancelling }
        let next = AsyncBlockOperation<Void> { seen.update { $0.append(Task.isCancelled) } }
        let last = AsyncBlockOperation<Void> { seen.update { $0.append(Task.isCancelled) } }
        queue.addOperations([first, cancelling, next, last], waitUntilFinished: false)
        await queue.waitUntilAllOperationsAreFinished()
        #expect(seen() == [true, false, false])
        #expect(cancelling.isCancelled)
        #expect(!next.isCancelled && !last.isCancelled)
    }

    @Test("cancelling the operation whose body comes next, from a completion block, cancels that body and no later one")
    func cancelHandedOverBody() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let seen = Shared<[String: Bool]>([:])
        // The second body, if it starts, reads its cancellation only once the cancel was
        // issued: the completion block runs beside it and may come after its end otherwise.
        let cancelIssued = TestGate()
        let second = AsyncBlockOperation<Void> {
            await cancelIssued.waitIgnoringCancellation()
            seen.update { $0["second"] = Task.isCancelled }
        }
        let first = AsyncBlockOperation<Void> { seen.update { $0["first"] = Task.isCancelled } }
        // Runs once `first` finished: the queue may have started `second` already.
        first.completionBlock = {
            second.cancel()
            cancelIssued.open()
        }
        let third = AsyncBlockOperation<Void> { seen.update { $0["third"] = Task.isCancelled } }
        queue.addOperations([first, second, third], waitUntilFinished: false)
        await queue.waitUntilAllOperationsAreFinished()
        #expect(seen()["first"] == false)
        #expect(seen()["second"] != false, "a started body sees its cancel (or it did not run)")
        #expect(seen()["third"] == false)
        #expect(second.isCancelled && !third.isCancelled)
    }

    @Test("a cancellation handler in a body that follows others sees that body's cancel, and the next body none")
    func handlerSeesOwnCancel() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let entered = TestGate()
        let handled = Shared<[String]>([])
        let quick = AsyncBlockOperation<Void> {}
        let waiting = AsyncBlockOperation<Void> {
            await withTaskCancellationHandler {
                entered.open()
                await TestGate().wait()
            } onCancel: {
                handled.update { $0.append("waiting") }
            }
        }
        let after = AsyncBlockOperation<Void> {
            await withTaskCancellationHandler {
                handled.update { $0.append(Task.isCancelled ? "after cancelled" : "after ran") }
            } onCancel: {
                handled.update { $0.append("after handler") }
            }
        }
        queue.addOperations([quick, waiting, after], waitUntilFinished: false)
        await entered.waitIgnoringCancellation()
        waiting.cancel()
        await queue.waitUntilAllOperationsAreFinished()
        #expect(handled() == ["waiting", "after ran"])
    }

    @Test("after a body was escalated, the next body of a serial queue runs at its own priority")
    func escalationDoesNotReachNext() async throws {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.qualityOfService = .utility
        let entered = TestGate()
        let gate = TestGate()
        let escalated = AsyncBlockOperation<Void> {
            entered.open()
            await gate.waitIgnoringCancellation()
        }
        let next = AsyncBlockOperation { Task.currentPriority }
        queue.addOperations([escalated, next], waitUntilFinished: false)
        await entered.waitIgnoringCancellation()
        let waiter = Task(priority: .high) { try await escalated.value }
        #expect(await eventuallyAsync { escalated._update { $0.escalatedQuality } == .userInitiated })
        gate.open()
        try await waiter.value
        #expect(try await next.value == .low)
    }

    @Test("bodies that follow one another each see their own operation as their context")
    func contextPerBody() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let seen = Shared<[ObjectIdentifier?]>([])
        let operations = (0..<20).map { _ in
            AsyncBlockOperation<Void> {
                let operation = OperationQueue._taskContext?.operation
                seen.update { $0.append(operation.map(ObjectIdentifier.init)) }
            }
        }
        queue.addOperations(operations, waitUntilFinished: false)
        await queue.waitUntilAllOperationsAreFinished()
        #expect(seen() == operations.map(ObjectIdentifier.init))
    }
}

/// Each test blocks a thread of the cooperative pool while it waits (one at a time, and
/// never longer than the bound: a thread blocked for good would starve other tests). The
/// bound is a hang bound, not a speed limit: while the whole suite runs on two cores, the
/// pool's other thread can be busy with other tests' tasks for more than ten seconds.
/// Not under a sanitizer (`OPERATIONS_SANITIZED=1`): there a wait held one of the pool's two
/// threads for over twenty seconds, long enough to stall unrelated tests past their limits;
/// the plain run checks the behaviour.
@Suite(
    "Async bodies run in turn: user code of a finish never waits for the next body", .serialized, .timeLimit(.minutes(3)),
    .disabled(if: isSanitized, "blocks a thread of the cooperative pool for as long as a sanitized run needs"))
struct BodyTaskReuseWaitTests {
    /// Adds two async operations to a serial queue; `blockUntilNextFinished` installs on the
    /// first a callback (named `waiter` in the message) that calls the given wait, which blocks
    /// (at most 60 s) until the second has finished. Checks that the wait saw it finish. What
    /// `blockUntilNextFinished` returns is kept until the end.
    private func checkBlockingUntilNextFinishesReturns(
        waiter: String,
        _ blockUntilNextFinished: (AsyncBlockOperation<Void>, @escaping @Sendable () -> Void) -> Any?
    ) async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let nextFinished = DispatchSemaphore(value: 0)
        let waited = Shared<Bool?>(nil)
        let next = AsyncBlockOperation<Void> {}
        next.completionBlock = { nextFinished.signal() }
        let first = AsyncBlockOperation<Void> {}
        let kept = blockUntilNextFinished(first) {
            let finished = nextFinished.wait(timeout: .now() + 60) == .success; waited.update { $0 = finished }
        }
        queue.addOperations([first, next], waitUntilFinished: false)
        await queue.waitUntilAllOperationsAreFinished()
        #expect(waited() == true, "the next body ran while the \(waiter) waited")
        _ = kept
    }

    @Test("a completion block that blocks until the next async operation of its serial queue finishes returns")
    func completionBlockWaitsForNext() async {
        await checkBlockingUntilNextFinishesReturns(waiter: "completion block") { first, wait in
            first.completionBlock = { wait() }
            return nil
        }
    }

    @Test("an isFinished observer that blocks until the next async operation of its serial queue finishes returns")
    func observerWaitsForNext() async {
        await checkBlockingUntilNextFinishesReturns(waiter: "observer") { first, wait in
            first.observe(\.isFinished, options: [.new]) { _, change in
                if change.newValue == true { wait() }
            }
        }
    }
}

/// An async operation whose overridden `isReady` reads false once `notReady` is set, without
/// an announcement: its queue finds out only when it comes to start it.
private final class SilentlyUnreadyOperation: TaskOperation<Void>, @unchecked Sendable {
    let notReady = Shared(false)
    override var isReady: Bool { super.isReady && !notReady() }
    override func run() async {}
}

/// When a body ends, its thread starts the queue's next ready async operation in the slot
/// it freed; one whose `isReady` reads false then waits for its announcement.
@Suite("Async bodies run in turn: a successor found not ready", .timeLimit(.minutes(1)))
struct BodySuccessorNotReadyTests {
    @Test("a successor whose isReady reads false when the freed slot would start it leaves the slot to the next ready operation")
    func parkedSuccessorLeavesTheSlot() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = TestGate()
        let first = AsyncBlockOperation<Void> { await release.waitIgnoringCancellation() }
        let unready = SilentlyUnreadyOperation()
        let next = AsyncBlockOperation<Void> {}
        queue.addOperations([first, unready, next], waitUntilFinished: false)
        // Both wait behind the limit once the worker that started `first` has ended: then
        // `first`'s end is the only thing left that can start them.
        #expect(await eventuallyAsync { first.isExecuting && queue.core.withLock { $0.pool.count } == 0 })
        unready.notReady.update { $0 = true }
        release.open()
        #expect(await next.outcome(within: .seconds(20)) != nil, "the next ready operation started")
        #expect(!unready.isExecuting && !unready.isFinished)
        // Ready again, announced: it runs.
        unready.willChangeValue(forKey: "isReady")
        unready.notReady.update { $0 = false }
        unready.didChangeValue(forKey: "isReady")
        await queue.waitUntilAllOperationsAreFinished()
        #expect(unready.isFinished && !unready.isCancelled)
    }
}
