// An operation's life in the PostgreSQL store: enqueue, claim, complete, give back, heartbeat, rescue.
#if PostgreSQL

import Foundation
import OperationsDurable
import PostgresNIO

extension PostgresOperationStore {
    // MARK: Enqueueing

    public func enqueue(_ requests: [DurableEnqueueRequest]) async throws -> [DurableEnqueueResult] {
        guard !requests.isEmpty else { return [] }
        if requests.count == 1, requests[0].dependenciesInBatch.isEmpty {
            return [try await enqueue(requests[0], run: { query in try await self.rows(query, "adding \(requests[0].kind)") })]
        }
        return try await enqueueBatch(requests) { query in
            try await self.rows(query, "adding \(requests.count) operations")
        }
    }

    /// Enqueues on the caller's connection, inside the caller's transaction: workers see the
    /// operations when it commits; a rollback removes them.
    /// - Important: A refused request (a key held by another kind, a dependency not stored)
    ///   fails the statement, and with it the caller's transaction: roll it back.
    public func enqueue(_ requests: [DurableEnqueueRequest], on connection: PostgresConnection) async throws -> [DurableEnqueueResult] {
        guard !requests.isEmpty else { return [] }
        return try await enqueueBatch(requests) { query in
            do {
                return try await connection.query(query, logger: self.logger).collect()
            } catch {
                throw self.describe(error, "adding \(requests.count) operations")
            }
        }
    }

    /// One round trip for the whole batch: the requests travel as one JSON array.
    private func enqueueBatch(
        _ requests: [DurableEnqueueRequest], run: (PostgresQuery) async throws -> [PostgresRow]
    ) async throws -> [DurableEnqueueResult] {
        let encoded = String(decoding: try JSONEncoder().encode(requests.map(BatchRequest.init)), as: UTF8.self)
        let rows = try await run(
            """
            SELECT operation_id, coalesced FROM durable_enqueue_batch(\(encoded)::jsonb) WITH ORDINALITY ORDER BY ordinality
            """)
        return try rows.map { row in
            let (id, coalesced) = try row.decode((Int64, Bool).self)
            return DurableEnqueueResult(id: DurableOperationID(rawValue: id), coalesced: coalesced)
        }
    }

    /// A request as `durable_enqueue_batch` reads it (a missing key is SQL's NULL).
    private struct BatchRequest: Encodable {
        let queue, kind, input: String
        let priority: Int
        let key: String?
        let notBefore: Double?
        let maximumAttempts: Int
        let retryDelays: [Double]
        let retryInitial, retryMultiplier, retryMaximum: Double
        let retryJittered: Bool
        let dependencies: [Int64]
        let members: [Int]
        let runsAnyway: Bool

        init(_ request: DurableEnqueueRequest) {
            queue = request.queue
            kind = request.kind
            input = request.input
            priority = request.priority
            key = request.key
            notBefore = request.notBefore?.timeIntervalSince1970
            maximumAttempts = request.maximumAttempts
            retryDelays = request.retryDelays
            retryInitial = request.retryBackoff.initial
            retryMultiplier = request.retryBackoff.multiplier
            retryMaximum = request.retryBackoff.maximum
            retryJittered = request.retryBackoff.jittered
            dependencies = request.dependencies.map(\.rawValue)
            members = request.dependenciesInBatch
            runsAnyway = request.runsAnyway
        }
    }

    private func enqueue(
        _ request: DurableEnqueueRequest, run: (PostgresQuery) async throws -> [PostgresRow]
    ) async throws -> DurableEnqueueResult {
        let dependencies = request.dependencies.map(\.rawValue)
        let rows = try await run(
            """
            SELECT e.operation_id, e.coalesced,
                CASE WHEN e.coalesced THEN (SELECT o.kind FROM durable_operations o WHERE o.id = e.operation_id) END
            FROM durable_enqueue(\(request.queue), \(request.kind), \(request.input),
                \(request.priority)::integer, \(request.key)::text, \(request.notBefore)::timestamptz,
                \(request.maximumAttempts)::bigint, \(request.retryDelays)::double precision[],
                \(request.retryBackoff.initial)::double precision, \(request.retryBackoff.multiplier)::double precision,
                \(request.retryBackoff.maximum)::double precision, \(request.retryBackoff.jittered),
                \(dependencies)::bigint[], \(request.runsAnyway)) e
            """)
        let (rawID, coalesced, coalescedKind) = try rows[0].decode((Int64, Bool, String?).self)
        let id = DurableOperationID(rawValue: rawID)
        if coalesced {
            // The statement's snapshot may predate a conflicting row that another transaction
            // committed while the function ran: then the kind is read by a statement of its own.
            var kind = coalescedKind
            if kind == nil {
                kind = try await run("SELECT kind FROM durable_operations WHERE id = \(rawID)").first?.decode(String.self)
            }
            if let kind { try request.checkCoalescing(with: id, of: kind) }
        }
        return DurableEnqueueResult(id: id, coalesced: coalesced)
    }

    // MARK: Workers

    public func claim(queue: String, kinds: [String], worker: String, limit: Int, lease: Duration) async throws -> [DurableClaim] {
        // The dependencies and the maximum come with the claim, read in the claim's statement,
        // in the claim's order (a function's rows are numbered in the order it returns them;
        // a SELECT without ORDER BY promises no order).
        let rows = try await rows(
            """
            SELECT operation_id, kind, input, attempt, dependencies, max_attempts
            FROM durable_claim_operations(\(queue), \(kinds)::text[], \(worker), \(limit)::integer, \(lease.seconds))
                WITH ORDINALITY ORDER BY ordinality
            """, "claiming from queue \"\(queue)\"")
        return try Self.claims(from: rows)
    }

    /// Claims from rows of (id, kind, input, attempt, dependencies, maximum).
    private static func claims(from rows: [PostgresRow]) throws -> [DurableClaim] {
        try rows.map { row in
            let (id, kind, input, attempt, dependencies, maximumAttempts) = try row.decode(
                (Int64, String, String, Int, [Int64], Int).self)
            return DurableClaim(
                id: DurableOperationID(rawValue: id), kind: kind, input: input, attempt: attempt,
                dependencies: dependencies.map(DurableOperationID.init(rawValue:)), maximumAttempts: maximumAttempts)
        }
    }

    public func complete(_ completions: [DurableCompletion], worker: String) async throws {
        guard !completions.isEmpty else { return }
        let (ids, attempts, outcomes, values) = Self.columns(of: completions)
        try await rows(
            "SELECT durable_complete(\(worker), \(ids)::bigint[], \(attempts)::integer[], \(outcomes)::text[], \(values)::text[])",
            "recording \(completions.count) finished attempts")
    }

    public func completeAndClaim(
        _ completions: [DurableCompletion], worker: String, queue: String, kinds: [String], limit: Int, lease: Duration
    ) async throws -> [DurableClaim] {
        let (ids, attempts, outcomes, values) = Self.columns(of: completions)
        let rows = try await rows(
            """
            SELECT operation_id, kind, input, attempt, dependencies, max_attempts
            FROM durable_complete_and_claim(\(worker), \(ids)::bigint[], \(attempts)::integer[], \(outcomes)::text[],
                \(values)::text[], \(queue), \(kinds)::text[], \(limit)::integer, \(lease.seconds))
                WITH ORDINALITY ORDER BY ordinality
            """, "recording \(completions.count) finished attempts and claiming from queue \"\(queue)\"")
        return try Self.claims(from: rows)
    }

    /// The completions as the store's functions take them: one array per column.
    private static func columns(of completions: [DurableCompletion]) -> ([Int64], [Int], [String], [String]) {
        var ids: [Int64] = []
        var attempts: [Int] = []
        var outcomes: [String] = []
        var values: [String] = []
        for completion in completions {
            ids.append(completion.id.rawValue)
            attempts.append(completion.attempt)
            switch completion.result {
            case .succeeded(let output): outcomes.append("succeeded"); values.append(storable(output))
            case .failed(let error): outcomes.append("failed"); values.append(storable(error))
            case .rejected(let error): outcomes.append("rejected"); values.append(storable(error))
            case .cancelled(let reason): outcomes.append("cancelled"); values.append(storable(reason))
            }
        }
        return (ids, attempts, outcomes, values)
    }

    public func giveBack(_ attempts: [DurableAttemptID], worker: String, reason: String) async throws {
        guard !attempts.isEmpty else { return }
        let (ids, numbers) = (attempts.map(\.operation.rawValue), attempts.map(\.attempt))
        try await rows(
            "SELECT durable_give_back_attempts(\(worker), \(ids)::bigint[], \(numbers)::integer[], \(Self.storable(reason)))",
            "giving back operations")
    }

    public func giveBackAll(worker: String, reason: String) async throws {
        // The function locks each row and checks it is still this worker's attempt.
        try await rows(
            """
            SELECT durable_give_back_attempts(\(worker), coalesce(array_agg(id ORDER BY id), '{}'),
                coalesce(array_agg(attempt ORDER BY id), '{}'), \(Self.storable(reason)))
            FROM durable_operations WHERE worker = \(worker) AND state = 'running'
            """, "giving back the operations worker \(worker) holds")
    }

    public func heartbeat(
        worker: String, queues: [String], kinds: [String], holding: [DurableOperationID], lease: Duration
    ) async throws -> DurableHeartbeat {
        let held = holding.map(\.rawValue)
        let rows = try await rows(
            "SELECT operation_id, cancel_reason, renewed, attempt FROM durable_heartbeat(\(worker), \(queues)::text[], \(kinds)::text[], \(held)::bigint[], \(lease.seconds))",
            "renewing the leases of worker \(worker)")
        var heartbeat = DurableHeartbeat(held: [], cancelRequested: [:])
        for row in rows {
            let (rawID, reason, renewed, attempt) = try row.decode((Int64, String?, Bool, Int).self)
            let id = DurableOperationID(rawValue: rawID)
            guard renewed else {
                heartbeat.unnamed.insert(DurableAttemptID(operation: id, attempt: attempt))
                continue
            }
            heartbeat.held.insert(id)
            if let reason { heartbeat.cancelRequested[id] = reason }
        }
        return heartbeat
    }

    public func rescueExpiredLeases() async throws -> Int {
        let rows = try await rows("SELECT durable_rescue()", "rescuing expired leases")
        return try rows.first?.decode(Int.self) ?? 0
    }

    /// The text with every NUL character replaced by U+FFFD: PostgreSQL's text cannot hold
    /// NUL, and one such error text would otherwise fail its whole batch of completions.
    static func storable(_ text: String) -> String {
        text.contains("\u{0}") ? text.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : text
    }
}
#endif
