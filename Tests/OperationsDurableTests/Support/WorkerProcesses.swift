// Worker processes for the multi-process tests, and checks of what they left in the store.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import Logging
import OperationsDurable
import OperationsPostgres
import OperationsSQLite
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

    /// How a worker process runs its worker.
    enum RunMode: Sendable, CustomTestStringConvertible {
        /// `try await worker.run()`, as a program without swift-service-lifecycle does, this
        /// many times in a row (a new worker each time).
        case plain(runs: Int)
        /// In a `ServiceGroup` that stops gracefully on SIGTERM.
        case serviceGroup

        var testDescription: String {
            switch self {
            case .plain(let runs): "run() \(runs == 1 ? "once" : "\(runs) times")"
            case .serviceGroup: "a ServiceGroup"
            }
        }
    }

    /// A worker process on the SQLite store in `sqlite`, run as `mode` says, with the given
    /// shutdown deadline.
    func start(name: String, sqlite: String, mode: RunMode, shutdownDeadlineMilliseconds: Int) throws {
        var store = ["--sqlite", sqlite, "--shutdown-deadline-ms", "\(shutdownDeadlineMilliseconds)"]
        if case .plain(let runs) = mode { store += ["--plain", "\(runs)"] }
        try start(name: name, store: store, queue: "default", concurrency: 4, dying: nil)
    }

    /// Sends `signal` to the process.
    func send(_ signal: Int32, to name: String) {
        processes.value[name]?.signal(signal)
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

    /// Runs `body`; when it throws, records the error with the processes' logs, then rethrows.
    func recordingLogsOnFailure<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            Issue.record("\(error)\n\(logs())")
            throw error
        }
    }
}

/// Runs `body` with worker processes that are stopped when it returns.
func withWorkerProcesses<T>(_ body: (WorkerProcesses) async throws -> T) async throws -> T {
    let workers = WorkerProcesses()
    defer { workers.stopAll() }
    return try await body(workers)
}

/// Runs `body` with a new SQLite file, a migrated store on it and worker processes to start
/// on it; the processes are stopped, then the file removed, when it returns.
func withWorkerProcessesOnSQLiteFile<T>(
    _ body: (SQLiteFile, SQLiteOperationStore, WorkerProcesses) async throws -> T
) async throws -> T {
    try await withMigratedSQLiteFile { file, store in
        try await withWorkerProcesses { workers in try await body(file, store, workers) }
    }
}

extension PostgresCluster {
    /// Runs `body` with a store on a new database of the cluster, the database's name, and
    /// worker processes to start on it, stopped when it returns.
    func withWorkerProcessesOnNewDatabase<T>(
        _ body: (PostgresOperationStore, _ database: String, WorkerProcesses) async throws -> T
    ) async throws -> T {
        let (store, database) = try await makeStore()
        return try await withWorkerProcesses { workers in try await body(store, database, workers) }
    }
}

/// Adds a diamond of `Node`s to `queue`: a top (1), two in the middle (10 and 100) that
/// depend on it, and a bottom (1000) that depends on both; returns the bottom, whose value
/// is then 1112.
func addDiamond(to queue: DurableQueue) async throws -> DurableHandle<Node> {
    let top = try await queue.add(Node.self, input: .init(value: 1))
    let left = try await queue.add(Node.self, input: .init(value: 10, parents: [top]), dependencies: [top])
    let right = try await queue.add(Node.self, input: .init(value: 100, parents: [top]), dependencies: [top])
    return try await queue.add(Node.self, input: .init(value: 1000, parents: [left, right]), dependencies: [left, right])
}

/// Waits for a fan-in's sink and a diamond's bottom (see `addDiamond(to:)`) run by worker
/// processes, and checks their values; a wait that throws is recorded with the processes' logs.
func expectFanInAndDiamondResults(sink: DurableHandle<Echo>, bottom: DurableHandle<Node>, workers: WorkerProcesses) async throws {
    try await workers.recordingLogsOnFailure { () async throws in
        #expect(try await within(120, "the fan-in's sink") { try await sink.value } == -1)
        #expect(try await within(60, "the diamond's bottom") { try await bottom.value } == 1112)
    }
}

/// Checks the attempts of a diamond and a fan-in of `leafCount` run by three worker processes
/// under a limit of 6: one successful attempt each, never more than 6 at once, by those
/// processes only. An attempt that did not succeed may only be one whose worker lost its
/// lease (a process starved of CPU misses its renewal, and the operation runs again: at least
/// once, as the library promises). Which process claims what is the scheduler's business.
func expectFanInAndDiamondAttempts(_ attempts: [DurableAttempt], leafCount: Int) {
    let unsuccessful = attempts.filter { $0.error != nil }
    #expect(attempts.count - unsuccessful.count == leafCount + 5, "one successful attempt for each operation")
    #expect(
        // Recorded by the worker that noticed ("could not renew its lease") or by the rescue
        // that found the lease run out ("stopped renewing its lease").
        unsuccessful.allSatisfy { ["could not renew its lease", "stopped renewing its lease"].contains(where: $0.error!.contains) },
        "attempts that did not succeed: \(unsuccessful.map { "\($0.worker) #\($0.number): \($0.error!)" })")
    #expect(maximumOverlap(attempts) <= 6)
    #expect((1...3).contains(Set(attempts.map(\.worker)).count), "attempts by workers other than the three processes")
}

/// Starts `workerCount` worker processes (named `w0`, `w1`, … and started by `startWorker`),
/// adds one operation whose body holds and `otherCount` more, kills with SIGKILL the worker
/// process that runs the held body, and checks that the held operation is rescued by another
/// worker and finished once, the interrupted attempt recorded, and that the others finish.
/// The time to the rescue is printed, after `printedPrefix`.
func checkKilledWorkerIsRescued(
    store: any DurableOperationStore, workers: WorkerProcesses, workerCount: Int, otherCount: Int, printedPrefix: String,
    startWorker: (String) throws -> Void
) async throws {
    let queue = DurableQueue(name: "default", store: store)
    for index in 0..<workerCount { try startWorker("w\(index)") }
    let held = try await queue.add(Hold.self, input: 2)
    var others: [DurableHandle<Work>] = []
    for _ in 0..<otherCount { others.append(try await queue.add(Work.self, input: 20)) }
    try await workers.recordingLogsOnFailure {
        try await pollUntil(60, "the held body started") { try await held.state == .running }
    }
    let first = try #require(try await held.attempts.first)
    let name = String(first.worker.prefix { $0 != "-" })
    let killed = Date()
    workers.kill(name)
    let value = try await within(60, "the rescued operation") { try await held.value }
    #expect(value == 2)
    let attempts = try await held.attempts
    #expect(attempts.count == 2)
    #expect(attempts[0].error?.contains("stopped renewing its lease during attempt 1") == true, "\(attempts)")
    #expect(attempts[1].worker != first.worker)
    let rescue = attempts[1].start.timeIntervalSince(killed)
    // How fast is a measurement (printed), not an assertion: this runs on loaded machines.
    print("\(printedPrefix)rescued \(String(format: "%.2f", rescue)) s after SIGKILL (default lease 5 s, heartbeat 1 s)")
    for other in others { _ = try await within(60, "the other work") { try await other.value } }
}

/// Adds an operation, starts a worker process (by `startWorker`, with the name and crash
/// point to die at) that kills itself at `crash`, and checks that the operation's claim holds
/// until a second worker process rescues it and finishes it on a second attempt.
func checkWorkerCrashedAtAPointIsRescued(
    store: any DurableOperationStore, workers: WorkerProcesses, crash: WorkerProcesses.CrashPoint,
    startWorker: (String, WorkerProcesses.CrashPoint?) throws -> Void
) async throws {
    let queue = DurableQueue(name: "default", store: store)
    let operation = try await queue.add(Work.self, input: 0)
    try startWorker("dying", crash)
    let status = try await within(60, "the worker's death") { await workers.exitStatus("dying") }
    #expect(status == 128 + SIGKILL, "\(workers.logs())")
    #expect(try await operation.state == .running, "the dead worker's claim holds until its lease expires")
    try startWorker("rescuer", nil)
    let value = try await within(60, "the rescued operation") { try await operation.value }
    #expect(value == 2, "the second attempt returned")
    let attempts = try await operation.attempts
    #expect(attempts.count == 2, "\(attempts)")
    #expect(attempts.first?.error?.contains("stopped renewing its lease during attempt 1") == true, "\(attempts)")
    #expect(attempts.last?.worker.hasPrefix("rescuer") == true)
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
