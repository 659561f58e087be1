// The stores the durable behaviour tests run against, and helpers to run a worker and wait.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
@_spi(Engine) import Operations
import OperationsDurable
import OperationsPostgres
import OperationsSQLite
import OperationsTestSupport
import PostgresNIO
import Testing

/// The sizes of the tests with worker processes are divided by this under a sanitizer
/// (`OPERATIONS_SANITIZED=1`, set by `.ci/run`): instrumented worker processes on a loaded
/// machine run a tenth of the work in the same bounds; the plain run checks the full sizes.
let sanitizedScale = isSanitized ? 10 : 1

/// For the tests with worker processes that do not pass under a sanitizer yet: under
/// ThreadSanitizer the instrumented workers did not finish them within their bounds (the
/// restart test not even at a tenth of its work); they run in the plain suite.
let notUnderSanitizers = ConditionTrait.disabled(
    if: isSanitized,
    "instrumented worker processes do not finish this test within its bounds under a sanitizer")

/// A kind of store under test. The behaviour tests take it as an argument, so that every
/// store runs the same tests.
struct StoreKind: Sendable, CustomTestStringConvertible {
    let name: String
    /// Whether the store can run here (a server it needs may not be installed).
    let isAvailable: @Sendable () -> Bool
    /// A fresh, migrated store, and what removes it.
    let make: @Sendable () async throws -> (store: any DurableOperationStore, shutdown: @Sendable () async -> Void)
    /// Runs one statement on the database of a store of this kind; false for a store of
    /// another kind.
    let executeDirectly: @Sendable (_ sql: String, _ store: any DurableOperationStore) async throws -> Bool

    var testDescription: String { name }

    /// Every store the tests know, one entry each: a new store is a new entry.
    static let known: [StoreKind] = [
        // A new file in a temporary directory, removed afterwards.
        StoreKind(
            name: "SQLite", isAvailable: { true },
            make: {
                let file = SQLiteFile()
                let store = try await file.migratedStore()
                return (store, {
                    await store.shutdown()
                    file.remove()
                })
            },
            executeDirectly: { sql, store in
                guard let store = store as? SQLiteOperationStore else { return false }
                try await rawExecute(store.path, sql)
                return true
            }),
        // A new database in the test cluster, when its server binaries are installed.
        StoreKind(
            name: "PostgreSQL", isAvailable: { PostgresCluster.isAvailable },
            make: {
                let cluster = try await PostgresCluster.shared()
                let (store, _) = try await cluster.makeStore()
                return (store, { await store.shutdown() })
            },
            executeDirectly: { sql, store in
                guard let store = store as? PostgresOperationStore else { return false }
                try await store.client.query(PostgresQuery(unsafeSQL: sql))
                return true
            }),
    ]

    /// The stores available here.
    static var all: [StoreKind] { known.filter { $0.isAvailable() } }

    /// The known store of that name, for a test of one store.
    static func named(_ name: String) -> StoreKind { known.first { $0.name == name }! }
}

/// A store file in a directory of its own (the WAL and shared-memory files sit beside it).
struct SQLiteFile: Sendable {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("durable-sqlite-\(UUID().uuidString.prefix(8))")
    var path: String { directory.appendingPathComponent("store.sqlite").path }

    init() {
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A store on the file, migrated.
    func migratedStore() async throws -> SQLiteOperationStore {
        let store = SQLiteOperationStore(path: path)
        try await store.migrate()
        return store
    }
}

/// Runs `body` with a new file, removed when it returns.
func withSQLiteFile<T>(_ body: (SQLiteFile) async throws -> T) async throws -> T {
    let file = SQLiteFile()
    defer { file.remove() }
    return try await body(file)
}

/// Runs `body` with a new file and a migrated store on it, and removes the file when it
/// returns. The body shuts the store down: some tests read the file after that.
func withMigratedSQLiteFile<T>(_ body: (SQLiteFile, SQLiteOperationStore) async throws -> T) async throws -> T {
    try await withSQLiteFile { file in try await body(file, try await file.migratedStore()) }
}

/// A fresh, migrated store for the body; shut down afterwards.
func withStore<T>(_ kind: StoreKind, _ body: (any DurableOperationStore) async throws -> T) async throws -> T {
    let (store, shutdown) = try await kind.make()
    do {
        let result = try await body(store)
        await shutdown()
        return result
    } catch {
        await shutdown()
        throw error
    }
}

/// A fresh, migrated store and the queue "default" on it for the body; shut down afterwards.
func withDefaultQueue<T>(
    _ kind: StoreKind, _ body: (DurableQueue, any DurableOperationStore) async throws -> T
) async throws -> T {
    try await withStore(kind) { store in try await body(DurableQueue(name: "default", store: store), store) }
}

/// Runs a worker on `store` until `handle` has its value (`what`, within `seconds`), and
/// returns the value.
func valueRunningAWorker<K: DurableOperation>(
    of handle: DurableHandle<K>, on store: any DurableOperationStore, _ what: String, within seconds: Double = 30
) async throws -> K.Output {
    try await withWorkers(store: store) { _ async throws in
        try await within(seconds, what) { try await handle.value }
    }
}

/// Runs one statement on the store's database directly: for a test that puts a row in a
/// state the store's methods reach only after a long history.
func executeDirectly(_ sql: String, in store: any DurableOperationStore) async throws {
    for kind in StoreKind.known where try await kind.executeDirectly(sql, store) { return }
    Issue.record("no direct access to \(type(of: store))")
}

/// Timings for in-process workers: short leases, so that a test of rescue is quick.
func testWorkerConfiguration(name: String = "test") -> DurableWorker.Configuration {
    var configuration = DurableWorker.Configuration()
    configuration.name = name
    configuration.shutdownDeadline = .seconds(2)
    // Longer than the default: under a sanitizer, with the whole suite running, a heartbeat
    // can take seconds, and a worker that stops its bodies for their leases is not what most
    // tests are about (the tests of leases set their own).
    configuration.lease = .seconds(20)
    return configuration
}

/// Runs one worker in this process until it has started the body of `operation`, then stops
/// it: the stop gives the body back. Waits for the worker's `started` event, recorded once
/// the worker holds the body, not for the store's `running` state, which a claim shows
/// before the worker has received it (a stop then records that it never ran the body).
func withWorkerUntilStarted(
    _ operation: DurableOperationID, store: any DurableOperationStore, kinds: [any DurableOperation] = allTestKinds
) async throws {
    let worker = DurableWorker(
        store: store, queues: ["default"], kinds: kinds, configuration: testWorkerConfiguration(name: "test0"))
    try await withRunningWorkerRecordingEvents(worker) { recorder in
        try await recorder.wait("the body's start") { events in
            events.contains { $0.operation == operation && $0.kind == .started }
        }
    }
}

/// Runs workers in this process while the body runs, then stops them and waits for them.
func withWorkers<T: Sendable>(
    _ count: Int = 1, store: any DurableOperationStore, queues: [String] = ["default"],
    kinds: [any DurableOperation] = allTestKinds, concurrency: Int = 4,
    _ body: @Sendable ([DurableWorker]) async throws -> T
) async throws -> T {
    let workers = (0..<count).map { index in
        DurableWorker(
            store: store, queues: queues, kinds: kinds, concurrency: concurrency,
            configuration: testWorkerConfiguration(name: "test\(index)"))
    }
    return try await withThrowingTaskGroup(of: T?.self) { group in
        for worker in workers { group.addTask { try await worker.run(); return nil } }
        let result: Result<T, any Error>
        do {
            result = .success(try await body(workers))
        } catch {
            result = .failure(error)
        }
        for worker in workers { worker.stop() }
        while let _ = try await group.next() {}
        return try result.get()
    }
}




extension DurableOperationCounts {
    /// The counts given, zero for each state not named.
    static func counting(_ counts: KeyValuePairs<WritableKeyPath<DurableOperationCounts, Int>, Int>) -> Self {
        var result = DurableOperationCounts()
        for (state, count) in counts { result[keyPath: state] = count }
        return result
    }
}

extension InterceptingStore.Hooks {
    /// Holds every heartbeat after the one that registers the worker until `unanswered`
    /// opens, ignoring cancellation: as a pool waiting for a database that went away, the
    /// store answers neither the call nor its cancellation.
    mutating func holdHeartbeatsAfterTheFirst(until unanswered: TestGate) {
        let heartbeats = Shared(0)
        beforeHeartbeat = {
            let number = heartbeats.update { $0 += 1; return $0 }
            if number > 1 { await unanswered.waitIgnoringCancellation() }
        }
    }
}

/// The largest number of attempts whose [start, end] intervals overlap at one instant.
func maximumOverlap(_ attempts: [DurableAttempt]) -> Int {
    var events: [(Date, Int)] = []
    for attempt in attempts {
        events.append((attempt.start, 1))
        events.append((attempt.end ?? .distantFuture, -1))
    }
    // Ends before starts at the same instant: touching intervals do not overlap.
    events.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
    var current = 0
    var maximum = 0
    for (_, change) in events {
        current += change
        maximum = max(maximum, current)
    }
    return maximum
}

#endif
