// A store that logs what the worker asks of the one it wraps: failed calls, and calls that
// have not answered for a while (printed again until they do), so that a worker's log says
// where it waits when a test stalls.
#if PostgreSQL && SQLite

import Foundation
import OperationsDurable

// @unchecked Sendable: `calls` and `nextCall` are read and written only under `lock`.
final class TracingStore: DurableOperationStore, @unchecked Sendable {
    private let store: any DurableOperationStore
    private let lock = NSLock()
    private var calls: [Int: (what: String, started: ContinuousClock.Instant)] = [:]
    private var nextCall = 0

    init(_ store: any DurableOperationStore, slowAfter: Duration = .seconds(3)) {
        self.store = store
        // Runs as long as the process: a worker process has one store.
        Task.detached { [self] in
            while !Task.isCancelled {
                let now = ContinuousClock.now
                let slow = self.lock.withLock { self.calls.values.filter { now - $0.started > slowAfter } }
                for call in slow.sorted(by: { $0.started < $1.started }) {
                    log("still waiting for \(call.what) after \(now - call.started)")
                }
                try? await Task.sleep(for: slowAfter)
            }
        }
    }

    private func traced<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        let call = lock.withLock {
            nextCall += 1
            calls[nextCall] = (what, .now)
            return nextCall
        }
        defer { _ = lock.withLock { calls.removeValue(forKey: call) } }
        do {
            return try await body()
        } catch {
            log("\(what) failed: \(error)")
            throw error
        }
    }

    func migrate() async throws { try await traced("migrate") { try await store.migrate() } }
    func checkConnection() async throws { try await traced("checkConnection") { try await store.checkConnection() } }

    func enqueue(_ requests: [DurableEnqueueRequest]) async throws -> [DurableEnqueueResult] {
        try await traced("enqueue \(requests.count)") { try await store.enqueue(requests) }
    }

    func claim(queue: String, kinds: [String], worker: String, limit: Int, lease: Duration) async throws -> [DurableClaim] {
        try await traced("claim up to \(limit)") {
            try await store.claim(queue: queue, kinds: kinds, worker: worker, limit: limit, lease: lease)
        }
    }

    func complete(_ completions: [DurableCompletion], worker: String) async throws {
        let what = "complete \(completions.map { "\($0.id.rawValue)#\($0.attempt)" }.joined(separator: ","))"
        try await traced(what) { try await store.complete(completions, worker: worker) }
    }

    func giveBack(_ attempts: [DurableAttemptID], worker: String, reason: String) async throws {
        try await traced("giveBack \(attempts)") { try await store.giveBack(attempts, worker: worker, reason: reason) }
    }

    func giveBackAll(worker: String, reason: String) async throws {
        try await traced("giveBackAll") { try await store.giveBackAll(worker: worker, reason: reason) }
    }

    func heartbeat(
        worker: String, queues: [String], kinds: [String], holding: [DurableOperationID], lease: Duration
    ) async throws -> DurableHeartbeat {
        try await traced("heartbeat holding \(holding.map(\.rawValue).sorted())") {
            try await store.heartbeat(worker: worker, queues: queues, kinds: kinds, holding: holding, lease: lease)
        }
    }

    func rescueExpiredLeases() async throws -> Int {
        try await traced("rescue") {
            let count = try await store.rescueExpiredLeases()
            if count > 0 { log("rescued \(count)") }
            return count
        }
    }

    func record(of id: DurableOperationID, includingAttempts: Bool) async throws -> DurableRecord? {
        try await traced("record of \(id.rawValue)") { try await store.record(of: id, includingAttempts: includingAttempts) }
    }

    func waitFacts(of id: DurableOperationID) async throws -> DurableWaitFacts? {
        try await traced("waitFacts of \(id.rawValue)") { try await store.waitFacts(of: id) }
    }

    let finishWatch = DurableFinishWatch()

    func states(of ids: [DurableOperationID]) async throws -> [DurableOperationID: DurableState] {
        try await traced("states of \(ids.count)") { try await store.states(of: ids) }
    }

    func counts(queue: String) async throws -> DurableOperationCounts {
        try await traced("counts") { try await store.counts(queue: queue) }
    }

    func unfinishedCount(queue: String) async throws -> Int {
        try await traced("unfinishedCount") { try await store.unfinishedCount(queue: queue) }
    }

    func cancel(_ id: DurableOperationID, reason: String) async throws {
        try await traced("cancel \(id.rawValue)") { try await store.cancel(id, reason: reason) }
    }

    func cancelAll(queue: String, reason: String) async throws {
        try await traced("cancelAll") { try await store.cancelAll(queue: queue, reason: reason) }
    }

    func reportProgress(of id: DurableOperationID, attempt: Int, completed: Int64, total: Int64) async throws {
        try await traced("reportProgress") {
            try await store.reportProgress(of: id, attempt: attempt, completed: completed, total: total)
        }
    }

    func setMaxConcurrentOperationCount(_ count: Int?, queue: String) async throws {
        try await traced("setMaxConcurrentOperationCount") { try await store.setMaxConcurrentOperationCount(count, queue: queue) }
    }

    func maxConcurrentOperationCount(queue: String) async throws -> Int? {
        try await traced("maxConcurrentOperationCount") { try await store.maxConcurrentOperationCount(queue: queue) }
    }

    func setSuspended(_ suspended: Bool, queue: String) async throws {
        try await traced("setSuspended") { try await store.setSuspended(suspended, queue: queue) }
    }

    func isSuspended(queue: String) async throws -> Bool {
        try await traced("isSuspended") { try await store.isSuspended(queue: queue) }
    }

    func prune(finishedBefore date: Date, limit: Int) async throws -> Int {
        try await traced("prune") { try await store.prune(finishedBefore: date, limit: limit) }
    }

    func notifications() -> AsyncStream<DurableStoreNotification> {
        let (stream, continuation) = AsyncStream.makeStream(of: DurableStoreNotification.self)
        let upstream = store.notifications()
        let forwarding = Task {
            for await notification in upstream {
                if notification == .resynchronize { log("notifications: resynchronize") }
                continuation.yield(notification)
            }
            log("notifications ended")
            continuation.finish()
        }
        continuation.onTermination = { _ in forwarding.cancel() }
        return stream
    }
}

/// A line on standard output with the time, for the test's failure message.
func log(_ line: String) {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withTime, .withColonSeparatorInTime, .withFractionalSeconds]
    let stamp = formatter.string(from: Date())
    FileHandle.standardOutput.write(Data("\(stamp) \(line)\n".utf8))
}
#endif
