// A store for tests that need to act at a chosen point of a worker's conversation with the
// database: every call is forwarded, and hooks run around the calls that matter.
#if Durable

import Foundation
import OperationsDurable
import Synchronization

/// Forwards every call to `base`. The hooks, when set, run where their names say; a hook
/// may wait (holding the worker at that point) or end the process.
public final class InterceptingStore: DurableOperationStore {
    public struct Hooks: Sendable {
        /// After a claim was recorded, with what it claimed, before the worker hears of it.
        public var afterClaim: (@Sendable ([DurableClaim]) async -> Void)?
        /// Before the end of attempts is recorded.
        public var beforeComplete: (@Sendable ([DurableCompletion]) async -> Void)?
        /// After the end of attempts was recorded, before the worker hears of it.
        public var afterComplete: (@Sendable ([DurableCompletion]) async -> Void)?
        /// Before a heartbeat is forwarded.
        public var beforeHeartbeat: (@Sendable () async -> Void)?
        /// After a heartbeat was answered, before the worker hears of it.
        public var afterHeartbeat: (@Sendable () async -> Void)?
        /// Before attempts are given back, with the reason given.
        public var beforeGiveBack: (@Sendable ([DurableAttemptID], String) async -> Void)?
        /// Before the states of operations are read, with the ids.
        public var beforeStates: (@Sendable ([DurableOperationID]) async -> Void)?

        public init() {}
    }

    /// How often the calls that tell what waiting costs were made.
    public final class Calls: Sendable {
        /// `notifications()` subscriptions.
        public let subscriptions = Atomic<Int>(0)
        /// Notifications handed to subscribers, summed over them.
        public let notificationsDelivered = Atomic<Int>(0)
        /// Records read, one by one or many at once.
        public let recordReads = Atomic<Int>(0)
        public let stateReads = Atomic<Int>(0)
        public let enqueueCalls = Atomic<Int>(0)
        /// Operations claimed by `claim`, and by `completeAndClaim` (with the ends of others).
        public let claimedAlone = Atomic<Int>(0)
        public let claimedWithEnds = Atomic<Int>(0)
    }

    public let base: any DurableOperationStore
    public let hooks: Hooks
    public let calls = Calls()
    private let subscribers = Mutex<[Int: AsyncStream<DurableStoreNotification>.Continuation]>([:])
    private let nextSubscriber = Atomic<Int>(0)

    /// Tells every current subscriber `notification`, as if the store had.
    public func inject(_ notification: DurableStoreNotification) {
        for subscriber in subscribers.withLock({ Array($0.values) }) { subscriber.yield(notification) }
    }

    public init(_ base: any DurableOperationStore, hooks: Hooks, finishWatch: DurableFinishWatch = DurableFinishWatch()) {
        self.base = base
        self.hooks = hooks
        self.finishWatch = finishWatch
    }

    /// Ends every current subscriber's notifications, as a store that shuts down does.
    public func endNotifications() {
        for subscriber in subscribers.withLock({ Array($0.values) }) { subscriber.finish() }
    }

    public func claim(queue: String, kinds: [String], worker: String, limit: Int, lease: Duration) async throws -> [DurableClaim] {
        let claims = try await base.claim(queue: queue, kinds: kinds, worker: worker, limit: limit, lease: lease)
        calls.claimedAlone.add(claims.count, ordering: .relaxed)
        await hooks.afterClaim?(claims)
        return claims
    }

    /// Runs the hooks of both calls around the base's single call: the claim's first, since
    /// both were recorded at once (a hook that holds the ends until a claim is seen sees it).
    public func completeAndClaim(
        _ completions: [DurableCompletion], worker: String, queue: String, kinds: [String], limit: Int, lease: Duration
    ) async throws -> [DurableClaim] {
        await hooks.beforeComplete?(completions)
        let claims = try await base.completeAndClaim(
            completions, worker: worker, queue: queue, kinds: kinds, limit: limit, lease: lease)
        calls.claimedWithEnds.add(claims.count, ordering: .relaxed)
        await hooks.afterClaim?(claims)
        await hooks.afterComplete?(completions)
        return claims
    }

    public func complete(_ completions: [DurableCompletion], worker: String) async throws {
        await hooks.beforeComplete?(completions)
        try await base.complete(completions, worker: worker)
        await hooks.afterComplete?(completions)
    }

    public func heartbeat(
        worker: String, queues: [String], kinds: [String], holding: [DurableOperationID], lease: Duration
    ) async throws -> DurableHeartbeat {
        await hooks.beforeHeartbeat?()
        let heartbeat = try await base.heartbeat(worker: worker, queues: queues, kinds: kinds, holding: holding, lease: lease)
        await hooks.afterHeartbeat?()
        return heartbeat
    }

    public func migrate() async throws { try await base.migrate() }
    public func checkConnection() async throws { try await base.checkConnection() }
    public func enqueue(_ requests: [DurableEnqueueRequest]) async throws -> [DurableEnqueueResult] {
        calls.enqueueCalls.add(1, ordering: .relaxed)
        return try await base.enqueue(requests)
    }
    public func giveBack(_ attempts: [DurableAttemptID], worker: String, reason: String) async throws {
        await hooks.beforeGiveBack?(attempts, reason)
        try await base.giveBack(attempts, worker: worker, reason: reason)
    }
    public func giveBackAll(worker: String, reason: String) async throws {
        try await base.giveBackAll(worker: worker, reason: reason)
    }
    public func rescueExpiredLeases() async throws -> Int { try await base.rescueExpiredLeases() }
    public func record(of id: DurableOperationID, includingAttempts: Bool) async throws -> DurableRecord? {
        calls.recordReads.add(1, ordering: .relaxed)
        return try await base.record(of: id, includingAttempts: includingAttempts)
    }
    public func waitFacts(of id: DurableOperationID) async throws -> DurableWaitFacts? { try await base.waitFacts(of: id) }
    public func cancel(_ id: DurableOperationID, reason: String) async throws { try await base.cancel(id, reason: reason) }
    public func cancelAll(queue: String, reason: String) async throws { try await base.cancelAll(queue: queue, reason: reason) }
    public func reportProgress(of id: DurableOperationID, attempt: Int, completed: Int64, total: Int64) async throws {
        try await base.reportProgress(of: id, attempt: attempt, completed: completed, total: total)
    }
    public func setMaxConcurrentOperationCount(_ count: Int?, queue: String) async throws {
        try await base.setMaxConcurrentOperationCount(count, queue: queue)
    }
    public func maxConcurrentOperationCount(queue: String) async throws -> Int? {
        try await base.maxConcurrentOperationCount(queue: queue)
    }
    public func setSuspended(_ suspended: Bool, queue: String) async throws { try await base.setSuspended(suspended, queue: queue) }
    public func isSuspended(queue: String) async throws -> Bool { try await base.isSuspended(queue: queue) }
    public func prune(finishedBefore date: Date, limit: Int) async throws -> Int {
        try await base.prune(finishedBefore: date, limit: limit)
    }
    public func notifications() -> AsyncStream<DurableStoreNotification> {
        calls.subscriptions.add(1, ordering: .relaxed)
        let upstream = base.notifications()
        let (stream, continuation) = AsyncStream.makeStream(of: DurableStoreNotification.self)
        let subscriber = nextSubscriber.add(1, ordering: .relaxed).newValue
        subscribers.withLock { $0[subscriber] = continuation }
        let forwarding = Task { [calls] in
            for await notification in upstream {
                calls.notificationsDelivered.add(1, ordering: .relaxed)
                continuation.yield(notification)
            }
            continuation.finish()
        }
        continuation.onTermination = { [weak self] _ in
            forwarding.cancel()
            self?.subscribers.withLock { _ = $0.removeValue(forKey: subscriber) }
        }
        return stream
    }
    public let finishWatch: DurableFinishWatch
    public func states(of ids: [DurableOperationID]) async throws -> [DurableOperationID: DurableState] {
        calls.stateReads.add(1, ordering: .relaxed)
        await hooks.beforeStates?(ids)
        return try await base.states(of: ids)
    }
    public func counts(queue: String) async throws -> DurableOperationCounts { try await base.counts(queue: queue) }
    public func records(of ids: [DurableOperationID]) async throws -> [DurableRecord] {
        calls.recordReads.add(ids.count, ordering: .relaxed)
        return try await base.records(of: ids)
    }
    public func unfinishedCount(queue: String) async throws -> Int { try await base.unfinishedCount(queue: queue) }
}
#endif
