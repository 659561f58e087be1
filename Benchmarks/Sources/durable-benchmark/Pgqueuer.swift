// "Against pgqueuer": the same pre-filled queue of no-op operations drained by 1 and 2 worker
// processes of pgqueuer 1.6 (Python, Benchmarks/pgqueuer/pgqueuer_bench.py) and of the durable
// layer (this executable started again with --worker-process), alternately, on this cluster.

import Foundation
import OperationsDurable
import OperationsPostgres
import PostgresNIO

#if canImport(Glibc)
import Glibc
#endif

/// The value after `flag` on the command line.
func argument(after flag: String) -> String? {
    guard let index = CommandLine.arguments.firstIndex(of: flag), index + 1 < CommandLine.arguments.count else { return nil }
    return CommandLine.arguments[index + 1]
}

/// Who drains the queue.
enum Contender: Hashable, Sendable {
    case pgqueuer
    /// A DurableWorker per process; `nil`: made without a concurrency argument.
    case ours(concurrency: Int?)
}

/// One drain by worker processes.
struct ProcessDrain {
    var contender: Contender
    var processes: Int
    var round: Int
    var count: Int
    /// From spawning the processes to the poller seeing no unfinished operation.
    var seconds: Double
    /// From spawning the processes to the poller seeing the first one claimed.
    var startup: Double
    var commitsPerOperation: Double?
    var walBytesPerOperation: Double?
    /// The machine's cores busy during the drain, on average, and how many of them the
    /// PostgreSQL server's processes used.
    var busyCores: Double?
    var serverCores: Double?

    var perSecond: Double { Double(count) / seconds }
    var perSecondFromFirstClaim: Double { Double(count) / (seconds - startup) }
}

/// A Python interpreter with pgqueuer 1.6 and asyncpg, and what it says about itself.
struct PgqueuerPython {
    var executable: String
    var pgqueuerVersion: String
    var pythonVersion: String
    /// `PgQueuer.run()`'s defaults, read from its signature.
    var batchSize: String
    var maxConcurrentTasks: String
}

/// The script beside the benchmark's sources.
let pgqueuerScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("pgqueuer/pgqueuer_bench.py").path

/// Runs a command to its end; returns its status and output (stdout and stderr).
func runToEnd(_ arguments: [String], log: String) async throws -> (status: Int32, output: String) {
    let child = try ChildProcess(arguments, log: log)
    while child.exitStatus() == nil { try await Task.sleep(for: .milliseconds(10)) }
    return (child.status ?? -1, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
}

/// The `python3` on the PATH when it has pgqueuer 1.6 and asyncpg; otherwise a venv under
/// the benchmark's directory into which pip installs them. `nil` (and a line saying why)
/// when neither works.
func findPgqueuerPython() async -> PgqueuerPython? {
    let check = """
        import inspect, sys, pgqueuer, asyncpg
        assert pgqueuer.__version__.startswith("1.6."), "pgqueuer " + pgqueuer.__version__ + " is not 1.6"
        run = inspect.signature(pgqueuer.PgQueuer.run).parameters
        print(sys.executable, pgqueuer.__version__, sys.version.split()[0], run["batch_size"].default, run["max_concurrent_tasks"].default)
        """
    func probe(_ python: String) async -> PgqueuerPython? {
        guard let (status, output) = try? await runToEnd([python, "-c", check], log: "\(directory)/python-check.log"), status == 0
        else { return nil }
        let words = output.split(whereSeparator: \.isWhitespace).map(String.init)
        guard words.count == 5 else { return nil }
        return PgqueuerPython(
            executable: words[0], pgqueuerVersion: words[1], pythonVersion: words[2], batchSize: words[3], maxConcurrentTasks: words[4])
    }
    guard FileManager.default.fileExists(atPath: pgqueuerScript) else {
        print("pgqueuer rows skipped: \(pgqueuerScript) is missing")
        return nil
    }
    if let found = await probe(pathOf("python3") ?? "/usr/bin/python3") { return found }
    let venv = "\(directory)/pgqueuer-venv"
    print("pgqueuer 1.6 is not installed for python3: installing it into \(venv) …")
    let install = [
        "/bin/sh", "-c", "python3 -m venv \(venv) && \(venv)/bin/pip install --quiet 'pgqueuer==1.6.*' asyncpg",
    ]
    let (status, output) = (try? await runToEnd(install, log: "\(directory)/pip.log")) ?? (-1, "")
    if status == 0, let found = await probe("\(venv)/bin/python") { return found }
    let reason = output.split(separator: "\n").last.map(String.init) ?? "python3 -m venv or pip failed"
    print("pgqueuer rows skipped: could not install pgqueuer 1.6 and asyncpg (\(reason))")
    return nil
}

/// The first executable named `name` on the PATH.
func pathOf(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// An empty database for pgqueuer (the durable layer's runs use `Database`, which migrates).
func createPlainDatabase(_ name: String) async throws {
    let admin = try await connect()
    try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name)"), logger: logger)
    try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
    try await admin.close()
}

/// The database's committed transactions, read until two reads 250 ms apart agree (ended
/// backends report their counts as they exit), and the server's WAL position.
func databaseCounters(_ admin: PostgresConnection, _ database: String) async throws -> (commits: Int, wal: Int) {
    var last = -1
    for _ in 0..<20 {
        let rows = try await admin.query(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = \(database)", logger: logger
        ).collect()
        let now = try Int(rows[0].decode(Int64.self))
        if now == last { break }
        last = now
        try await Task.sleep(for: .milliseconds(250))
    }
    let wal = try await admin.query("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint", logger: logger).collect()
    return (last, try Int(wal[0].decode(Int64.self)))
}

/// Fills a fresh database with `count` no-op operations, checkpoints, spawns `processes`
/// worker processes and polls the database every 10 ms until no operation is unfinished.
func processDrain(
    _ contender: Contender, processes: Int, count: Int, round: Int, python: PgqueuerPython?
) async throws -> ProcessDrain {
    let name: String
    let claimable: String, unfinished: String
    let worker: [String]
    switch contender {
    case .pgqueuer:
        guard let python else { throw BenchmarkError("no Python with pgqueuer") }
        name = "pgqueuer_\(processes)p_\(round)"
        let dsn = "postgresql://postgres@127.0.0.1:\(port)/\(name)"
        try await createPlainDatabase(name)
        for step in [["install-schema"], ["fill", "\(count)"]] {
            let (status, output) = try await runToEnd(
                [python.executable, pgqueuerScript] + step + ["--dsn", dsn], log: "\(directory)/\(name)-\(step[0]).log")
            guard status == 0 else { throw BenchmarkError("pgqueuer_bench.py \(step[0]) failed:\n\(output)") }
        }
        // Finished jobs leave pgqueuer's table (for its log); the queued ones have a partial index.
        claimable = "SELECT count(*) FROM pgqueuer WHERE status = 'queued'"
        unfinished = "EXISTS (SELECT 1 FROM pgqueuer)"
        worker = [python.executable, pgqueuerScript, "work", "--dsn", dsn]
    case .ours(let concurrency):
        name = "durable_\(concurrency.map(String.init) ?? "default")_\(processes)p_\(round)"
        let database = try await Database(kind: .postgres, name: name)
        _ = try await independent(count)(DurableQueue(name: processQueue, store: database.open(connections: 2)))
        await database.close()
        // Each state's count is answered by its partial index.
        claimable = "SELECT count(*) FROM durable_operations WHERE queue = '\(processQueue)' AND state = 'ready'"
        unfinished = ["waiting", "ready", "running"].map {
            "EXISTS (SELECT 1 FROM durable_operations WHERE queue = '\(processQueue)' AND state = '\($0)')"
        }.joined(separator: " OR ")
        worker = [ownExecutable(), "--worker-process", "\(port)", name, concurrency.map(String.init) ?? "default"]
    }

    let admin = try await connect(), poller = try await connect(name)
    // Every run starts right after a checkpoint: the same full-page writes, none mid-run.
    try await admin.query("CHECKPOINT", logger: logger)
    let before = try await databaseCounters(admin, name)

    var polls = 0
    func poll(_ sql: String) async throws -> PostgresRow {
        polls += 1
        return try await poller.query(PostgresQuery(unsafeSQL: sql), logger: logger).collect()[0]
    }
    let cpuBefore = cpuSample()
    let started = ContinuousClock.now
    let children = try (0..<processes).map { try ChildProcess(worker, log: "\(directory)/\(name)-worker-\($0).log") }
    var startup: Double?
    var elapsed: Double?
    var cpuAfter: (busy: Double, server: Double)?
    do {
        while elapsed == nil {
            if startup == nil, try Int(await poll(claimable).decode(Int64.self)) < count {
                startup = seconds(ContinuousClock.now - started)
            }
            if startup != nil, try await !poll("SELECT \(unfinished)").decode(Bool.self) {
                elapsed = seconds(ContinuousClock.now - started)
                cpuAfter = cpuSample()
                break
            }
            for child in children {
                if let status = child.exitStatus(), status != 0 {
                    throw BenchmarkError("worker process exited with status \(status) before the queue was empty:\n\(child.tail)")
                }
            }
            guard ContinuousClock.now - started < .seconds(600) else { throw BenchmarkError("the queue was not empty after 600 s") }
            try await Task.sleep(for: .milliseconds(10))
        }
        try await waitForExit(children, timeout: .seconds(60))
    } catch {
        for child in children where child.status == nil { kill(child.pid, SIGKILL) }
        try? await waitForExit(children, timeout: .seconds(10))
        try? await poller.close()
        try? await admin.close()
        throw error
    }
    try await poller.close()
    let after = try await databaseCounters(admin, name)
    try await admin.close()
    // The poller's statements are not the workers' transactions.
    let commits = after.commits - before.commits - polls
    return ProcessDrain(
        contender: contender, processes: processes, round: round, count: count, seconds: elapsed ?? .nan,
        startup: startup ?? .nan, commitsPerOperation: Double(commits) / Double(count),
        walBytesPerOperation: Double(after.wal - before.wal) / Double(count),
        busyCores: cpuAfter.map { ($0.busy - cpuBefore.busy) / (elapsed ?? .nan) },
        serverCores: cpuAfter.map { ($0.server - cpuBefore.server) / (elapsed ?? .nan) })
}

/// CPU seconds so far: the machine's busy time over all cores (/proc/stat), and the time of
/// the processes named `postgres` (the server's; a backend that ended meanwhile is missed).
func cpuSample() -> (busy: Double, server: Double) {
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    var busy = 0.0
    if let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8), let line = stat.split(separator: "\n").first {
        let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        // user nice system idle iowait irq softirq steal: all but idle and iowait.
        if fields.count >= 8 { busy = (fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]) / ticks }
    }
    var server = 0.0
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where entry.allSatisfy(\.isNumber) {
        guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
            let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")"),
            stat[stat.index(after: open)..<close] == "postgres"
        else { continue }
        // After the name: state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
        if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) { server += (user + system) / ticks }
    }
    return (busy, server)
}

/// The kernel's release, as `uname -r` prints it.
func kernelRelease() -> String {
    let text = (try? String(contentsOfFile: "/proc/sys/kernel/osrelease", encoding: .utf8)) ?? ""
    let release = text.trimmingCharacters(in: .whitespacesAndNewlines)
    return release.isEmpty ? ProcessInfo.processInfo.operatingSystemVersionString : release
}

/// The section: runs alternate (pgqueuer, then ours, with 1 process, then with 2), `rounds`
/// times; the tables show medians and every run is listed.
func againstPgqueuer(count: Int, rounds: Int) async throws {
    let date = ISO8601DateFormatter.string(from: Date(), timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withInternetDateTime])
    let admin = try await connect()
    let server = try await admin.query("SHOW server_version", logger: logger).collect()[0].decode(String.self)
    try await admin.close()
    print("\n## Against pgqueuer\n")
    print("\(date); \(ProcessInfo.processInfo.activeProcessorCount) cores; Linux \(kernelRelease()); PostgreSQL \(server) (fsync on)\n")
    let python = await findPgqueuerPython()

    // The library's defaults, read from a worker and a store made here and never run.
    let probeStore = PostgresOperationStore(configuration: .init(port: port, username: "postgres"))
    let probe = DurableWorker(store: probeStore, queues: [processQueue], kinds: [Empty()])
    let defaultConcurrency: Int? = probe.concurrency
    let connections = probeStore.configuration.maximumConnections
    await probeStore.shutdown()

    let contenders: [Contender] = (python == nil ? [] : [.pgqueuer]) + [.ours(concurrency: nil), .ours(concurrency: 32), .ours(concurrency: 128)]
    func system(_ contender: Contender) -> String {
        contender == .pgqueuer ? "pgqueuer \(python?.pgqueuerVersion ?? "")" : "swift-operations DurableWorker"
    }
    func setting(_ contender: Contender) -> String {
        switch contender {
        case .pgqueuer:
            "`PgQueuer.run()` defaults (batch_size \(python?.batchSize ?? "?"), max_concurrent_tasks \(python?.maxConcurrentTasks ?? "?")), 1 asyncpg connection, Python \(python?.pythonVersion ?? "?")"
        case .ours(nil):
            "default concurrency (\(defaultConcurrency.map(String.init) ?? "?")), \(connections) connections"
        case .ours(let concurrency?):
            "concurrency \(concurrency), \(connections) connections"
        }
    }

    print(
        """
        \(count) no-op operations stored before each run in a fresh database, then 1 or 2 worker processes \
        spawned: pgqueuer's `pgqueuer_bench.py work` (PgQueuer.run() with its defaults), or this executable \
        with `--worker-process` (a PostgresOperationStore with default settings and one DurableWorker). Time: \
        from spawning the processes (interpreter or executable start included) to a poller in this process \
        seeing no unfinished operation (every 10 ms; pgqueuer deletes a job from its table when it records \
        its end). Each run starts right after a CHECKPOINT. Runs alternate (pgqueuer 1 process, ours 1 \
        process …, pgqueuer 2 processes, ours 2 processes …), \(rounds) round\(rounds == 1 ? "" : "s"); medians.

        """)

    var runs: [ProcessDrain] = []
    for round in 0..<rounds {
        for processes in [1, 2] {
            for contender in contenders {
                do {
                    runs.append(try await processDrain(contender, processes: processes, count: count, round: round, python: python))
                } catch {
                    print("run failed (\(system(contender)), \(setting(contender)), \(processes) process\(processes == 1 ? "" : "es"), round \(round + 1)): \(String(reflecting: error))")
                }
            }
        }
    }

    func medianRate(_ contender: Contender, _ processes: Int, _ rate: (ProcessDrain) -> Double) -> Double {
        median(runs.filter { $0.contender == contender && $0.processes == processes }.map(rate))
    }
    func table(_ rate: (ProcessDrain) -> Double) {
        print("| system | worker setting | 1 process ops/s | 2 processes ops/s | 2 / 1 | ratio to pgqueuer (1 p) | ratio to pgqueuer (2 p) |")
        print("|---|---|---:|---:|---:|---:|---:|")
        let reference = (medianRate(.pgqueuer, 1, rate), medianRate(.pgqueuer, 2, rate))
        for contender in contenders {
            let one = medianRate(contender, 1, rate), two = medianRate(contender, 2, rate)
            print(
                "| \(system(contender)) | \(setting(contender)) | \(format(one)) | \(format(two)) | \(format(two / one, 2)) | \(format(one / reference.0, 2)) | \(format(two / reference.1, 2)) |"
            )
        }
    }
    print("Operations per second, spawn → queue empty (medians of \(rounds)):\n")
    table(\.perSecond)
    print("\nThe same runs timed from the first claim the poller saw (process start left out):\n")
    table(\.perSecondFromFirstClaim)

    print("\nEvery run (transactions: the database's xact_commit delta, the poller's own left out; WAL: the server's, cluster-wide):\n")
    print("| round | processes | system | worker setting | spawn → empty s | spawn → first claim s | ops/s | ops/s from first claim | transactions committed per operation | WAL bytes per operation | cores busy (of \(ProcessInfo.processInfo.activeProcessorCount)) | of which PostgreSQL |")
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for run in runs {
        print(
            "| \(run.round + 1) | \(run.processes) | \(system(run.contender)) | \(setting(run.contender)) | \(format(run.seconds, 2)) | \(format(run.startup, 2)) | \(format(run.perSecond)) | \(format(run.perSecondFromFirstClaim)) | \(format(run.commitsPerOperation, 2)) | \(format(run.walBytesPerOperation)) | \(format(run.busyCores, 2)) | \(format(run.serverCores, 2)) |"
        )
    }
}
