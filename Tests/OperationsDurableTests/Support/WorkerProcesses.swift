// Worker processes for the multi-process tests, and checks of what they left in the store.
#if PostgreSQL && SQLite

import Foundation
import Logging
import OperationsDurable
import OperationsPostgres
import PostgresNIO
import Testing

/// Worker processes (the package's `DurableTestWorker` executable), by name.
final class WorkerProcesses: Sendable {
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("DurableTestWorker")
    }

    private let processes = Shared<[String: ChildProcess]>([:])
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("durable-workers-\(UUID().uuidString.prefix(8))")

    func start(
        name: String, port: Int, database: String, queue: String = "default", concurrency: Int = 4, dying: CrashPoint? = nil
    ) throws {
        try start(
            name: name, store: ["--port", "\(port)", "--database", database], queue: queue, concurrency: concurrency, dying: dying)
    }

    /// A worker process on the SQLite store in `sqlite`.
    func start(name: String, sqlite: String, queue: String = "default", concurrency: Int = 4, dying: CrashPoint? = nil) throws {
        try start(name: name, store: ["--sqlite", sqlite], queue: queue, concurrency: concurrency, dying: dying)
    }

    /// Where a worker process started with `dying:` kills itself (SIGKILL), for the first
    /// operation of `kind` it claims.
    struct CrashPoint: Sendable, CustomTestStringConvertible {
        /// `after-claim` (the claim is recorded, the body has not started) or
        /// `before-completion` (the body ended, its end is not recorded).
        var point: String
        var kind: String
        var testDescription: String { "\(point) of a \(kind)" }

        static let all = [CrashPoint(point: "after-claim", kind: "work"), CrashPoint(point: "before-completion", kind: "work")]
    }

    private func start(name: String, store: [String], queue: String, concurrency: Int, dying: CrashPoint?) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let log = directory.appendingPathComponent("\(name).log")
        let process = try ChildProcess.spawn(
            [Self.executable.path] + store + ["--name", name, "--queue", queue, "--concurrency", "\(concurrency)"]
                + (dying.map { ["--die", $0.point, "--die-with", $0.kind] } ?? []),
            output: log.path)
        processes.update { $0[name] = process }
    }

    /// Waits until the process ends by itself; returns its exit status (128 + signal).
    func exitStatus(_ name: String) async -> Int32? {
        guard let process = processes.value[name] else { return nil }
        let status = await process.exitStatus()
        processes.update { $0[name] = nil }
        return status
    }

    /// SIGKILL: the process gets no chance to give anything back.
    func kill(_ name: String) {
        guard let process = processes.value[name] else { return }
        process.signal(SIGKILL)
        process.wait()
        processes.update { $0[name] = nil }
    }

    /// SIGKILL to every process (the test is over), then reaps them: quick, so that it may
    /// block in a `defer`.
    func stopAll() {
        for process in processes.value.values { process.signal(SIGKILL) }
        for process in processes.value.values { process.wait() }
        processes.set([:])
        try? FileManager.default.removeItem(at: directory)
    }

    /// The processes' output, for a failing test's message.
    func logs() -> String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".log") }.map { String($0.dropLast(4)) }.sorted().map { name in
            let text = (try? String(contentsOf: directory.appendingPathComponent("\(name).log"), encoding: .utf8)) ?? ""
            return "--- \(name)\n\(text.suffix(6_000))"
        }.joined(separator: "\n")
    }
}

/// Checks, straight in the database, what every multi-process test promises afterwards.
struct StoreInvariants {
    let store: PostgresOperationStore

    func count(_ sql: String) async throws -> Int {
        let rows = try await store.client.query(PostgresQuery(unsafeSQL: sql)).collect()
        return try rows[0].decode(Int.self)
    }

    /// Every operation except `cancelled` succeeded, by exactly one attempt without error;
    /// no two attempts of one operation overlap; nothing is claimed or left open.
    func check(cancelled: Set<Int64> = []) async throws {
        let excluded = cancelled.isEmpty ? "0" : cancelled.map(String.init).joined(separator: ",")
        #expect(try await count("SELECT count(*)::integer FROM durable_operations WHERE state <> 'succeeded' AND id NOT IN (\(excluded))") == 0)
        #expect(
            try await count(
                """
                SELECT count(*)::integer FROM durable_operations o WHERE o.state = 'succeeded' AND
                    (SELECT count(*) FROM durable_attempts a WHERE a.operation = o.id AND a.error IS NULL AND a.ended_at IS NOT NULL) <> 1
                """) == 0, "an operation succeeded other than exactly once")
        #expect(
            try await count(
                """
                SELECT count(*)::integer FROM durable_attempts a JOIN durable_attempts b
                    ON a.operation = b.operation AND a.number < b.number
                WHERE b.started_at < coalesce(a.ended_at, 'infinity')
                """) == 0, "two attempts of one operation overlap")
        #expect(try await count("SELECT count(*)::integer FROM durable_operations WHERE state = 'running' OR worker IS NOT NULL") == 0)
        #expect(try await count("SELECT count(*)::integer FROM durable_attempts WHERE ended_at IS NULL") == 0)
    }

    /// The operations not finished yet, with their attempts, for a failing test's message.
    func describeUnfinished(limit: Int = 20) async throws -> String {
        let rows = try await store.client.query(
            """
            SELECT o.id, o.state, o.attempt, coalesce(o.worker, '-'), coalesce(to_char(o.lease_until, 'HH24:MI:SS.MS'), '-'),
                to_char(clock_timestamp(), 'HH24:MI:SS.MS'),
                coalesce((SELECT string_agg(a.number || ' ' || a.worker || ' ' || to_char(a.started_at, 'HH24:MI:SS.MS') || '..'
                    || coalesce(to_char(a.ended_at, 'HH24:MI:SS.MS'), 'open') || coalesce(' ' || a.error, ''), '; ' ORDER BY a.number)
                    FROM durable_attempts a WHERE a.operation = o.id), '')
            FROM durable_operations o WHERE o.state IN ('waiting', 'ready', 'running') ORDER BY o.id LIMIT \(limit)
            """).collect()
        return try rows.map { row in
            let (id, state, attempt, worker, lease, now, attempts) = try row.decode((Int64, String, Int, String, String, String, String).self)
            return "\(id) \(state) attempt \(attempt) worker \(worker) lease until \(lease) (now \(now)): \(attempts)"
        }.joined(separator: "\n")
    }

    /// Every attempt of the queue, for measuring overlap.
    func attempts(queue: String) async throws -> [DurableAttempt] {
        let rows = try await store.client.query(
            "SELECT a.number, a.worker, a.started_at, a.ended_at, a.error FROM durable_attempts a JOIN durable_operations o ON o.id = a.operation WHERE o.queue = \(queue)"
        ).collect()
        return try rows.map { row in
            let (number, worker, start, end, error) = try row.decode((Int, String, Date, Date?, String?).self)
            return DurableAttempt(number: number, worker: worker, start: start, end: end, error: error)
        }
    }
}
#endif
