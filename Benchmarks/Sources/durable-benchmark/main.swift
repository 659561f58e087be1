// The durable layer on PostgreSQL and on SQLite, against a plain FOR UPDATE SKIP LOCKED
// loop, on a throwaway cluster with default durability (fsync on). From the repository
// root: `swift run -c release --package-path Benchmarks durable-benchmark [--quick]`.

import Foundation
import OperationsDurable

#if canImport(Glibc)
import Glibc
#endif

/// Writes a line at once, also into a pipe: what was measured is not lost if a later run fails.
func print(_ line: String = "") {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let quick = CommandLine.arguments.contains("--quick")
let count = quick ? 2_000 : 20_000
let graphSize = quick ? 250 : 1_000
guard FileManager.default.isExecutableFile(atPath: "\(binaries)/initdb") else {
    print("PostgreSQL's server binaries are missing (\(binaries)): apt-get install postgresql")
    exit(1)
}
startCluster()
defer { stopCluster() }

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
var unlimited: [StoreKind: Double] = [:]
for kind in StoreKind.allCases {
    for (workers, limit) in [(1, nil), (4, nil), (4, 4 * 32)] as [(Int, Int?)] {
        let database = try await Database(kind: kind, name: "drain_\(workers)_\(limit ?? 0)")
        let run = try await drain(database, workers: workers, connections: 4, limit: limit, graph: independent(count))
        if workers == 4, limit == nil { unlimited[kind] = run.perSecond }
        let limited = limit.map { ", queue limit \($0)" } ?? ""
        let share = limit.flatMap { _ in unlimited[kind].map { " (\(format(run.perSecond / $0 * 100)) % of no limit)" } } ?? ""
        print(
            "| \(kind.rawValue): DurableWorker × \(workers), concurrency 32 each\(kind == .postgres ? ", 4 connections in all" : "")\(limited) | \(Int(run.perSecond))\(share) | \(format(run.statementsPerOperation, 2)) | \(format(run.rowsPerOperation, 2)) |"
        )
    }
}

print("\nDependency graphs, 4 workers of concurrency 32: release = an operation's start minus its last dependency's end (ms)\n")
print("| graph | store | operations | total s | release p50 ms | release p99 ms | growth when N doubles |")
print("|---|---|---:|---:|---:|---:|---:|")
for kind in StoreKind.allCases {
    for (name, shape) in [("fan-in", fanIn), ("diamond", diamond)] as [(String, (Int) -> (DurableQueue) async throws -> [DurableOperationID])] {
        var previous: Double?
        for size in [graphSize, 2 * graphSize] {
            let database = try await Database(kind: kind, name: "\(name.replacingOccurrences(of: "-", with: "_"))_\(size)")
            let run = try await drain(database, workers: 4, connections: 4, graph: shape(size))
            let growth = previous.map { format(run.seconds / $0, 2) } ?? ""
            previous = run.seconds
            print(
                "| \(name) | \(kind.rawValue) | \(size) | \(format(run.seconds, 2)) | \(format(percentile(run.releases, 0.5), 1)) | \(format(percentile(run.releases, 0.99), 1)) | \(growth) |"
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
