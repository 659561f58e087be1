// An operation's life in the SQLite store: enqueue, claim, heartbeat, rescue.
// The same rules as the PostgreSQL store's functions, as statements in one transaction each.
#if SQLite

import Foundation
import OperationsDurable
import SQLiteNIO

extension SQLiteOperationStore {
    // MARK: Enqueueing

    public func enqueue(_ requests: [DurableEnqueueRequest]) async throws -> [DurableEnqueueResult] {
        guard !requests.isEmpty else { return [] }
        let what = requests.count == 1 ? "adding \(requests[0].kind)" : "adding operations"
        let results = try await access.write(what) { transaction in
            var results: [DurableEnqueueResult] = []
            for (index, request) in requests.enumerated() {
                var request = request
                for member in request.dependenciesInBatch {
                    guard member >= 0, member < index else {
                        throw DurableError(
                            .invalidArgument,
                            "adding \(request.kind) to queue \"\(request.queue)\": it depends on request \(member) of its batch, which is not an earlier one")
                    }
                    request.dependencies.append(results[member].id)
                }
                results.append(try await enqueue(request, in: transaction))
            }
            return results
        }
        poller.poke()
        return results
    }

    private func enqueue(_ request: DurableEnqueueRequest, in transaction: SQLiteTransaction) async throws -> DurableEnqueueResult {
        if let key = request.key,
            let existing = try await transaction.rows(
                "SELECT id, kind FROM durable_operations WHERE queue = ? AND key = ? AND \(SQLiteSchema.keyHolder)",
                [.text(request.queue), .text(key)]
            ).first
        {
            let id = DurableOperationID(rawValue: Int64(existing.int("id")))
            try request.checkCoalescing(with: id, of: existing.text("kind"))
            return DurableEnqueueResult(id: id, coalesced: true)
        }
        let dependencies = Array(Set(request.dependencies.map(\.rawValue))).sorted()
        var pending = 0
        var cancelReason: String?
        if !dependencies.isEmpty {
            let list = dependencies.map(String.init).joined(separator: ",")
            let rows = try await transaction.rows(
                "SELECT id, kind, state, error, cancel_reason FROM durable_operations WHERE id IN (\(list)) ORDER BY id")
            guard rows.count == dependencies.count else {
                throw DurableError(
                    .invalidArgument,
                    "adding \(request.kind) to queue \"\(request.queue)\": a dependency is not stored (ids \(dependencies.map(String.init).joined(separator: ", ")))")
            }
            for row in rows {
                let state = DurableState(rawValue: row.text("state")) ?? .waiting
                if !state.isFinished {
                    pending += 1
                } else if state != .succeeded, !request.runsAnyway, cancelReason == nil {
                    cancelReason = "dependency \(row.int("id")) (\(row.text("kind"))) "
                        + (state == .failed
                            ? "failed: \(row.optionalText("error") ?? "")"
                            : "was cancelled: \(row.optionalText("cancel_reason") ?? "")")
                }
            }
        }
        let state: DurableState = cancelReason != nil ? .cancelled : pending > 0 ? .waiting : .ready
        let now = Date()
        let delays = String(decoding: try JSONEncoder().encode(request.retryDelays), as: UTF8.self)
        let inserted = try await transaction.rows(
            """
            INSERT INTO durable_operations (queue, kind, input, state, priority, key, not_before, pending_dependencies,
                runs_anyway, max_attempts, retry_delays, retry_initial, retry_multiplier, retry_maximum, retry_jittered,
                cancel_reason, created_at, finished_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id
            """,
            [
                .text(request.queue), .text(request.kind), .text(request.input), .text(state.rawValue), .int(request.priority),
                .optionalText(request.key), .date(request.notBefore ?? now), .int(pending), .int(request.runsAnyway ? 1 : 0),
                .int(request.maximumAttempts), .text(delays), .float(request.retryBackoff.initial),
                .float(request.retryBackoff.multiplier), .float(request.retryBackoff.maximum),
                .int(request.retryBackoff.jittered ? 1 : 0), .optionalText(cancelReason), .date(now),
                cancelReason != nil ? .date(now) : .null,
            ])
        let id = DurableOperationID(rawValue: Int64(inserted[0].int("id")))
        for dependency in dependencies {
            try await transaction.rows(
                "INSERT INTO durable_edges (dependency, dependent) VALUES (?, ?)", [.integer(SQLiteInt64(dependency)), .id(id)])
        }
        if state == .ready {
            try await transaction.notify(.workAvailable(queue: request.queue))
        } else if state == .cancelled {
            try await transaction.notify(.finished(id))
        }
        return DurableEnqueueResult(id: id, coalesced: false)
    }

    // MARK: Workers

    public func claim(queue: String, kinds: [String], worker: String, limit: Int, lease: Duration) async throws -> [DurableClaim] {
        guard limit > 0, !kinds.isEmpty else { return [] }
        return try await access.write("claiming from queue \"\(queue)\"") { transaction -> [DurableClaim] in
            try await claim(queue: queue, kinds: kinds, worker: worker, limit: limit, lease: lease, in: transaction)
        }
    }

    public func completeAndClaim(
        _ completions: [DurableCompletion], worker: String, queue: String, kinds: [String], limit: Int, lease: Duration
    ) async throws -> [DurableClaim] {
        let claims = try await access.write(
            "recording \(completions.count) finished attempts and claiming from queue \"\(queue)\""
        ) { transaction -> [DurableClaim] in
            try await complete(completions, worker: worker, in: transaction)
            guard limit > 0, !kinds.isEmpty else { return [] }
            return try await claim(queue: queue, kinds: kinds, worker: worker, limit: limit, lease: lease, in: transaction)
        }
        if !completions.isEmpty { poller.poke() }
        return claims
    }

    private func claim(
        queue: String, kinds: [String], worker: String, limit: Int, lease: Duration, in transaction: SQLiteTransaction
    ) async throws -> [DurableClaim] {
        var wanted = limit
        if let settings = try await transaction.rows(
            "SELECT max_concurrent, suspended FROM durable_queues WHERE name = ?", [.text(queue)]
        ).first {
            if settings.bool("suspended") { return [] }
            // The cluster-wide limit: the write lock is held, so no other claim counts meanwhile.
            if let maximum = settings.optionalInt("max_concurrent") {
                let running = try await transaction.rows(
                    "SELECT count(*) AS n FROM durable_operations WHERE queue = ? AND state = 'running'", [.text(queue)]
                ).first?.int("n") ?? 0
                wanted = min(wanted, maximum - running)
            }
        }
        guard wanted > 0 else { return [] }
        let now = Date()
        let placeholders = kinds.map { _ in "?" }.joined(separator: ", ")
        let picked = try await transaction.rows(
            """
            SELECT id FROM durable_operations
            WHERE queue = ? AND state = 'ready' AND kind IN (\(placeholders)) AND not_before <= ?
            ORDER BY priority DESC, id LIMIT ?
            """, [.text(queue)] + kinds.map { .text($0) } + [.date(now), .int(wanted)])
        guard !picked.isEmpty else { return [] }
        let list = picked.map { String($0.int("id")) }.joined(separator: ",")
        let claimed = try await transaction.rows(
            """
            UPDATE durable_operations SET state = 'running', attempt = attempt + 1, worker = ?, lease_until = ?
            WHERE id IN (\(list)) RETURNING id, kind, input, attempt, priority, max_attempts
            """, [.text(worker), .date(now.addingTimeInterval(lease.seconds))])
        try await transaction.rows(
            """
            INSERT INTO durable_attempts (operation, number, worker, started_at)
            SELECT id, attempt, ?, ? FROM durable_operations WHERE id IN (\(list))
            """, [.text(worker), .date(now)])
        var dependencies: [Int: [DurableOperationID]] = [:]
        for edge in try await transaction.rows(
            "SELECT dependent, dependency FROM durable_edges WHERE dependent IN (\(list)) ORDER BY dependent, dependency")
        {
            dependencies[edge.int("dependent"), default: []].append(DurableOperationID(rawValue: Int64(edge.int("dependency"))))
        }
        return claimed.sorted { ($1.int("priority"), $0.int("id")) < ($0.int("priority"), $1.int("id")) }.map { row in
            DurableClaim(
                id: DurableOperationID(rawValue: Int64(row.int("id"))), kind: row.text("kind"), input: row.text("input"),
                attempt: row.int("attempt"), dependencies: dependencies[row.int("id")] ?? [],
                maximumAttempts: row.int("max_attempts"))
        }
    }

    public func complete(_ completions: [DurableCompletion], worker: String) async throws {
        guard !completions.isEmpty else { return }
        try await access.write("recording \(completions.count) finished attempts") { transaction in
            try await complete(completions, worker: worker, in: transaction)
        }
        poller.poke()
    }

    private func complete(_ completions: [DurableCompletion], worker: String, in transaction: SQLiteTransaction) async throws {
        for completion in completions {
            // An attempt whose lease was taken back is no longer this worker's to end.
            guard let operation = try await StoredOperation.read(completion.id, in: transaction),
                operation.state == .running, operation.worker == worker, operation.attempt == completion.attempt
            else { continue }
            switch completion.result {
            case .succeeded(let output): try await finishAttempt(operation, .succeeded, output, in: transaction)
            case .failed(let error): try await finishAttempt(operation, .failed, error, in: transaction)
            case .rejected(let error): try await finishAttempt(operation, .rejected, error, in: transaction)
            case .cancelled(let reason): try await finishAttempt(operation, .cancelled, reason, in: transaction)
            }
        }
    }

    public func giveBack(_ attempts: [DurableAttemptID], worker: String, reason: String) async throws {
        guard !attempts.isEmpty else { return }
        try await access.write("giving back operations") { transaction in
            try await giveBack(attempts, worker: worker, reason: reason, in: transaction)
        }
        poller.poke()
    }

    public func giveBackAll(worker: String, reason: String) async throws {
        try await access.write("giving back the operations worker \(worker) holds") { transaction in
            let held = try await transaction.rows(
                "SELECT id, attempt FROM durable_operations WHERE worker = ? AND state = 'running' ORDER BY id", [.text(worker)])
            let attempts = held.map { row in
                DurableAttemptID(operation: DurableOperationID(rawValue: Int64(row.int("id"))), attempt: row.int("attempt"))
            }
            try await giveBack(attempts, worker: worker, reason: reason, in: transaction)
        }
        poller.poke()
    }

    private func giveBack(
        _ attempts: [DurableAttemptID], worker: String, reason: String, in transaction: SQLiteTransaction
    ) async throws {
        for given in attempts.sorted() {
            let id = given.operation
            guard let operation = try await StoredOperation.read(id, in: transaction),
                operation.state == .running, operation.worker == worker, operation.attempt == given.attempt
            else { continue }
            if let cancelReason = operation.cancelReason {
                try await finishAttempt(operation, .cancelled, cancelReason, in: transaction)
            } else {
                try await transaction.rows(
                    "UPDATE durable_attempts SET ended_at = ?, error = ? WHERE operation = ? AND number = ?",
                    [.now, .text(reason), .id(id), .int(operation.attempt)])
                // Given back, not failed: the attempt does not count against the maximum.
                try await transaction.rows(
                    """
                    UPDATE durable_operations SET state = 'ready', worker = NULL, lease_until = NULL, given_back = given_back + 1,
                        max_attempts = CASE WHEN max_attempts < 9223372036854775807 THEN max_attempts + 1 ELSE max_attempts END
                    WHERE id = ?
                    """,
                    [.id(id)])
                try await transaction.notify(.workAvailable(queue: operation.queue))
            }
        }
    }

    public func heartbeat(
        worker: String, queues: [String], kinds: [String], holding: [DurableOperationID], lease: Duration
    ) async throws -> DurableHeartbeat {
        let encoder = JSONEncoder()
        let heldList = String(decoding: try encoder.encode(holding.map(\.rawValue)), as: UTF8.self)
        let queueList = String(decoding: try encoder.encode(queues), as: UTF8.self)
        let kindList = String(decoding: try encoder.encode(kinds), as: UTF8.self)
        return try await access.write("renewing the leases of worker \(worker)") { transaction in
            let now = Date()
            try await transaction.rows(
                """
                INSERT INTO durable_workers (id, queues, kinds, heartbeat_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET queues = excluded.queues, kinds = excluded.kinds, heartbeat_at = excluded.heartbeat_at
                """, [.text(worker), .text(queueList), .text(kindList), .date(now)])
            let rows = try await transaction.rows(
                """
                UPDATE durable_operations SET lease_until = ?
                WHERE worker = ? AND state = 'running' AND id IN (SELECT value FROM json_each(?))
                RETURNING id, cancel_reason
                """,
                [.date(now.addingTimeInterval(lease.seconds)), .text(worker), .text(heldList)])
            var heartbeat = DurableHeartbeat(held: [], cancelRequested: [:])
            for row in rows {
                let id = DurableOperationID(rawValue: Int64(row.int("id")))
                heartbeat.held.insert(id)
                if let reason = row.optionalText("cancel_reason") { heartbeat.cancelRequested[id] = reason }
            }
            let unnamed = try await transaction.rows(
                """
                SELECT id, attempt FROM durable_operations
                WHERE worker = ? AND state = 'running' AND id NOT IN (SELECT value FROM json_each(?))
                """,
                [.text(worker), .text(heldList)])
            for row in unnamed {
                heartbeat.unnamed.insert(
                    DurableAttemptID(operation: DurableOperationID(rawValue: Int64(row.int("id"))), attempt: row.int("attempt")))
            }
            return heartbeat
        }
    }

    /// Leases that expired: the interrupted attempt is recorded as ended now; the operation is
    /// ready again, or failed when no attempt is left, or cancelled if that was asked.
    public func rescueExpiredLeases() async throws -> Int {
        // A read first: the write lock is taken only when something expired.
        let expired = try await access.withConnection("looking for expired leases") { connection in
            try await connection.rows(
                "SELECT count(*) AS n FROM durable_operations WHERE state = 'running' AND lease_until < ?", [.now]
            ).first?.int("n") ?? 0
        }
        guard expired > 0 else { return 0 }
        let count = try await access.write("rescuing expired leases") { transaction in
            let ids = try await transaction.rows(
                "SELECT id FROM durable_operations WHERE state = 'running' AND lease_until < ? ORDER BY id", [.now]
            ).map { DurableOperationID(rawValue: Int64($0.int("id"))) }
            var count = 0
            for id in ids {
                guard let operation = try await StoredOperation.read(id, in: transaction) else { continue }
                try await finishAttempt(
                    operation, .failed,
                    "worker \(operation.worker ?? "?") stopped renewing its lease during attempt \(operation.attempt)",
                    in: transaction)
                count += 1
            }
            try await transaction.rows("DELETE FROM durable_workers WHERE heartbeat_at < ?", [.date(Date().addingTimeInterval(-86_400))])
            return count
        }
        poller.poke()
        return count
    }
}
#endif
