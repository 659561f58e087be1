// A durable queue's batches, counts and waits: the in-process queue's addOperations,
// operationCount and waitUntilAllOperationsAreFinished, over a store.
#if Durable

import Foundation
import Operations

extension DurableQueue {
    // MARK: Adding many

    /// Adds the batch's operations in one round trip and one transaction: all are stored, or
    /// none (an error names the member). Reports an `enqueued` event for each that did not
    /// coalesce with a pending operation of the same key.
    ///
    /// - Parameters:
    ///   - batch: the operations, built with ``DurableBatch/add(_:input:dependencies:runsAnyway:priority:key:notBefore:retry:)``.
    ///   - waitUntilFinished: returns only once every operation of the batch has finished,
    ///     however it ended (the handles tell how).
    @discardableResult
    public func addOperations(_ batch: DurableBatch, waitUntilFinished: Bool = false) async throws -> DurableBatch.Added {
        var requests = batch.requests
        for index in requests.indices { requests[index].queue = name }
        let results = requests.isEmpty ? [] : try await store.enqueue(requests)
        guard results.count == requests.count else {
            throw DurableError(
                .databaseError, "adding \(requests.count) operations to queue \"\(name)\": the store answered \(results.count)")
        }
        for (request, result) in zip(requests, results) where !result.coalesced {
            let dependencies = request.dependencies + request.dependenciesInBatch.map { results[$0].id }
            broadcaster.report(DurableEvent.Draft(
                kind: .enqueued, operation: result.id, operationKind: request.kind, queue: name, dependencies: dependencies))
        }
        let added = DurableBatch.Added(
            results: results, store: store, events: DurableHandleEvents(broadcaster: broadcaster, queue: name),
            batch: batch.identity)
        if waitUntilFinished { try await self.waitUntilFinished(added.ids) }
        return added
    }

    /// Adds one operation of kind `K` for each input, in one round trip (see
    /// ``addOperations(_:waitUntilFinished:)``); the handles are in the inputs' order.
    @discardableResult
    public func addOperations<K: DurableOperation>(
        _ kind: K.Type, inputs: [K.Input], priority: Operations.Operation.QueuePriority = .normal,
        notBefore: Date? = nil, retry: DurableRetry = .standard, waitUntilFinished: Bool = false
    ) async throws -> [DurableHandle<K>] {
        var batch = DurableBatch()
        var members: [DurableBatch.Member<K>] = []
        members.reserveCapacity(inputs.count)
        for input in inputs {
            members.append(try batch.add(kind, input: input, priority: priority, notBefore: notBefore, retry: retry))
        }
        let added = try await addOperations(batch, waitUntilFinished: waitUntilFinished)
        return members.map { added[$0] }
    }

    // MARK: Counting

    /// How many of the queue's operations have not finished (waiting, ready or running), in
    /// the whole cluster: read from the store's indexes.
    public var operationCount: Int {
        get async throws { try await store.unfinishedCount(queue: name) }
    }

    /// How many of the queue's operations are in each state. Finished operations count until
    /// they are pruned (``DurableWorker/Configuration/retention``); counting them reads the
    /// queue's kept rows.
    public var operationCounts: DurableOperationCounts {
        get async throws { try await store.counts(queue: name) }
    }

    // MARK: Waiting

    /// Returns once every given operation has finished, however it ended: one wait for all
    /// of them, woken as they finish (see ``DurableFinishWatch``). Throws ``DurableError``
    /// `.notFound` for one that is not stored.
    public func waitUntilFinished(_ operations: [any DurableDependency]) async throws {
        try await store.finishWatch.waitUntilFinished(Set(operations.map(\.id)), store: store)
    }

    /// Returns once the queue has no unfinished operation, counted again after each change
    /// the store tells (finishes that come while it counts are folded into one more count).
    /// Operations added meanwhile are waited for too, as `OperationQueue`'s method does.
    public func waitUntilAllOperationsAreFinished() async throws {
        let (store, name) = (store, name)
        try await store.finishWatch.waitUntil(store: store) {
            try await store.unfinishedCount(queue: name) == 0
        }
    }
}
#endif
