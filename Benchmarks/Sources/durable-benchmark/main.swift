// The durable layer on PostgreSQL against a plain FOR UPDATE SKIP LOCKED loop, on a
// throwaway cluster with default durability (fsync on). From the repository root:
// `swift run -c release --package-path Benchmarks durable-benchmark [--quick]`.

import Foundation
import Logging
import OperationsDurable
import OperationsPostgres
import PostgresNIO

#if canImport(Glibc)
import Glibc
#endif

/// Does nothing: the cost measured is the queue's.
struct Empty: DurableOperation {
    static let kind = "empty"
    func run(_ input: Int, context: DurableContext) async throws -> Int { input }
}

let quick = CommandLine.arguments.contains("--quick")
let count = quick ? 2_000 : 20_000
let binaries = "/usr/lib/postgresql/15/bin"
guard FileManager.default.isExecutableFile(atPath: "\(binaries)/initdb") else {
    print("PostgreSQL's server binaries are missing (\(binaries)): apt-get install postgresql")
    exit(1)
}

// MARK: A throwaway cluster

func shell(_ command: String) {
    var pid: pid_t = 0
    let words: [String] = ["/bin/sh", "-c", command]
    let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { fatalError("cannot run \(command)") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    guard status == 0 else { fatalError("`\(command)` failed with status \(status)") }
}

func asPostgres(_ command: String) {
    shell(geteuid() == 0 ? "su postgres -s /bin/sh -c '\(command)'" : command)
}

let directory = "/tmp/durable-benchmark-\(getpid())"
let port = Int.random(in: 30_000..<60_000)
shell("mkdir -p \(directory)" + (geteuid() == 0 ? " && chown postgres \(directory)" : ""))
asPostgres("\(binaries)/initdb -D \(directory)/data -A trust -U postgres > \(directory)/initdb.log 2>&1")
asPostgres(
    "\(binaries)/pg_ctl -D \(directory)/data -o \"-p \(port) -k \(directory) -c listen_addresses=127.0.0.1\" -l \(directory)/log start -w > /dev/null")
defer {
    asPostgres("\(binaries)/pg_ctl -D \(directory)/data stop -m fast > /dev/null")
    shell("rm -rf \(directory)")
}

let logger = Logger(label: "benchmark")
func connect(_ database: String = "postgres") async throws -> PostgresConnection {
    try await PostgresConnection.connect(
        configuration: .init(host: "127.0.0.1", port: port, username: "postgres", password: nil, database: database, tls: .disable),
        id: 0, logger: logger)
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}

// MARK: The baseline: single-row claim, then complete, each its own transaction

func baseline(connections: Int) async throws -> Double {
    let setup = try await connect()
    try await setup.query("DROP TABLE IF EXISTS plain_jobs", logger: logger)
    try await setup.query(
        "CREATE TABLE plain_jobs (id bigserial PRIMARY KEY, state text NOT NULL DEFAULT 'ready', priority integer NOT NULL DEFAULT 0, scheduled_at timestamptz NOT NULL DEFAULT now())",
        logger: logger)
    try await setup.query("CREATE INDEX plain_jobs_ready ON plain_jobs (priority DESC, scheduled_at, id) WHERE state = 'ready'", logger: logger)
    try await setup.query("INSERT INTO plain_jobs (state) SELECT 'ready' FROM generate_series(1, \(count))", logger: logger)
    try await setup.close()
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<connections {
            group.addTask {
                let connection = try await connect()
                while true {
                    let rows = try await connection.query(
                        """
                        UPDATE plain_jobs SET state = 'running' WHERE id = (SELECT id FROM plain_jobs WHERE state = 'ready'
                            ORDER BY priority DESC, scheduled_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id
                        """, logger: logger
                    ).collect()
                    guard let id = try rows.first?.decode(Int64.self) else { break }
                    try await connection.query("UPDATE plain_jobs SET state = 'done' WHERE id = \(id)", logger: logger)
                }
                try await connection.close()
            }
        }
        try await group.waitForAll()
    }
    return Double(count) / seconds(ContinuousClock.now - start)
}

// MARK: The durable layer

func makeStore(_ database: String, connections: Int) async throws -> PostgresOperationStore {
    let admin = try await connect()
    try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(database)"), logger: logger)
    try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(database)"), logger: logger)
    try await admin.close()
    let store = PostgresOperationStore(
        configuration: .init(port: port, username: "postgres", database: database, maximumConnections: connections))
    try await store.migrate()
    return store
}

func succeeded(_ store: PostgresOperationStore) async throws -> Int {
    try await store.client.query("SELECT count(*)::integer FROM durable_operations WHERE state = 'succeeded'").collect()[0]
        .decode(Int.self)
}

struct DurableRun {
    var perSecond: Double
    var statementsPerOperation: Double
}

func durable(workers: Int, connections: Int) async throws -> DurableRun {
    let enqueuer = try await makeStore("durable_\(workers)", connections: 2)
    let queue = DurableQueue(name: "bench", store: enqueuer)
    for chunk in stride(from: 0, to: count, by: 1_000) {
        _ = try await enqueuer.enqueue((chunk..<min(count, chunk + 1_000)).map { try queue.request(Empty.self, input: $0) })
    }
    // Each worker gets its own store: the connections it would have in a process of its own.
    let stores = await (0..<workers).asyncMap { _ in
        PostgresOperationStore(configuration: .init(
            port: port, username: "postgres", database: "durable_\(workers)",
            maximumConnections: max(1, connections / workers)))
    }
    let start = ContinuousClock.now
    let statements = try await withThrowingTaskGroup(of: Void.self) { group in
        let running = stores.map { DurableWorker(store: $0, queues: ["bench"], kinds: [Empty()], concurrency: 32) }
        for worker in running { group.addTask { try await worker.run() } }
        while try await succeeded(enqueuer) < count { try await Task.sleep(for: .milliseconds(20)) }
        for worker in running { worker.stop() }
        try await group.waitForAll()
        return stores.map(\.statementsSent).reduce(0, +)
    }
    let elapsed = seconds(ContinuousClock.now - start)
    for store in stores { await store.shutdown() }
    await enqueuer.shutdown()
    return DurableRun(perSecond: Double(count) / elapsed, statementsPerOperation: Double(statements) / Double(count))
}

func enqueueToStart(samples: Int) async throws -> (p50: Double, p99: Double) {
    let store = try await makeStore("latency", connections: 4)
    let queue = DurableQueue(name: "bench", store: store)
    var latencies: [Double] = []
    try await withThrowingTaskGroup(of: Void.self) { group in
        let worker = DurableWorker(store: store, queues: ["bench"], kinds: [Empty()], concurrency: 4)
        group.addTask { try await worker.run() }
        for index in 0..<samples {
            let added = Date()
            let handle = try await queue.add(Empty.self, input: index)
            _ = try await handle.value
            let start = try await handle.attempts[0].start
            latencies.append(start.timeIntervalSince(added) * 1_000)
        }
        worker.stop()
        try await group.waitForAll()
    }
    await store.shutdown()
    latencies.sort()
    return (latencies[latencies.count / 2], latencies[min(latencies.count - 1, latencies.count * 99 / 100)])
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}

print("\(count) empty operations, PostgreSQL 15 with fsync on, on this machine (\(ProcessInfo.processInfo.activeProcessorCount) cores)\n")
print("| run | operations/s | statements per operation |")
print("|---|---:|---:|")
for connections in [1, 4] {
    let rate = try await baseline(connections: connections)
    print("| plain single-row SKIP LOCKED claim + complete, \(connections) connection\(connections == 1 ? "" : "s") | \(Int(rate)) | 2 |")
}
for workers in [1, 4] {
    let run = try await durable(workers: workers, connections: 4)
    print("| DurableWorker × \(workers) (4 connections in all, concurrency 32 each) | \(Int(run.perSecond)) | \(String(format: "%.2f", run.statementsPerOperation)) |")
}
let latency = try await enqueueToStart(samples: quick ? 50 : 300)
print("\nenqueue → start with an idle worker: p50 \(String(format: "%.1f", latency.p50)) ms, p99 \(String(format: "%.1f", latency.p99)) ms")
