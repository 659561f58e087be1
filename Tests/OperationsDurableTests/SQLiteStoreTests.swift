// What only the SQLite store does: its file, its schema, and worker processes sharing the file.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import OperationsDurable
import OperationsSQLite
import SQLiteNIO
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("The SQLite store", .serialized, .timeLimit(.minutes(3)))
struct SQLiteStoreTests {
    @Test("a file that is not a database is refused, naming the path, and left as it was")
    func fileThatIsNotADatabase() async throws {
        try await withSQLiteFile { file in
            let bytes = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
            try bytes.write(to: URL(fileURLWithPath: file.path))
            let store = SQLiteOperationStore(path: file.path)
            let error = await #expect(throws: DurableError.self) { try await store.migrate() }
            #expect(error?.message.contains(file.path) == true, "\(String(describing: error))")
            #expect(error?.message.contains("not a SQLite database") == true, "\(String(describing: error))")
            let worker = DurableWorker(store: store, queues: ["default"], kinds: allTestKinds)
            await #expect(throws: DurableError.self) { try await worker.run() }
            await store.shutdown()
            #expect(try Data(contentsOf: URL(fileURLWithPath: file.path)) == bytes)
        }
    }

    @Test("a SQLite database of another application is refused and not written to")
    func databaseOfAnotherApplication() async throws {
        try await withSQLiteFile { file in
            try await rawExecute(file.path, "CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
            let store = SQLiteOperationStore(path: file.path)
            let error = await #expect(throws: DurableError.self) { try await store.migrate() }
            #expect(error?.message.contains(file.path) == true, "\(String(describing: error))")
            #expect(error?.message.contains("not a durable store") == true, "\(String(describing: error))")
            await store.shutdown()
            #expect(try await rawCount(file.path, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'durable_%'") == 0)
        }
    }

    @Test("a schema newer than the library is refused with a message naming the file")
    func newerSchemaIsRefused() async throws {
        try await withMigratedSQLiteFile { file, store in
            await store.shutdown()
            try await rawExecute(file.path, "UPDATE durable_schema SET version = 99")
            let newer = SQLiteOperationStore(path: file.path)
            let error = await #expect(throws: DurableError.self) { try await newer.migrate() }
            #expect(error?.code == .schemaTooNew)
            #expect(error?.message.contains("version 99") == true && error?.message.contains(file.path) == true, "\(String(describing: error))")
            await newer.shutdown()
            #expect(try await rawCount(file.path, "SELECT version FROM durable_schema") == 99)
        }
    }

    @Test("a read-only store is a thrown error naming the path, and is left as it was")
    func readOnlyFile() async throws {
        try await withMigratedSQLiteFile { file, store in
            _ = try await DurableQueue(name: "default", store: store).add(Echo.self, input: 1)
            await store.shutdown()
            let before = try Data(contentsOf: URL(fileURLWithPath: file.path))
            // Root ignores permissions: the immutable attribute makes the file read-only for it too.
            let makeReadOnly = geteuid() == 0 ? "chattr +i '\(file.path)'" : "chmod 0444 '\(file.path)'"
            let undo = geteuid() == 0 ? "chattr -i '\(file.path)'" : "chmod 0644 '\(file.path)'"
            try await PostgresCluster.shell(makeReadOnly)
            let readOnly = SQLiteOperationStore(path: file.path)
            let error = await #expect(throws: DurableError.self) {
                try await readOnly.migrate()
                _ = try await DurableQueue(name: "default", store: readOnly).add(Echo.self, input: 2)
            }
            await readOnly.shutdown()
            // Undone before anything can throw, so that the file can be removed.
            try await PostgresCluster.shell(undo)
            #expect(error?.message.contains(file.path) == true, "\(String(describing: error))")
            #expect(error?.message.contains("read-only") == true, "\(String(describing: error))")
            #expect(try Data(contentsOf: URL(fileURLWithPath: file.path)) == before)
        }
    }

    @Test("a path in a missing directory is a thrown error naming it")
    func missingDirectory() async throws {
        let path = "/nonexistent-\(UUID().uuidString.prefix(8))/store.sqlite"
        let store = SQLiteOperationStore(path: path)
        let error = await #expect(throws: DurableError.self) { try await store.migrate() }
        #expect(error?.code == .databaseUnreachable)
        #expect(error?.message.contains(path) == true, "\(String(describing: error))")
        await store.shutdown()
    }

    @Test("migrating again, and from several stores on one file at once, leaves one schema of the current version")
    func migrateIsIdempotentAndConcurrent() async throws {
        try await withSQLiteFile { file in
            let stores = (0..<4).map { _ in SQLiteOperationStore(path: file.path) }
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for store in stores { group.addTask { try await store.migrate() } }
                    try await group.waitForAll()
                }
                try await stores[0].migrate()
            } catch {
                for store in stores { await store.shutdown() }
                throw error
            }
            for store in stores { await store.shutdown() }
            #expect(try await rawCount(file.path, "SELECT count(*) FROM durable_schema") == 1)
            #expect(try await rawCount(file.path, "SELECT version FROM durable_schema") == 5)
        }
    }

    @Test("an in-memory store runs operations")
    func inMemoryStore() async throws {
        let store = SQLiteOperationStore(path: ":memory:")
        try await store.migrate()
        let queue = DurableQueue(name: "default", store: store)
        let handle = try await queue.add(Echo.self, input: 5)
        let value = try await valueRunningAWorker(of: handle, on: store, "the echo")
        #expect(value == 5)
        await store.shutdown()
    }

    // MARK: Worker processes sharing the file

    @Test("three worker processes share a file: a diamond and a fan-in of 300 within the queue's limit, each operation succeeding once", notUnderSanitizers)
    func workerProcessesShareAFile() async throws {
        try await withWorkerProcessesOnSQLiteFile { file, store, workers in
            let queue = DurableQueue(name: "default", store: store)
            try await queue.setMaxConcurrentOperationCount(6)
            // Every process registered before the work arrives: all three can claim from the start.
            for index in 0..<3 { try workers.start(name: "w\(index)", sqlite: file.path) }
            try await pollUntil(60, "three workers registered") {
                try await rawCount(file.path, "SELECT count(*) FROM durable_workers") == 3
            }
            let bottom = try await addDiamond(to: queue)
            let leafCount = 300
            let leaves = try await store.enqueue((0..<leafCount).map { _ in try queue.request(Work.self, input: 10) })
            let sink = try await queue.add(Echo.self, input: -1, dependencies: leaves.map(\.id))
            let started = ContinuousClock.now
            try await expectFanInAndDiamondResults(sink: sink, bottom: bottom, workers: workers)
            print("SQLite: diamond and fan-in of 300 on 3 worker processes: \(ContinuousClock.now - started)")
            await store.shutdown()
            let invariants = SQLiteInvariants(path: file.path)
            try await invariants.check()
            let attempts = try await invariants.attempts()
            expectFanInAndDiamondAttempts(attempts, leafCount: leafCount)
        }
    }

    @Test("the operation of a worker process killed with SIGKILL is rescued and finished once, the interrupted attempt recorded")
    func killedWorkerIsRescued() async throws {
        try await withWorkerProcessesOnSQLiteFile { file, store, workers in
            try await checkKilledWorkerIsRescued(
                store: store, workers: workers, workerCount: 2, otherCount: 20, printedPrefix: "SQLite: "
            ) { name in try workers.start(name: name, sqlite: file.path, concurrency: 2) }
            await store.shutdown()
            try await SQLiteInvariants(path: file.path).check()
        }
    }

    @Test(
        "a worker process killed between a claim and its body, or between a body's end and its record, leaves the operation to be rescued and finished once",
        arguments: WorkerProcesses.CrashPoint.all)
    func crashAtAPointOfTheLifeIsRescued(_ crash: WorkerProcesses.CrashPoint) async throws {
        try await withWorkerProcessesOnSQLiteFile { file, store, workers in
            try await checkWorkerCrashedAtAPointIsRescued(store: store, workers: workers, crash: crash) { name, dying in
                try workers.start(name: name, sqlite: file.path, dying: dying)
            }
            await store.shutdown()
            try await SQLiteInvariants(path: file.path).check()
        }
    }

    @Test("two worker processes drain 2,000 no-op operations, each run once; throughput and enqueue-to-start latency are printed", notUnderSanitizers)
    func throughputAndLatency() async throws {
        try await withWorkerProcessesOnSQLiteFile { file, store, workers in
            let queue = DurableQueue(name: "default", store: store)
            for index in 0..<2 { try workers.start(name: "w\(index)", sqlite: file.path, concurrency: 8) }
            // Latency: one operation at a time, with idle workers polling the file.
            let probe = try await queue.add(Echo.self, input: 0)
            _ = try await within(60, "the first operation") { try await probe.value }
            var latencies: [Double] = []
            for index in 0..<50 {
                let added = Date()
                let handle = try await queue.add(Echo.self, input: index)
                _ = try await within(60, "operation \(index)") { try await handle.value }
                latencies.append(try #require(try await handle.attempts.first).start.timeIntervalSince(added) * 1000)
            }
            latencies.sort()
            // Throughput: 2,000 added in one transaction, drained by both processes.
            let started = ContinuousClock.now
            let added = try await store.enqueue((0..<2_000).map { index in try queue.request(Echo.self, input: index) })
            let enqueued = ContinuousClock.now - started
            let remaining: @Sendable () async throws -> Int = {
                try await rawCount(file.path, "SELECT count(*) FROM durable_operations WHERE state <> 'succeeded'")
            }
            try await pollUntil(120, "every operation succeeded") { try await remaining() == 0 }
            #expect(added.count == 2_000)
            let drained = ContinuousClock.now - started - enqueued
            let seconds = Double(drained.components.seconds) + Double(drained.components.attoseconds) * 1e-18
            print(
                "SQLite, 2 worker processes: enqueue 2,000 in one transaction \(enqueued); drained in \(drained) = \(Int(2_000 / seconds)) operations/s; enqueue→start p50 \(String(format: "%.1f", latencies[25])) ms, p90 \(String(format: "%.1f", latencies[45])) ms"
            )
            await store.shutdown()
            try await SQLiteInvariants(path: file.path).check()
        }
    }

    @Test("a cancel from this process reaches a body running in a worker process through the file")
    func cancelReachesAnotherProcess() async throws {
        try await withWorkerProcessesOnSQLiteFile { file, store, workers in
            let queue = DurableQueue(name: "default", store: store)
            try workers.start(name: "w0", sqlite: file.path)
            let done = try await queue.add(Echo.self, input: 1)
            #expect(try await within(60, "the first operation") { try await done.value } == 1)
            var latencies: [Duration] = []
            for round in 0..<5 {
                let held = try await queue.add(Hold.self, input: 99)
                try await pollUntil(60, "the held body started") { try await held.state == .running }
                let cancelled = ContinuousClock.now
                try await held.cancel(reason: "stopped from the test process \(round)")
                await #expect(throws: DurableError.self) { try await within(30, "the cancelled body") { try await held.value } }
                latencies.append(ContinuousClock.now - cancelled)
                #expect(try await held.outcome == .cancelled("stopped from the test process \(round)"))
            }
            let sorted = latencies.sorted()
            print("SQLite: a cancel reached a body in another process and was recorded in \(sorted[2]) (median of 5; max \(sorted[4]))")
            await store.shutdown()
        }
    }
}

// MARK: Reading the file directly

/// Runs `body` over a connection of its own to the file, closed when it returns.
func withRawConnection<T>(_ path: String, _ body: (SQLiteConnection) async throws -> T) async throws -> T {
    let connection = try await SQLiteConnection.open(storage: .file(path: path))
    let result: T
    do {
        result = try await body(connection)
    } catch {
        try? await connection.close()
        throw error
    }
    try await connection.close()
    return result
}

/// Runs one statement on the file over a connection of its own.
func rawExecute(_ path: String, _ sql: String) async throws {
    _ = try await withRawConnection(path) { connection in try await connection.query(sql, []) }
}

/// The first column of the first row of a query, as an integer.
func rawCount(_ path: String, _ sql: String) async throws -> Int {
    let rows = try await withRawConnection(path) { connection in try await connection.query(sql, []) }
    return rows.first.flatMap { $0.columns.first?.data.integer }.map { Int($0) } ?? 0
}

/// Checks, straight in the file, what every multi-process test promises afterwards.
struct SQLiteInvariants {
    let path: String

    /// Every operation succeeded by exactly one attempt without error; no two attempts of one
    /// operation overlap; nothing is claimed or left open.
    func check() async throws {
        #expect(try await rawCount(path, "SELECT count(*) FROM durable_operations WHERE state <> 'succeeded'") == 0)
        #expect(
            try await rawCount(
                path,
                """
                SELECT count(*) FROM durable_operations o WHERE
                    (SELECT count(*) FROM durable_attempts a WHERE a.operation = o.id AND a.error IS NULL AND a.ended_at IS NOT NULL) <> 1
                """) == 0, "an operation succeeded other than exactly once")
        #expect(
            try await rawCount(
                path,
                """
                SELECT count(*) FROM durable_attempts a JOIN durable_attempts b ON a.operation = b.operation AND a.number < b.number
                WHERE b.started_at < coalesce(a.ended_at, 1e308)
                """) == 0, "two attempts of one operation overlap")
        #expect(try await rawCount(path, "SELECT count(*) FROM durable_operations WHERE state = 'running' OR worker IS NOT NULL") == 0)
        #expect(try await rawCount(path, "SELECT count(*) FROM durable_attempts WHERE ended_at IS NULL") == 0)
    }

    func attempts() async throws -> [DurableAttempt] {
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        let rows = try await connection.query("SELECT number, worker, started_at, ended_at, error FROM durable_attempts", [])
        try await connection.close()
        return rows.map { row in
            DurableAttempt(
                number: Int(row.column("number")?.integer ?? 0), worker: row.column("worker")?.string ?? "",
                start: Date(timeIntervalSince1970: row.column("started_at")?.double ?? 0),
                end: row.column("ended_at")?.double.map { Date(timeIntervalSince1970: $0) },
                error: row.column("error")?.string)
        }
    }
}
#endif
