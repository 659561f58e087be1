// The SQLite store's poll timer: a wait ends at its deadline, however the timer and the
// waiter are scheduled.
#if PostgreSQL && SQLite

@testable import OperationsSQLite
import Testing

@Suite("The SQLite store's poll wake")
struct PollWakeTests {
    @Test("a wait with no wake ends at its deadline, even when the deadline comes before the wait has begun waiting")
    func deadlineBeforeTheWaiterIsInstalled() async throws {
        let wake = PollWake()
        // A zero deadline: the timer fires as soon as it is scheduled, racing the waiter.
        // Every wait must end; one that missed its timer would wait for a wake that never comes.
        try await within(60, "100,000 waits with a zero deadline") {
            for _ in 0..<100_000 { await wake.wait(atMost: .zero) }
        }
    }

    @Test("a wake before the wait ends the next wait at once")
    func wakeBeforeWait() async throws {
        let wake = PollWake()
        wake.wake()
        try await within(60, "the woken wait") { await wake.wait(atMost: .seconds(3600)) }
    }
}
#endif
