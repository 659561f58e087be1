// The SQLite store's connection and poll timer, from inside: a cancelled task's transaction,
// a timer that fires before its wait.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import OperationsDurable
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

@Suite("The SQLite store's connection")
struct SQLiteConnectionTests {
    @Test("a write whose task is cancelled inside its transaction is rolled back, and the next write works")
    func cancelledInsideTransaction() async throws {
        let file = SQLiteFile()
        defer { file.remove() }
        let store = SQLiteOperationStore(path: file.path)
        try await store.migrate()
        // Cancelled between two statements of one transaction: sqlite-nio does not run a
        // cancelled task's statements, the ROLLBACK among them.
        let cancelled = Task {
            try await store.access.write("a write that is cancelled") { transaction in
                try await transaction.rows("INSERT INTO durable_queues (name) VALUES ('cancelled')")
                withUnsafeCurrentTask { $0?.cancel() }
                try await transaction.rows("SELECT 1")
            }
        }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        let queue = DurableQueue(name: "default", store: store)
        let added = try await queue.add(Echo.self, input: 1)
        #expect(try await added.state == .ready)
        #expect(try await store.isSuspended(queue: "cancelled") == false)
        await store.shutdown()
    }
}
#endif
