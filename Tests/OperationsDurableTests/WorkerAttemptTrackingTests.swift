// A worker that claims an operation again while the previous attempt's task is still
// finishing must keep track of the new attempt.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
@_spi(Engine) import Operations
import OperationsDurable
import OperationsTestSupport
import Testing

/// A store that, once a failed attempt of `operation` is recorded, holds the worker's
/// completion call until the worker has claimed that operation again: the previous
/// attempt's task then finishes after the next attempt started.
private final class ReclaimBeforeCompletionReturns: DurableOperationStore {
    let base: any DurableOperationStore
    let operation: DurableOperationID
    let reclaimed = TestGate()

    init(_ base: any DurableOperationStore, holding operation: DurableOperationID) {
        self.base = base
        self.operation = operation
    }

    func complete(_ completions: [DurableCompletion], worker: String) async throws {
        try await base.complete(completions, worker: worker)
        if completions.contains(where: { completion in
            guard completion.id == operation, case .failed = completion.result else { return false }
            return true
        }) {
            await reclaimed.waitIgnoringCancellation()
        }
    }

    func claim(queue: String, kinds: [String], worker: String, limit: Int, lease: Duration) async throws -> [DurableClaim] {
        let claims = try await base.claim(queue: queue, kinds: kinds, worker: worker, limit: limit, lease: lease)
        if claims.contains(where: { $0.id == operation && $0.attempt > 1 }) { reclaimed.open() }
        return claims
    }

    func migrate() async throws { try await base.migrate() }
    func checkConnection() async throws { try await base.checkConnection() }
    func enqueue(_ requests: [DurableEnqueueRequest]) async throws -> [DurableEnqueueResult] { try await base.enqueue(requests) }
    func giveBack(_ ids: [DurableOperationID], worker: String, reason: String) async throws {
        try await base.giveBack(ids, worker: worker, reason: reason)
    }
    func heartbeat(
        worker: String, queues: [String], kinds: [String], holding: [DurableOperationID], lease: Duration
    ) async throws -> DurableHeartbeat {
        try await base.heartbeat(worker: worker, queues: queues, kinds: kinds, holding: holding, lease: lease)
    }
    func rescueExpiredLeases() async throws -> Int { try await base.rescueExpiredLeases() }
    func record(of id: DurableOperationID, includingAttempts: Bool) async throws -> DurableRecord? {
        try await base.record(of: id, includingAttempts: includingAttempts)
    }
    func waitFacts(of id: DurableOperationID) async throws -> DurableWaitFacts? { try await base.waitFacts(of: id) }
    func cancel(_ id: DurableOperationID, reason: String) async throws { try await base.cancel(id, reason: reason) }
    func cancelAll(queue: String, reason: String) async throws { try await base.cancelAll(queue: queue, reason: reason) }
    func reportProgress(of id: DurableOperationID, attempt: Int, completed: Int64, total: Int64) async throws {
        try await base.reportProgress(of: id, attempt: attempt, completed: completed, total: total)
    }
    func setMaximumConcurrentOperationCount(_ count: Int?, queue: String) async throws {
        try await base.setMaximumConcurrentOperationCount(count, queue: queue)
    }
    func maximumConcurrentOperationCount(queue: String) async throws -> Int? {
        try await base.maximumConcurrentOperationCount(queue: queue)
    }
    func setSuspended(_ suspended: Bool, queue: String) async throws { try await base.setSuspended(suspended, queue: queue) }
    func isSuspended(queue: String) async throws -> Bool { try await base.isSuspended(queue: queue) }
    func prune(finishedBefore date: Date, limit: Int) async throws -> Int { try await base.prune(finishedBefore: date, limit: limit) }
    func notifications() -> AsyncStream<DurableStoreNotification> { base.notifications() }
}

@Suite("A worker's attempts of one operation", .timeLimit(.minutes(2)))
struct WorkerAttemptTrackingTests {
    @Test(
        "an attempt claimed while the previous attempt's task still finishes runs tracked, and its result is recorded",
        arguments: StoreKind.all)
    func reclaimWhilePreviousAttemptFinishes(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let flaky = try await DurableQueue(name: "default", store: store)
                .add(Flaky.self, input: 2, retry: DurableRetry(.immediate, maximumAttempts: 2))
            let gated = ReclaimBeforeCompletionReturns(store, holding: flaky.id)
            let handle = DurableQueue(name: "default", store: gated).handle(Flaky.self, id: flaky.id)
            let value = try await withWorkers(store: gated) { _ async throws in
                try await within(30, "the second attempt") { try await handle.value }
            }
            #expect(value == 2)
            #expect(try await handle.attempts.map(\.number) == [1, 2])
        }
    }
}
#endif
