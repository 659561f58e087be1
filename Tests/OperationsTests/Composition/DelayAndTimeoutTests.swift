import Operations
import OperationsComposition
import OperationsTestSupport
import Testing

/// An async operation that runs until it is cancelled (or its gate opens).
private func waitsForCancel(_ gate: TestGate = TestGate()) -> AsyncBlockOperation<Void> {
    AsyncBlockOperation {
        await gate.wait()
        try Task.checkCancellation()
    }
}

private let limit = Duration.seconds(20)

/// Holds `operation` in a suspended queue while `clock` advances by `queued`, checks that
/// nothing sleeps on the clock meanwhile, then resumes the queue and waits until the
/// operation's one sleeper sleeps.
private func startAfterWaitingInAQueue(
    _ operation: Operation, clock: ManualClock, queued: Duration, sourceLocation: SourceLocation = #_sourceLocation
) async {
    let queue = suspendedQueue(holding: operation)
    clock.advance(by: queued)
    #expect(clock.sleeperCount == 0, sourceLocation: sourceLocation)
    queue.isSuspended = false
    await clock.waitForSleepers(1)
}

@Suite("DelayOperation", .timeLimit(.minutes(1)))
struct DelayOperationTests {
    /// A delay of five seconds on a new manual clock, added to a new queue, once it sleeps
    /// on the clock.
    private func sleepingFiveSecondDelay() async -> (DelayOperation, ManualClock) {
        let clock = ManualClock()
        let delay = DelayOperation(for: .seconds(5), clock: clock)
        OperationQueue().addOperation(delay)
        await clock.waitForSleepers(1)
        return (delay, clock)
    }

    @Test("finishes once the interval has passed on the clock, not before")
    func interval() async {
        let (delay, clock) = await sleepingFiveSecondDelay()
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 1)
        #expect(!delay.isFinished)
        clock.advance(by: .seconds(1))
        guard case .succeeded? = await delay.outcome(within: limit) else { Issue.record("not finished"); return }
    }

    @Test("the interval starts when the operation starts")
    func startsAtStart() async {
        let clock = ManualClock()
        let delay = DelayOperation(for: .seconds(5), clock: clock)
        await startAfterWaitingInAQueue(delay, clock: clock, queued: .seconds(60))
        #expect(!delay.isFinished)
        clock.advance(by: .seconds(5))
        #expect(await delay.outcome(within: limit) != nil)
    }

    @Test("until an instant of the clock; a deadline in the past finishes at once")
    func deadline() async {
        let clock = ManualClock()
        let delay = DelayOperation(until: clock.now.advanced(by: .seconds(3)), clock: clock)
        let past = DelayOperation(until: Date.distantPast)
        let queue = OperationQueue()
        queue.addOperations([delay, past], waitUntilFinished: false)
        #expect(await past.outcome(within: limit)?.isCancelled == false)
        await clock.waitForSleepers(1)
        clock.advance(to: clock.now.advanced(by: .seconds(3)))
        #expect(await delay.outcome(within: limit)?.isCancelled == false)
    }

    @Test("an interval in seconds of zero finishes at once")
    func zeroInterval() async {
        let delay = DelayOperation(interval: 0)
        OperationQueue().addOperation(delay)
        #expect(await delay.outcome(within: limit)?.isCancelled == false)
    }

    @Test("cancelling ends the wait at once")
    func cancel() async {
        let (delay, clock) = await sleepingFiveSecondDelay()
        delay.cancel()
        #expect(await delay.outcome(within: limit)?.isCancelled == true)
        #expect(clock.sleeperCount == 0)
    }

    @Test("64 delays wait at once on a 2-core machine: each holds a queue slot, none a thread")
    func manyWaiting() async {
        let clock = ManualClock()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 64
        let delays = (0..<64).map { _ in DelayOperation(for: .seconds(1), clock: clock) }
        queue.addOperations(delays, waitUntilFinished: false)
        // 64 waits at once on a 2-core machine: the waits are suspended tasks.
        await clock.waitForSleepers(64)
        clock.advance(by: .seconds(1))
        await queue.waitUntilAllOperationsAreFinished()
        #expect(delays.allSatisfy { $0.outcome?.isCancelled == false })
    }
}

@Suite("Timeouts", .timeLimit(.minutes(1)))
struct TimeoutTests {
    /// An operation that runs until `gate` opens or it is cancelled, with a timeout of
    /// `interval` on `clock`.
    private func waitsForCancelWithTimeout(
        _ gate: TestGate = TestGate(), after interval: Duration, clock: ManualClock
    ) -> AsyncBlockOperation<Void> {
        let operation = waitsForCancel(gate)
        operation.timeout(after: interval, clock: clock)
        return operation
    }

    /// Adds an operation named `name` that runs until it is cancelled, with a timeout of
    /// `interval` on `clock`, to a new queue; runs `afterAdding`; then expects the operation
    /// cancelled with a `TimeoutError` that names it.
    private func expectTimedOut(
        named name: String, after interval: Duration, clock: ManualClock, afterAdding: () async -> Void = {},
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let operation = waitsForCancelWithTimeout(after: interval, clock: clock)
        operation.name = name
        OperationQueue().addOperation(operation)
        await afterAdding()
        guard case .cancelled(let reason as TimeoutError)? = await operation.outcome(within: limit) else {
            Issue.record("outcome \(String(describing: operation.outcome))", sourceLocation: sourceLocation); return
        }
        #expect(reason.operation.contains(name), sourceLocation: sourceLocation)
    }

    @Test("an operation that runs past its timeout is cancelled with a TimeoutError")
    func expires() async {
        let clock = ManualClock()
        await expectTimedOut(named: "slow", after: .seconds(2), clock: clock) {
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(2))
        }
    }

    @Test("a negative timeout has expired when the work starts: the operation is cancelled with a TimeoutError")
    func negativeTimeout() async {
        await expectTimedOut(named: "late", after: .seconds(-1), clock: ManualClock())
    }

    @Test("the timer starts when the operation starts, not when it is queued")
    func startsAtStart() async {
        let clock = ManualClock()
        let gate = TestGate()
        let operation = waitsForCancelWithTimeout(gate, after: .seconds(2), clock: clock)
        await startAfterWaitingInAQueue(operation, clock: clock, queued: .seconds(10))
        clock.advance(by: .seconds(1))
        #expect(!operation.isCancelled)
        gate.open()
        #expect(await operation.outcome(within: limit)?.error == nil)
    }

    @Test("the timer is released when the operation finishes first")
    func released() async {
        let clock = ManualClock()
        let gate = TestGate()
        let operation = waitsForCancelWithTimeout(gate, after: .seconds(2), clock: clock)
        OperationQueue().addOperation(operation)
        await clock.waitForSleepers(1)
        gate.open()
        #expect(await operation.outcome(within: limit)?.isCancelled == false)
        #expect(await eventuallyAsync { clock.sleeperCount == 0 })
        clock.advance(by: .seconds(5))
        #expect(operation.outcome?.isCancelled == false)
    }

    @Test("a timeout holds no strong reference to the operation")
    func noStrongReference() {
        weak var weakNeverStarted: Operation?
        weak var weakFinished: Operation?
        let clock = ManualClock()
        do {
            let neverStarted = BlockOperation {}
            neverStarted.timeout(after: .seconds(1), clock: clock)
            weakNeverStarted = neverStarted
            let finished = BlockOperation {}
            finished.timeout(after: .seconds(1), clock: clock)
            finished.start()
            weakFinished = finished
        }
        #expect(weakNeverStarted == nil)
        #expect(eventually { weakFinished == nil })
    }

    @Test("a group's timeout bounds its children: they are cancelled with the TimeoutError")
    func groupDeadline() async {
        let clock = ManualClock()
        let children = [waitsForCancel(), waitsForCancel()]
        let group = GroupOperation(operations: children)
        group.timeout(after: .seconds(30), clock: clock)
        OperationQueue().addOperation(group)
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(30))
        guard case .cancelled(let reason)? = await group.outcome(within: limit) else { Issue.record("group"); return }
        #expect(reason is TimeoutError)
        for child in children {
            guard case .cancelled(let childReason)? = child.outcome else { Issue.record("child \(String(describing: child.outcome))"); continue }
            #expect(childReason is TimeoutError)
        }
    }
}
