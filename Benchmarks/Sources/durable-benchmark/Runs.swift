// The measured runs: draining empty operations, dependency graphs, enqueue → start.

import Foundation
import OperationsDurable

/// Does nothing: the cost measured is the queue's.
struct Empty: DurableOperation {
    static let kind = "empty"
    func run(_ input: Int, context: DurableContext) async throws -> Int { input }
}

func seconds(between start: Date, and end: Date) -> Double { end.timeIntervalSince(start) }

/// What a run of workers did.
struct Drain {
    var perSecond: Double
    var seconds: Double
    var statementsPerOperation: Double?
    var rowsPerOperation: Double?
    /// For graphs: from the end of an operation's last dependency to its start, in ms.
    var releases: [Double] = []
}

/// Stores `requests` (in batches of 1,000, each batch after the ones it depends on), runs
/// `workers` workers of concurrency 32 until every operation finished, and times them from
/// the workers' start to the last attempt's end (both read after the run, so that reading
/// does not slow the workers down).
func drain(
    _ database: Database, workers: Int, connections: Int, limit: Int? = nil,
    graph: (DurableQueue) async throws -> [DurableOperationID]
) async throws -> Drain {
    let enqueuer = database.open(connections: 2)
    let queue = DurableQueue(name: "bench", store: enqueuer)
    if let limit { try await queue.setMaxConcurrentOperationCount(limit) }
    let ids = try await graph(queue)
    let last = queue.handle(Empty.self, id: ids[ids.count - 1])
    let statementsBefore = database.statements ?? 0
    let stores = (0..<workers).map { _ in database.open(connections: max(1, connections / workers)) }
    let started = Date()
    try await withThrowingTaskGroup(of: Void.self) { group in
        let running = stores.map { DurableWorker(store: $0, queues: ["bench"], kinds: [Empty()], concurrency: 32) }
        for worker in running { group.addTask { try await worker.run() } }
        _ = try await last.value
        for id in ids { _ = try await queue.handle(Empty.self, id: id).value }
        for worker in running { worker.stop() }
        try await group.waitForAll()
    }
    let statements = database.statements.map { $0 - statementsBefore }
    var records: [DurableOperationID: DurableRecord] = [:]
    for id in ids { records[id] = try await enqueuer.record(of: id, includingAttempts: true) }
    let end = records.values.compactMap { $0.attempts.last?.end }.max() ?? Date()
    let elapsed = seconds(between: started, and: end)
    await database.close()
    let rows = try await database.rowsWritten()
    return Drain(
        perSecond: Double(ids.count) / elapsed, seconds: elapsed,
        statementsPerOperation: statements.map { Double($0) / Double(ids.count) },
        rowsPerOperation: rows.map { Double($0) / Double(ids.count) },
        releases: releaseLatencies(records))
}

/// Start minus the last dependency's end, for every operation that has dependencies; read
/// from the graph the run stored in `dependencies`.
nonisolated(unsafe) var dependencies: [DurableOperationID: [DurableOperationID]] = [:]

func releaseLatencies(_ records: [DurableOperationID: DurableRecord]) -> [Double] {
    var latencies: [Double] = []
    for (id, parents) in dependencies {
        guard let start = records[id]?.attempts.first?.start else { continue }
        let ready = parents.compactMap { records[$0]?.attempts.last?.end }.max()
        if let ready { latencies.append(start.timeIntervalSince(ready) * 1_000) }
    }
    dependencies = [:]
    return latencies.sorted()
}

/// `count` independent operations.
func independent(_ count: Int) -> (DurableQueue) async throws -> [DurableOperationID] {
    { queue in
        var ids: [DurableOperationID] = []
        for chunk in stride(from: 0, to: count, by: 1_000) {
            let requests = try (chunk..<min(count, chunk + 1_000)).map { try queue.request(Empty.self, input: $0) }
            ids += try await queue.store.enqueue(requests).map(\.id)
        }
        return ids
    }
}

/// `count - 1` independent operations and one that depends on them all.
func fanIn(_ count: Int) -> (DurableQueue) async throws -> [DurableOperationID] {
    { queue in
        let leaves = try await independent(count - 1)(queue)
        let sink = try await queue.add(Empty.self, input: 0, dependencies: leaves).id
        dependencies = [sink: leaves]
        return leaves + [sink]
    }
}

/// One root, `count - 2` operations that depend on it, and one that depends on those.
func diamond(_ count: Int) -> (DurableQueue) async throws -> [DurableOperationID] {
    { queue in
        let root = try await queue.add(Empty.self, input: 0).id
        var middle: [DurableOperationID] = []
        for chunk in stride(from: 0, to: count - 2, by: 1_000) {
            let requests = try (chunk..<min(count - 2, chunk + 1_000)).map {
                try queue.request(Empty.self, input: $0, dependencies: [root])
            }
            middle += try await queue.store.enqueue(requests).map(\.id)
        }
        let sink = try await queue.add(Empty.self, input: 0, dependencies: middle).id
        for id in middle { dependencies[id] = [root] }
        dependencies[sink] = middle
        return [root] + middle + [sink]
    }
}

/// Enqueue → start with one idle worker, one operation at a time, in ms.
func enqueueToStart(_ database: Database, samples: Int) async throws -> [Double] {
    let store = database.open(connections: 4)
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
    await database.close()
    return latencies.sorted()
}

func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}
