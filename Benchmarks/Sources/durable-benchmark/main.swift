// The durable layer on PostgreSQL and on SQLite, against a plain FOR UPDATE SKIP LOCKED
// loop and against pgqueuer, on a throwaway cluster with default durability (fsync on). From
// the repository root: `swift run -c release --package-path Benchmarks durable-benchmark
// [--quick] [--rounds N] [--only-pgqueuer-comparison | --only-sqlite-processes | --only-waiting |
// --only-dashboard | --only-dashboard-viewers [--processes N]]`.

import Foundation
import OperationsDurable

#if canImport(Glibc)
import Glibc
#endif

/// Writes a line at once, also into a pipe: what was measured is not lost if a later run fails.
func print(_ line: String = "") {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

// A worker process of the pgqueuer comparison: no cluster of its own.
if let index = CommandLine.arguments.firstIndex(of: "--worker-process") {
    exit(await runWorkerProcess(Array(CommandLine.arguments[(index + 1)...])))
}

let quick = CommandLine.arguments.contains("--quick")
let roundsArgument = argument(after: "--rounds").flatMap(Int.init).map { max(1, $0) }
/// Operations each run of the pgqueuer comparison drains.
let pgqueuerCount = quick ? 2_000 : 10_000
let count = quick ? 2_000 : 20_000
let graphSize = quick ? 250 : 1_000
// Worker processes' throughput with 0 and 10 dashboard viewers, alternately (SQLite, and
// PostgreSQL when its binaries are found).
if CommandLine.arguments.contains("--only-dashboard-viewers") {
    let processes = argument(after: "--processes").flatMap(Int.init).map { max(1, $0) } ?? 2
    exit(await DashboardViewersBenchmark.main(rounds: max(3, roundsArgument ?? 5), processes: processes, quick: quick))
}
// The dashboard's reads on a large store: SQLite, and PostgreSQL when its binaries are found.
if CommandLine.arguments.contains("--only-dashboard") {
    let postgres = FileManager.default.isExecutableFile(atPath: "\(binaries)/initdb")
    if postgres {
        startCluster()
    } else {
        print("PostgreSQL's server binaries are missing (\(binaries)): SQLite only")
        shell("mkdir -p \(directory)")
    }
    var failed = false
    do {
        try await DashboardBenchmark.run(postgres ? [StoreKind.sqlite, .postgres] : [.sqlite])
    } catch {
        print("the dashboard benchmark failed: \(error)")
        failed = true
    }
    if postgres { stopCluster() } else { shell("rm -rf \(directory)") }
    exit(failed ? 1 : 0)
}
guard FileManager.default.isExecutableFile(atPath: "\(binaries)/initdb") else {
    print("PostgreSQL's server binaries are missing (\(binaries)): apt-get install postgresql")
    exit(1)
}
startCluster()
defer { stopCluster() }
if CommandLine.arguments.contains("--only-pgqueuer-comparison") {
    try await againstPgqueuer(count: pgqueuerCount, rounds: roundsArgument ?? (quick ? 1 : 3))
    stopCluster()
    exit(0)
}
if CommandLine.arguments.contains("--only-waiting") {
    try await waitingForResults(counts: quick ? [1_000] : [2_000, 10_000], rounds: roundsArgument ?? (quick ? 1 : 3))
    stopCluster()
    exit(0)
}
if CommandLine.arguments.contains("--only-sqlite-processes") {
    try await sqliteWorkerProcesses(count: pgqueuerCount, rounds: roundsArgument ?? (quick ? 1 : 3))
    stopCluster()
    exit(0)
}

func format(_ value: Double?, _ digits: Int = 0) -> String {
    guard let value, value.isFinite else { return "—" }
    return String(format: "%.\(digits)f", value)
}

let cores = ProcessInfo.processInfo.activeProcessorCount
print("\(count) empty operations; PostgreSQL 15 and SQLite (WAL, synchronous=FULL), both with fsync on; \(cores) cores\n")
print("| run | operations/s | statements per operation | rows written per operation |")
print("|---|---:|---:|---:|")
for connections in [1, 4] {
    let rate = try await baseline(count: count, connections: connections)
    print("| plain single-row SKIP LOCKED claim + complete (PostgreSQL), \(connections) connection\(connections == 1 ? "" : "s") | \(Int(rate)) | 2 | 3 |")
}
/// Rows compared with each other run in turn, `rounds` times; the table shows medians.
let rounds = roundsArgument ?? (quick ? 1 : 3)

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

for kind in StoreKind.allCases {
    let one = try await drain(
        try await Database(kind: kind, name: "drain_1"), workers: 1, connections: 4, graph: independent(count))
    // Without and with the limit in turn: the share compares runs made minutes apart at most.
    var unlimited: [Drain] = [], limited: [Drain] = []
    for round in 0..<rounds {
        unlimited.append(try await drain(
            try await Database(kind: kind, name: "drain_4_\(round)"), workers: 4, connections: 4, graph: independent(count)))
        limited.append(try await drain(
            try await Database(kind: kind, name: "drain_4_limited_\(round)"), workers: 4, connections: 4, limit: 4 * 32,
            graph: independent(count)))
    }
    let connections = kind == .postgres ? ", 4 connections in all" : ""
    let free = median(unlimited.map(\.perSecond)), bounded = median(limited.map(\.perSecond))
    print("| \(kind.rawValue): DurableWorker × 1, concurrency 32\(connections) | \(Int(one.perSecond)) | \(format(one.statementsPerOperation, 2)) | \(format(one.rowsPerOperation, 2)) |")
    print("| \(kind.rawValue): DurableWorker × 4, concurrency 32 each\(connections) (median of \(rounds)) | \(Int(free)) | \(format(unlimited.last?.statementsPerOperation, 2)) | \(format(unlimited.last?.rowsPerOperation, 2)) |")
    print("| \(kind.rawValue): × 4, queue limit 128 (median of \(rounds), each run after one without the limit) | \(Int(bounded)) (\(format(bounded / free * 100)) % of no limit; runs: \(limited.map { format($0.perSecond) }.joined(separator: ", ")) against \(unlimited.map { format($0.perSecond) }.joined(separator: ", "))) | \(format(limited.last?.statementsPerOperation, 2)) | \(format(limited.last?.rowsPerOperation, 2)) |")
}

print("\nDependency graphs, 4 workers of concurrency 32: release = an operation's start minus its last dependency's end (ms); N and 2N in turn, \(rounds) times, medians\n")
print("| graph | store | operations | total s | release p50 ms | release p99 ms | growth when N doubles |")
print("|---|---|---:|---:|---:|---:|---:|")
for kind in StoreKind.allCases {
    for (name, shape) in [("fan-in", fanIn), ("diamond", diamond)] as [(String, (Int) -> (DurableQueue) async throws -> [DurableOperationID])] {
        var runs: [Int: [Drain]] = [:]
        for round in 0..<rounds {
            for size in [graphSize, 2 * graphSize] {
                let database = try await Database(kind: kind, name: "\(name.replacingOccurrences(of: "-", with: "_"))_\(size)_\(round)")
                runs[size, default: []].append(try await drain(database, workers: 4, connections: 4, graph: shape(size)))
            }
        }
        let seconds = { (size: Int) in median(runs[size, default: []].map(\.seconds)) }
        for size in [graphSize, 2 * graphSize] {
            let growth = size == graphSize ? "" : format(seconds(size) / seconds(graphSize), 2)
            let releases = runs[size, default: []].flatMap(\.releases).sorted()
            print(
                "| \(name) | \(kind.rawValue) | \(size) | \(format(seconds(size), 2)) (runs: \(runs[size, default: []].map { format($0.seconds, 2) }.joined(separator: ", "))) | \(format(percentile(releases, 0.5), 1)) | \(format(percentile(releases, 0.99), 1)) | \(growth) |"
            )
        }
    }
}

print("\nEnqueue → start with an idle worker (ms)\n")
print("| store | p50 | p99 |")
print("|---|---:|---:|")
for kind in StoreKind.allCases {
    let latencies = try await enqueueToStart(try await Database(kind: kind, name: "latency"), samples: quick ? 50 : 300)
    print("| \(kind.rawValue) | \(format(percentile(latencies, 0.5), 1)) | \(format(percentile(latencies, 0.99), 1)) |")
}

try await againstPgqueuer(count: pgqueuerCount, rounds: rounds)
try await sqliteWorkerProcesses(count: pgqueuerCount, rounds: rounds)
try await waitingForResults(counts: quick ? [1_000] : [2_000, 10_000], rounds: rounds)
