// A store that kills its own process at a chosen point of an operation's life, for the tests
// that check what a crash at that point leaves behind.
#if PostgreSQL && SQLite

import Foundation
import OperationsDurable
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where the process dies.
enum Fault: String {
    /// Right after a claim of the kind was recorded, before its body starts.
    case afterClaim = "after-claim"
    /// After a body of the kind ended, before its end is recorded.
    case beforeCompletion = "before-completion"
}

/// Forwards everything to `base`, and SIGKILLs this process at `fault` for the first
/// operation of `kind`.
final class FaultyStore: DurableOperationStore {
    let base: any DurableOperationStore
    let fault: Fault
    let kind: String
    /// Operations of `kind` this process claimed.
    private let claimed = Mutex<Set<DurableOperationID>>([])

    init(base: any DurableOperationStore, fault: Fault, kind: String) {
        self.base = base
        self.fault = fault
        self.kind = kind
    }

    private func die(_ why: String) -> Never {
        FileHandle.standardOutput.write(Data("dying \(why)\n".utf8))
        kill(getpid(), SIGKILL)
        fatalError("SIGKILL did not end the process")
    }

    func migrate() async throws { try await base.migrate() }
    func checkConnection() async throws { try await base.checkConnection() }
    func enqueue(_ requests: [DurableEnqueueRequest]) async throws -> [DurableEnqueueResult] {
        try await base.enqueue(requests)
    }

    func claim(queue: String, kinds: [String], worker: String, limit: Int, lease: Duration) async throws -> [DurableClaim] {
        let claims = try await base.claim(queue: queue, kinds: kinds, worker: worker, limit: limit, lease: lease)
        let mine = claims.filter { $0.kind == kind }.map(\.id)
        if fault == .afterClaim, let id = mine.first { die("after claiming \(id)") }
        claimed.withLock { $0.formUnion(mine) }
        return claims
    }

    func complete(_ completions: [DurableCompletion], worker: String) async throws {
        if fault == .beforeCompletion, let id = completions.map(\.id).first(where: { id in claimed.withLock { $0.contains(id) } }) {
            die("before recording the end of \(id)")
        }
        try await base.complete(completions, worker: worker)
    }

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
    func prune(finishedBefore date: Date, limit: Int) async throws -> Int {
        try await base.prune(finishedBefore: date, limit: limit)
    }
    func notifications() -> AsyncStream<DurableStoreNotification> { base.notifications() }
}
#endif
