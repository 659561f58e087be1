import Operations
import OperationsComposition
import OperationsTestSupport
import Testing
import TestTraits

private let limit = Duration.seconds(20)

/// An attempt that fails with its number as the code until `succeedsAt`.
private func attempt(_ number: Int, succeedsAt: Int) -> ValueBlockOperation<Int> {
    ValueBlockOperation {
        if number < succeedsAt { throw TestError(code: number) }
        return number
    }
}

@Suite("RetryOperation and RepeatOperation", .timeLimit(.minutes(3)))
struct RetryTests {
    @Test("retries until an attempt succeeds; the value is the last attempt's")
    func succeedsLater() async throws {
        let made = Shared(0)
        let retry = RetryOperation<Int>(maximumAttempts: 5) { number in
            made.increment()
            return attempt(number, succeedsAt: 3)
        }
        OperationQueue().addOperation(retry)
        #expect(try await retry.value == 3)
        #expect(retry.attemptCount == 3)
        #expect(made() == 3)
    }

    @Test("gives up after the maximum: the outcome is the last attempt's error")
    func exhausted() async {
        let retry = RetryOperation<Int>(maximumAttempts: 3) { attempt($0, succeedsAt: 99) }
        OperationQueue().addOperation(retry)
        await #expect(throws: TestError(code: 3)) { try await retry.value }
        guard case .failed(let error as TestError)? = retry.outcome else { Issue.record("\(String(describing: retry.outcome))"); return }
        #expect(error.code == 3)
    }

    @Test("the predicate on the error decides whether to retry")
    func predicate() async {
        let retry = RetryOperation<Int>(maximumAttempts: 5, shouldRetry: { ($0 as? TestError)?.code != 2 }) {
            attempt($0, succeedsAt: 99)
        }
        OperationQueue().addOperation(retry)
        await #expect(throws: TestError(code: 2)) { try await retry.value }
        #expect(retry.attemptCount == 2)
    }

    @Test("waits between attempts on the clock, as the strategy says")
    func waits() async throws {
        let clock = ManualClock()
        let retry = RetryOperation<Int>(maximumAttempts: 3, strategy: .constant(.seconds(5)), clock: clock) {
            attempt($0, succeedsAt: 3)
        }
        OperationQueue().addOperation(retry)
        await clock.waitForSleepers(1)
        #expect(retry.attemptCount == 1)
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        await clock.waitForSleepers(1)
        #expect(retry.attemptCount == 2)
        clock.advance(by: .seconds(5))
        #expect(try await retry.value == 3)
    }

    @Test("strategies: immediate, constant, exponential with a cap, full jitter with injected randomness")
    func strategies() {
        #expect(RetryStrategy.immediate.delay(afterAttempt: 4) == .zero)
        #expect(RetryStrategy.constant(.seconds(2)).delay(afterAttempt: 9) == .seconds(2))
        let exponential = RetryStrategy.exponential(initial: .seconds(1), maximum: .seconds(10))
        #expect((1...6).map { exponential.delay(afterAttempt: $0) } == [1, 2, 4, 8, 10, 10].map { Duration.seconds($0) })
        #expect(exponential.delay(afterAttempt: 10_000) == .seconds(10))
        let jitter = RetryStrategy.fullJitter(base: .seconds(1), maximum: .seconds(10), random: { 0.5 })
        #expect((1...5).map { jitter.delay(afterAttempt: $0) } == [0.5, 1, 2, 4, 5].map { Duration.seconds($0) })
        let none = RetryStrategy.fullJitter(base: .seconds(1), maximum: .seconds(10), random: { 0 })
        #expect(none.delay(afterAttempt: 3) == .zero)
    }

    @Test("cancelling during a wait stops the retries")
    func cancelDuringWait() async {
        let clock = ManualClock()
        let retry = RetryOperation<Int>(maximumAttempts: 5, strategy: .constant(.seconds(5)), clock: clock) {
            attempt($0, succeedsAt: 99)
        }
        OperationQueue().addOperation(retry)
        await clock.waitForSleepers(1)
        retry.cancel(with: TestError(code: 42))
        guard case .cancelled(let reason as TestError)? = await retry.outcome(within: limit) else {
            Issue.record("\(String(describing: retry.outcome))"); return
        }
        #expect(reason.code == 42)
        #expect(retry.attemptCount == 1)
        #expect(clock.sleeperCount == 0)
    }

    @Test("cancelling during an attempt cancels the attempt with the same reason")
    func cancelDuringAttempt() async {
        let gate = TestGate()
        let started = TestGate()
        let attempts = Shared<[Operation]>([])
        let retry = RetryOperation<Int>(maximumAttempts: 5) { _ in
            let operation = AsyncBlockOperation { () async throws -> Int in
                started.open()
                await gate.wait()
                try Task.checkCancellation()
                return 1
            }
            attempts.update { $0.append(operation) }
            return operation
        }
        OperationQueue().addOperation(retry)
        await started.wait()
        retry.cancel(with: TestError(code: 8))
        gate.open()
        #expect(await retry.outcome(within: limit)?.isCancelled == true)
        #expect(attempts().count == 1)
        #expect((attempts().first?.outcome?.error as? TestError)?.code == 8)
    }

    @Test("an attempt that times out is retried; the last one's timeout is the retry's reason")
    func attemptTimeouts() async {
        let clock = ManualClock()
        let retry = RetryOperation<Int>(maximumAttempts: 2, clock: clock) { _ in
            let operation = AsyncBlockOperation { () async throws -> Int in
                try await clock.sleep(for: .seconds(100))
                return 1
            }
            operation.timeout(after: .seconds(1), clock: clock)
            return operation
        }
        OperationQueue().addOperation(retry)
        for _ in 0..<2 {
            // The attempt's body and its timer.
            await clock.waitForSleepers(2)
            clock.advance(by: .seconds(1))
        }
        guard case .cancelled(let reason)? = await retry.outcome(within: limit) else { Issue.record("\(String(describing: retry.outcome))"); return }
        #expect(reason is TimeoutError)
        #expect(retry.attemptCount == 2)
    }

    @Test("untyped attempts")
    func untyped() async throws {
        let runs = Shared(0)
        let retry = RetryOperation<Void>(maximumAttempts: 3, clock: ContinuousClock()) { number in
            let operation = ValueBlockOperation<Void> {
                runs.increment()
                if number < 2 { throw TestError(code: number) }
            }
            return operation as Operation
        }
        OperationQueue().addOperation(retry)
        try await retry.value
        #expect(runs() == 2)
    }

    @Test("repeat (polling) runs again after each success until the value is final")
    func polling() async throws {
        let clock = ManualClock()
        let poll = RepeatOperation<Int>(maximumRuns: 10, strategy: .constant(.seconds(2)), clock: clock, until: { $0 >= 3 }) { run in
            ValueBlockOperation { run }
        }
        OperationQueue().addOperation(poll)
        for _ in 0..<2 {
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(2))
        }
        #expect(try await poll.value == 3)
        #expect(poll.attemptCount == 3)
    }

    @Test("repeat stops at the maximum with the last value")
    func pollingMaximum() async throws {
        let poll = RepeatOperation<Int>(maximumRuns: 4, until: { _ in false }) { run in ValueBlockOperation { run } }
        OperationQueue().addOperation(poll)
        #expect(try await poll.value == 4)
    }

    @Test("a maximum below one stops with a message", .oneExitTestAtATime)
    func badMaximum() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RetryOperation<Int>(maximumAttempts: 0) { _ in ValueBlockOperation { 1 } }
        }.map { $0.standardErrorContent.containsText("RetryOperation", "at most 0 attempts", "at least 1") }.check()
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RepeatOperation<Int>(maximumRuns: 0, until: { _ in true }) { _ in ValueBlockOperation { 1 } }
        }.map { $0.standardErrorContent.containsText("RepeatOperation", "maximumRuns", "at least 1") }.check()
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
        let started = TestGate(), release = BlockingSignal()
        let prerequisite = blockOperationHeld(until: release) { started.open() }
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
}
