// A named queue of durable operations in a store.
#if Durable

import Foundation
import Operations

/// A queue of operations stored in a database and run by ``DurableWorker``s on any machine.
///
/// Unlike `OperationQueue`, its settings live in the store: ``maxConcurrentOperationCount``
/// holds across every worker of the cluster.
///
/// What is added and cancelled through it (or through the handles it made) is reported as
/// ``DurableEvent``s (see ``DurableEventSource``) to the handlers of this value and its
/// copies; another `DurableQueue` of the same name has handlers of its own.
public struct DurableQueue: DurableEventSource, Sendable {
    public let name: String
    public let store: any DurableOperationStore
    let broadcaster: DurableEventBroadcaster

    public init(name: String, store: any DurableOperationStore) {
        self.name = name
        self.store = store
        broadcaster = DurableEventBroadcaster(deliveringOnOwnQueue: false, source: "durable queue \"\(name)\"")
    }

    /// Calls `handler` for each operation added through this queue (`enqueued`) and each
    /// cancel issued through it or its handles (`cancelled`).
    /// - Note: ``cancelAll(reason:)`` reports nothing: which operations it cancels is the
    ///   store's to know.
    public func addEventHandler(_ handler: @escaping @Sendable (DurableEvent) -> Void) -> DurableEventSubscription {
        broadcaster.addHandler(handler)
    }

    /// Adds an operation of kind `K`.
    ///
    /// - Parameters:
    ///   - kind: the kind of work; a worker that registered it runs it.
    ///   - input: stored as JSON.
    ///   - dependencies: operations that must finish first. One that fails or is cancelled
    ///     cancels this one with its reason, unless `runsAnyway` is true.
    ///   - runsAnyway: runs once its dependencies finished, however they ended
    ///     (Foundation's `addDependency` meaning).
    ///   - priority: claimed before lower bands; first in, first out within a band.
    ///   - key: while an operation of this queue with the same key is pending or running,
    ///     adding returns its handle instead of a new one; a running one whose cancel was
    ///     requested takes no new callers (a fresh operation is added beside it). A key held by
    ///     an operation of another kind is refused (``DurableError/Code/invalidArgument``).
    ///   - notBefore: not claimed before this date.
    ///   - retry: how often, and how far apart, a failed body runs again.
    /// - Note: Dependencies already exist when an operation is added, so no cycle can form.
    @discardableResult
    public func add<K: DurableOperation>(
        _ kind: K.Type, input: K.Input, dependencies: [any DurableDependency] = [], runsAnyway: Bool = false,
        priority: Operations.Operation.QueuePriority = .normal, key: String? = nil, notBefore: Date? = nil,
        retry: DurableRetry = .standard
    ) async throws -> DurableHandle<K> {
        let request = try request(
            kind, input: input, dependencies: dependencies, runsAnyway: runsAnyway, priority: priority, key: key,
            notBefore: notBefore, retry: retry)
        let results = try await store.enqueue([request])
        if !results[0].coalesced {
            broadcaster.report(DurableEvent.Draft(
                kind: .enqueued, operation: results[0].id, operationKind: K.kind, queue: name,
                dependencies: request.dependencies))
        }
        return DurableHandle(id: results[0].id, store: store, events: DurableHandleEvents(broadcaster: broadcaster, queue: name))
    }

    /// Builds the stored form of an `add` (for stores that enqueue in a caller's transaction).
    public func request<K: DurableOperation>(
        _ kind: K.Type, input: K.Input, dependencies: [any DurableDependency] = [], runsAnyway: Bool = false,
        priority: Operations.Operation.QueuePriority = .normal, key: String? = nil, notBefore: Date? = nil,
        retry: DurableRetry = .standard
    ) throws -> DurableEnqueueRequest {
        try Self.storedRequest(
            kind, input: input, queue: name, what: "adding \(K.kind) to queue \"\(name)\"", dependencies: dependencies.map(\.id),
            runsAnyway: runsAnyway, priority: priority, key: key, notBefore: notBefore, retry: retry)
    }

    /// The stored form of one operation; `what` names it in errors.
    static func storedRequest<K: DurableOperation>(
        _ kind: K.Type, input: K.Input, queue: String, what: String, dependencies: [DurableOperationID],
        dependenciesInBatch: [Int] = [], runsAnyway: Bool, priority: Operations.Operation.QueuePriority, key: String?,
        notBefore: Date?, retry: DurableRetry
    ) throws -> DurableEnqueueRequest {
        guard retry.maximumAttempts >= 1 else {
            throw DurableError(.invalidArgument, "\(what): retry.maximumAttempts must be at least 1, not \(retry.maximumAttempts)")
        }
        let retryWaits = try retry.stored(adding: what)
        let encoded: Data
        do {
            encoded = try JSONEncoder().encode(input)
        } catch {
            throw DurableError(.invalidArgument, "\(what): its input does not encode: \(error)")
        }
        return DurableEnqueueRequest(
            queue: queue, kind: K.kind, input: String(decoding: encoded, as: UTF8.self), priority: priority.rawValue,
            key: key, notBefore: notBefore, maximumAttempts: retry.maximumAttempts, retryDelays: retryWaits.listed,
            retryBackoff: retryWaits.backoff, dependencies: dependencies, dependenciesInBatch: dependenciesInBatch,
            runsAnyway: runsAnyway)
    }

    /// A handle for a stored operation known by its id.
    public func handle<K: DurableOperation>(_ kind: K.Type, id: DurableOperationID) -> DurableHandle<K> {
        DurableHandle(id: id, store: store, events: DurableHandleEvents(broadcaster: broadcaster, queue: name))
    }

    /// The cluster-wide limit on running bodies of this queue (`nil`: no limit).
    public var maxConcurrentOperationCount: Int? {
        get async throws { try await store.maxConcurrentOperationCount(queue: name) }
    }

    /// Sets the cluster-wide limit (`nil`: no limit); running bodies beyond a lowered limit finish.
    public func setMaxConcurrentOperationCount(_ count: Int?) async throws {
        if let count, count < 1 {
            throw DurableError(.invalidArgument, "queue \"\(name)\": maxConcurrentOperationCount must be at least 1 or nil, not \(count)")
        }
        try await store.setMaxConcurrentOperationCount(count, queue: name)
    }

    /// Whether workers stop claiming from this queue (running bodies go on).
    public var isSuspended: Bool {
        get async throws { try await store.isSuspended(queue: name) }
    }

    public func setSuspended(_ suspended: Bool) async throws {
        try await store.setSuspended(suspended, queue: name)
    }

    /// Cancels every unfinished operation of the queue.
    public func cancelAll(reason: String = "cancelled") async throws {
        try await store.cancelAll(queue: name, reason: reason)
    }
}

/// Something an operation can depend on: a handle, or an operation's id.
public protocol DurableDependency: Sendable {
    var id: DurableOperationID { get }
}

extension DurableHandle: DurableDependency {}

extension DurableOperationID: DurableDependency {
    public var id: DurableOperationID { self }
}
#endif
