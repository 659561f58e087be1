// A store call that never answers (its connection dropped mid-way) must not hold a worker:
// the worker gives up on it after its store call timeout and carries on.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
@_spi(Engine) import Operations
@testable import OperationsDurable
import OperationsTestSupport
import Testing

/// A store whose chosen call, once, never answers and ignores cancellation, as a query on a
/// connection that dropped at the wrong moment: either the request is lost, or it lands and
/// only its answer is lost.
private final class UnansweredCallStore: DurableOperationStore {
    enum Call: Sendable { case claim, complete, heartbeat }

    let base: any DurableOperationStore
    let call: Call
    let landsFirst: Bool
    /// Calls of that kind answered before the one that is not.
    let answeredFirst: Int
    private let calls = Locked(0)
    /// Opened when the unanswered call began.
    let unanswered = TestGate()
    /// Opened when the test ends, so that the unanswered call's task finishes.
    let release = TestGate()

    init(_ base: any DurableOperationStore, leavingUnanswered call: Call, landsFirst: Bool, answeredFirst: Int = 0) {
        self.base = base
        self.call = call
        self.landsFirst = landsFirst
        self.answeredFirst = answeredFirst
    }

    private func pass<T>(_ kind: Call, _ body: () async throws -> T) async throws -> T {
        let isTheOne = kind == call && calls.withLock { count in
            count += 1
            return count == answeredFirst + 1
        }
        guard isTheOne else { return try await body() }
        if landsFirst { _ = try await body() }
        unanswered.open()
        await release.waitIgnoringCancellation()
        throw DurableError(.databaseUnreachable, "the connection dropped")
    }

    func claim(queue: String, kinds: [String], worker: String, limit: Int, lease: Duration) async throws -> [DurableClaim] {
        try await pass(.claim) { try await base.claim(queue: queue, kinds: kinds, worker: worker, limit: limit, lease: lease) }
    }

    func complete(_ completions: [DurableCompletion], worker: String) async throws {
        try await pass(.complete) { try await base.complete(completions, worker: worker) }
    }

    func heartbeat(
        worker: String, queues: [String], kinds: [String], holding: [DurableOperationID], lease: Duration
    ) async throws -> DurableHeartbeat {
        try await pass(.heartbeat) {
            try await base.heartbeat(worker: worker, queues: queues, kinds: kinds, holding: holding, lease: lease)
        }
    }

    func migrate() async throws { try await base.migrate() }
    func checkConnection() async throws { try await base.checkConnection() }
    func enqueue(_ requests: [DurableEnqueueRequest]) async throws -> [DurableEnqueueResult] { try await base.enqueue(requests) }
    func giveBack(_ attempts: [DurableAttemptID], worker: String, reason: String) async throws {
        try await base.giveBack(attempts, worker: worker, reason: reason)
    }
    func giveBackAll(worker: String, reason: String) async throws {
        try await base.giveBackAll(worker: worker, reason: reason)
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
    func setMaxConcurrentOperationCount(_ count: Int?, queue: String) async throws {
        try await base.setMaxConcurrentOperationCount(count, queue: queue)
    }
    func maxConcurrentOperationCount(queue: String) async throws -> Int? {
        try await base.maxConcurrentOperationCount(queue: queue)
    }
    func setSuspended(_ suspended: Bool, queue: String) async throws { try await base.setSuspended(suspended, queue: queue) }
    func isSuspended(queue: String) async throws -> Bool { try await base.isSuspended(queue: queue) }
    func prune(finishedBefore date: Date, limit: Int) async throws -> Int { try await base.prune(finishedBefore: date, limit: limit) }
    func notifications() -> AsyncStream<DurableStoreNotification> { base.notifications() }
    let finishWatch = DurableFinishWatch()
    func states(of ids: [DurableOperationID]) async throws -> [DurableOperationID: DurableState] {
        try await base.states(of: ids)
    }
    func counts(queue: String) async throws -> DurableOperationCounts { try await base.counts(queue: queue) }
    func unfinishedCount(queue: String) async throws -> Int { try await base.unfinishedCount(queue: queue) }
}

/// One in-process worker on `store`, with the default store call timeout (10 s), while the
/// body runs. Not shorter: on a loaded machine (the whole suite, a sanitizer) a call that is
/// answered can take several seconds, and must not count as unanswered.
private func withWorkerOn<T: Sendable>(
    store: any DurableOperationStore, lease: Duration? = nil, _ body: @Sendable () async throws -> T
) async throws -> T {
    var configuration = testWorkerConfiguration(name: "impatient")
    if let lease {
        configuration.lease = lease
        configuration.heartbeatInterval = lease / 4
    }
    let worker = DurableWorker(store: store, queues: ["default"], kinds: allTestKinds, configuration: configuration)
    return try await withRunningWorker(worker, body)
}

/// Runs `body` with a store over a fresh one of `kind` that leaves one `call` unanswered
/// (see `UnansweredCallStore`); the unanswered call is released when the body returns.
private func withStoreLeavingUnanswered<T>(
    _ kind: StoreKind, _ call: UnansweredCallStore.Call, landsFirst: Bool, answeredFirst: Int = 0,
    _ body: (UnansweredCallStore) async throws -> T
) async throws -> T {
    try await withStore(kind) { store in
        let unanswering = UnansweredCallStore(store, leavingUnanswered: call, landsFirst: landsFirst, answeredFirst: answeredFirst)
        defer { unanswering.release.open() }
        return try await body(unanswering)
    }
}

@Suite("A store call that never answers", .timeLimit(.minutes(3)))
struct WorkerUnansweredCallTests {
    @Test(
        "a completion that never answers is recorded again, once, and the operation finishes",
        arguments: StoreKind.all, [false, true])
    func unansweredCompletion(_ kind: StoreKind, landsFirst: Bool) async throws {
        try await withStoreLeavingUnanswered(kind, .complete, landsFirst: landsFirst) { unanswering in
            let queue = DurableQueue(name: "default", store: unanswering)
            let handle = try await queue.add(Echo.self, input: 7)
            let (value, next) = try await withWorkerOn(store: unanswering) {
                let value = try await within(30, "the operation whose completion was not answered") { try await handle.value }
                // Completions after it are recorded too, not queued behind the unanswered one.
                let later = try await queue.add(Echo.self, input: 70)
                let next = try await within(30, "an operation finished after it") { try await later.value }
                return (value, next)
            }
            #expect(value == 7)
            #expect(next == 70)
            // The call was left unanswered (a call that lands first opens the gate only after
            // landing, so the operation may finish just before).
            try await within(30, "the unanswered call") { await unanswering.unanswered.wait() }
            let attempts = try await handle.attempts
            #expect(attempts.count == 1 && attempts[0].error == nil, "\(attempts)")
        }
    }

    @Test(
        "a claim that never answers does not stop the worker claiming; an operation it claimed unseen is given back without costing an attempt",
        arguments: StoreKind.all, [false, true])
    func unansweredClaim(_ kind: StoreKind, landsFirst: Bool) async throws {
        try await withStoreLeavingUnanswered(kind, .claim, landsFirst: landsFirst) { unanswering in
            // One attempt only: an attempt the worker never saw must not use it up.
            let handle = try await DurableQueue(name: "default", store: unanswering).add(Echo.self, input: 8, retry: .never)
            let value = try await withWorkerOn(store: unanswering) {
                try await within(60, "the operation after the unanswered claim") { try await handle.value }
            }
            #expect(value == 8)
            // The call was left unanswered (a call that lands first opens the gate only after
            // landing, so the operation may finish just before).
            try await within(30, "the unanswered call") { await unanswering.unanswered.wait() }
            let attempts = try await handle.attempts
            // Claimed unseen, it was named by the heartbeat as held but not running, and given back.
            #expect(attempts.count == (landsFirst ? 2 : 1), "\(attempts)")
            if landsFirst { #expect(attempts.first?.error?.contains("never received") == true, "\(attempts)") }
            #expect(attempts.last?.error == nil)
        }
    }

    @Test(
        "a claim sent before the store reconnected is given up on when it does, and the worker claims again at once",
        arguments: StoreKind.all, [false, true])
    func claimGivenUpOnReconnect(_ kind: StoreKind, landsFirst: Bool) async throws {
        try await withStoreLeavingUnanswered(kind, .claim, landsFirst: landsFirst) { unanswering in
            let intercepting = InterceptingStore(unanswering, hooks: .init())
            let handle = try await DurableQueue(name: "default", store: intercepting).add(Echo.self, input: 8, retry: .never)
            var configuration = testWorkerConfiguration(name: "reconnecting")
            // Only giving up on the claim can free the worker within the test's bounds.
            configuration.storeCallTimeout = .seconds(600)
            configuration.staleClaimAge = .zero
            let worker = DurableWorker(store: intercepting, queues: ["default"], kinds: allTestKinds, configuration: configuration)
            let value = try await withRunningWorker(worker) {
                await unanswering.unanswered.wait()
                // A connection, then a reconnection.
                intercepting.inject(.resynchronize)
                intercepting.inject(.resynchronize)
                return try await within(30, "the operation after the reconnect") { try await handle.value }
            }
            #expect(value == 8)
            // A claim given up on that had landed was given back without costing the one
            // attempt (the store's own reconnect at start can also catch a claim in flight).
            let attempts = try await handle.attempts
            #expect(attempts.count >= (landsFirst ? 2 : 1), "\(attempts)")
            #expect(attempts.dropLast().allSatisfy { $0.error?.contains("never received") == true }, "\(attempts)")
            #expect(attempts.last?.error == nil)
        }
    }

    @Test(
        "a body stopped because its heartbeats went unanswered is given back: it runs again without costing an attempt",
        arguments: StoreKind.all)
    func bodyStoppedForItsLeaseIsGivenBack(_ kind: StoreKind) async throws {
        try await withStoreLeavingUnanswered(kind, .heartbeat, landsFirst: false, answeredFirst: 1) { unanswering in
            // The first heartbeat registers the worker; the second, the first round's, is not
            // answered, so the worker stops its bodies before their leases may end.
            // Held on its first attempt until stopped; one attempt only.
            let handle = try await DurableQueue(name: "default", store: unanswering).add(Hold.self, input: 2, retry: .never)
            let value = try await withWorkerOn(store: unanswering, lease: .seconds(8)) {
                try await within(60, "the operation after its body was stopped") { try await handle.value }
            }
            #expect(value == 2)
            let attempts = try await handle.attempts
            #expect(attempts.count == 2, "\(attempts)")
            #expect(attempts.first?.error?.contains("could not renew its lease") == true, "\(attempts)")
        }
    }

    @Test(
        "a heartbeat that never answers does not stop the worker's rounds: an operation that comes due is claimed",
        arguments: StoreKind.all)
    func unansweredHeartbeat(_ kind: StoreKind) async throws {
        try await withStoreLeavingUnanswered(kind, .heartbeat, landsFirst: false, answeredFirst: 1) { unanswering in
            // The first heartbeat registers the worker; the second, the first round's, is not answered.
            let queue = DurableQueue(name: "default", store: unanswering)
            let value = try await withWorkerOn(store: unanswering, lease: .seconds(8)) {
                await unanswering.unanswered.wait()
                // Due shortly: only the worker's rounds wake it for an operation that comes due.
                let handle = try await queue.add(Echo.self, input: 9, notBefore: Date().addingTimeInterval(0.2))
                return try await within(30, "the operation that came due") { try await handle.value }
            }
            #expect(value == 9)
        }
    }
}
#endif
