// The SQLite store's connection and poll timer, from inside: a cancelled task's transaction,
// a timer that fires before its wait.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import OperationsDurable
@testable import OperationsSQLite
import Testing
import TestTraits

@Suite("The SQLite store's poll wake")
struct PollWakeTests {
    @Test("a wait with no wake ends at its deadline, even when the deadline comes before the wait has begun waiting")
    func deadlineBeforeTheWaiterIsInstalled() async throws {
        let wake = PollWake()
        // A zero deadline: the timer fires as soon as it is scheduled, racing the waiter.
        // Every wait must end; one that missed its timer would wait for a wake that never comes.
        // Fewer under a sanitizer, which makes each wait many times slower.
        let waits = 100_000 / sanitizedScale
        try await within(120, "\(waits) waits with a zero deadline") {
            for _ in 0..<waits { await wake.wait(atMost: .zero) }
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
        let store = try await file.migratedStore()
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
        let rolledBack = try await store.access.withConnection("reading the queues") { connection in
            try await connection.query("SELECT count(*) AS n FROM durable_queues WHERE name = 'cancelled'").first?.int("n")
        }
        #expect(rolledBack == 0, "the cancelled write's row is gone")
        await store.shutdown()
    }

    @Test("a store shut down from a cancelled task closes its file", .oneExitTestAtATime)
    func shutdownFromCancelledTask() async {
        // In a process of its own: a connection left open stops the process when released.
        await #expect(processExitsWith: .success) {
            let file = SQLiteFile()
            defer { file.remove() }
            let store = try await file.migratedStore()
            let shutdown = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                await store.shutdown()
            }
            await shutdown.value
        }
    }

    @Test("events older than a minute are deleted by a store that listens, with no pruning of operations asked for")
    func oldEventsAreDeleted() async throws {
        let file = SQLiteFile()
        defer { file.remove() }
        let store = try await file.migratedStore()
        try await store.access.write("an old event") { transaction in
            _ = try await transaction.rows(
                "INSERT INTO durable_events (kind, payload, at) VALUES ('w', 'default', ?)", [.date(Date().addingTimeInterval(-3_600))])
        }
        @Sendable func oldEvents() async throws -> Int {
            try await store.access.withConnection("counting old events") { connection in
                try await connection.query(
                    "SELECT count(*) AS n FROM durable_events WHERE at < ?", [.date(Date().addingTimeInterval(-60))]
                ).first?.int("n") ?? 0
            }
        }
        #expect(try await oldEvents() == 1)
        // Listening starts the store's poller; no worker, no `prune` call.
        let notifications = store.notifications()
        let listening = Task { for await _ in notifications {} }
        defer { listening.cancel() }
        try await pollUntil(30, "the old event deleted") { try await oldEvents() == 0 }
        await store.shutdown()
    }

    @Test(
        "a full store is a thrown error saying so; what was stored stays, and work goes on once there is room",
        arguments: [false, true])
    func fullStore(inMemory: Bool) async throws {
        let file = SQLiteFile()
        defer { file.remove() }
        let path = inMemory ? ":memory:" : file.path
        let store = SQLiteOperationStore(path: path)
        try await store.migrate()
        let queue = DurableQueue(name: "default", store: store)
        let first = try await queue.add(Echo.self, input: 1)
        // SQLITE_FULL, as from a full disk: the file may not grow past its current size.
        let pages = try await store.access.withConnection("limiting the file") { connection in
            try await connection.query("PRAGMA page_count").first?.int("page_count") ?? 0
        }
        try await store.access.withConnection("limiting the file") { connection in
            _ = try await connection.query("PRAGMA max_page_count = \(pages)")
        }
        let big = String(repeating: "x", count: 64 * 1024)
        let error = await #expect(throws: DurableError.self) {
            for _ in 0..<64 { _ = try await queue.add(Blob.self, input: big) }
        }
        #expect(error?.message.contains("is full") == true, "\(String(describing: error))")
        #expect(error?.message.contains(path) == true)
        #expect(try await first.state == .ready, "what was stored before stays")
        try await store.access.withConnection("lifting the limit") { connection in
            _ = try await connection.query("PRAGMA max_page_count = 1073741823")
        }
        let value = try await withWorkers(store: store, kinds: [Echo(), Blob()]) { _ in
            try await within(30, "the first operation") { try await first.value }
        }
        #expect(value == 1)
        let later = try await queue.add(Echo.self, input: 2)
        #expect(try await later.state == .ready)
        await store.shutdown()
    }
}

/// Returns the length of its input.
private struct Blob: DurableOperation {
    static let kind = "blob"
    func run(_ input: String, context: DurableContext) async throws -> Int { input.count }
}
#endif
