// Enqueueing inside the application's own PostgreSQL transaction.
#if PostgreSQL

import Foundation
import Operations
import OperationsDurable
import PostgresNIO

extension DurableQueue {
    /// Adds an operation on the caller's connection, inside its open transaction: workers
    /// see it when that transaction commits, and a rollback removes it.
    ///
    /// The queue's store must be a ``PostgresOperationStore`` on the same database.
    /// - Note: No `enqueued` event is reported (the transaction may still roll back); the
    ///   returned handle reports its cancels as the queue's.
    @discardableResult
    public func add<K: DurableOperation>(
        _ kind: K.Type, input: K.Input, dependencies: [any DurableDependency] = [], runsAnyway: Bool = false,
        priority: Operations.Operation.QueuePriority = .normal, key: String? = nil, notBefore: Date? = nil,
        retry: DurableRetry = .standard, on connection: PostgresConnection
    ) async throws -> DurableHandle<K> {
        guard let store = store as? PostgresOperationStore else {
            throw DurableError(.wrongStore, "adding \(K.kind) on a PostgreSQL connection: queue \"\(name)\" is stored in \(type(of: store)), not PostgreSQL")
        }
        let request = try request(
            kind, input: input, dependencies: dependencies, runsAnyway: runsAnyway, priority: priority, key: key,
            notBefore: notBefore, retry: retry)
        let results = try await store.enqueue([request], on: connection)
        return handle(kind, id: results[0].id)
    }
}
#endif
