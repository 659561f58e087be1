import Operations
import OperationsComposition
import OperationsTestSupport
import Testing

@Suite("OperationsTestSupport", .timeLimit(.minutes(1)))
struct TestSupportTests {
    @Test("ManualClock wakes sleepers in deadline order when time reaches them")
    func deadlineOrder() async {
        let clock = ManualClock()
        let woken = Shared<[Int]>([])
        let tasks = [3, 1, 2].map { seconds in
            Task {
                try await clock.sleep(until: clock.now.advanced(by: .seconds(seconds)))
                woken.update { $0.append(seconds) }
            }
        }
        await clock.waitForSleepers(3)
        clock.advance(by: .milliseconds(999))
        #expect(clock.sleeperCount == 3)
        clock.advance(by: .seconds(2))
        #expect(clock.sleeperCount == 1)
        clock.advance(to: clock.now.advanced(by: .seconds(1)))
        for task in tasks { try? await task.value }
        #expect(Set(woken()) == [1, 2, 3])
        #expect(clock.now.offset == .milliseconds(3999))
        #expect(clock.totalSleepCount == 3)
    }

    @Test("a cancelled sleeper throws CancellationError and leaves the clock")
    func cancelledSleeper() async {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(10)) }
        await clock.waitForSleepers(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test("a past deadline returns at once")
    func pastDeadline() async throws {
        let clock = ManualClock()
        clock.advance(by: .seconds(5))
        try await clock.sleep(until: ManualClock.Instant(offset: .seconds(1)))
        #expect(clock.sleeperCount == 0)
    }

    @Test("TestGate releases every waiter, and later waits return at once")
    func gate() async {
        let gate = TestGate()
        let count = Shared(0)
        let waiters = (0..<3).map { _ in Task { await gate.wait(); count.increment() } }
        #expect(!gate.isOpen)
        gate.open()
        for waiter in waiters { await waiter.value }
        await gate.wait()
        #expect(count() == 3)
    }

    @Test("outcome(within:) returns nil for an operation that does not finish in time")
    func outcomeWithin() async {
        let operation = BlockOperation {}
        let queue = suspendedQueue(holding: operation)
        #expect(await operation.outcome(within: .milliseconds(20)) == nil)
        queue.isSuspended = false
        #expect(await operation.outcome(within: .seconds(20))?.isCancelled == false)
    }
}
