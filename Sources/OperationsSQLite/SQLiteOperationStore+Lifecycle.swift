// An operation's life in the SQLite store: enqueue, claim, finish, heartbeat, rescue, cancel.
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
            for request in requests { results.append(try await enqueue(request, in: transaction)) }
            return results
        }
        poller.poke()
        return results
    }

    private func enqueue(_ request: DurableEnqueueRequest, in transaction: SQLiteTransaction) async throws -> DurableEnqueueResult {
        if let key = request.key,
            let existing = try await transaction.rows(
                "SELECT id FROM durable_operations WHERE queue = ? AND key = ? AND state IN ('waiting', 'ready', 'running')",
                [.text(request.queue), .text(key)]
            ).first
        {
            return DurableEnqueueResult(id: DurableOperationID(rawValue: Int64(existing.int("id"))), coalesced: true)
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
                runs_anyway, max_attempts, retry_delays, cancel_reason, created_at, finished_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id
            """,
            [
                .text(request.queue), .text(request.kind), .text(request.input), .text(state.rawValue), .int(request.priority),
                .optionalText(request.key), .date(request.notBefore ?? now), .int(pending), .int(request.runsAnyway ? 1 : 0),
                .int(request.maximumAttempts), .text(delays), .optionalText(cancelReason), .date(now),
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
        let claims = try await access.write("claiming from queue \"\(queue)\"") { transaction -> [DurableClaim] in
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
        return claims
    }

    public func complete(_ completions: [DurableCompletion], worker: String) async throws {
        guard !completions.isEmpty else { return }
        try await access.write("recording \(completions.count) finished attempts") { transaction in
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
        poller.poke()
    }

    public func giveBack(_ ids: [DurableOperationID], worker: String, reason: String) async throws {
        guard !ids.isEmpty else { return }
        try await access.write("giving back operations") { transaction in
            for id in ids.sorted() {
                guard let operation = try await StoredOperation.read(id, in: transaction),
                    operation.state == .running, operation.worker == worker
                else { continue }
                if let cancelReason = operation.cancelReason {
                    try await finishAttempt(operation, .cancelled, cancelReason, in: transaction)
                } else {
                    try await transaction.rows(
                        "UPDATE durable_attempts SET ended_at = ?, error = ? WHERE operation = ? AND number = ?",
                        [.now, .text(reason), .id(id), .int(operation.attempt)])
                    // Given back, not failed: the attempt does not count against the maximum.
                    try await transaction.rows(
                        "UPDATE durable_operations SET state = 'ready', worker = NULL, lease_until = NULL, max_attempts = max_attempts + 1 WHERE id = ?",
                        [.id(id)])
                    try await transaction.notify(.workAvailable(queue: operation.queue))
                }
            }
        }
        poller.poke()
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
            return heartbeat
        }
    }

    /// Leases that expired: the interrupted attempt is recorded as ended now; the operation is
    /// ready again, or failed when no attempt is left, or cancelled if that was asked.
    public func rescueExpiredLeases() async throws -> Int {
        // A read first: the write lock is taken only when something expired.
        let expired = try await access.withConnection("looking for expired leases") { connection in
            try await connection.query(
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

    // MARK: Cancelling

    public func cancel(_ id: DurableOperationID, reason: String) async throws {
        let found = try await access.write("cancelling \(id)") { transaction in
            try await cancel(id, reason: reason, in: transaction)
        }
        poller.poke()
        guard found else {
            throw DurableError(.notFound, "cancelling \(id): it is not stored (never added, or pruned)")
        }
    }

    public func cancelAll(queue: String, reason: String) async throws {
        try await access.write("cancelling the operations of queue \"\(queue)\"") { transaction in
            let ids = try await transaction.rows(
                "SELECT id FROM durable_operations WHERE queue = ? AND state IN ('waiting', 'ready', 'running') ORDER BY id",
                [.text(queue)]
            ).map { DurableOperationID(rawValue: Int64($0.int("id"))) }
            for id in ids { _ = try await cancel(id, reason: reason, in: transaction) }
        }
        poller.poke()
    }

    private func cancel(_ id: DurableOperationID, reason: String, in transaction: SQLiteTransaction) async throws -> Bool {
        guard let operation = try await StoredOperation.read(id, in: transaction) else { return false }
        switch operation.state {
        case .waiting, .ready:
            try await transaction.rows(
                "UPDATE durable_operations SET state = 'cancelled', cancel_reason = ?, finished_at = ? WHERE id = ?",
                [.text(reason), .now, .id(id)])
            try await transaction.notify(.finished(id))
            try await settleDependents(
                of: id, success: false, reason: "dependency \(id.rawValue) (\(operation.kind)) was cancelled: \(reason)",
                in: transaction)
        case .running where operation.cancelReason == nil:
            try await transaction.rows("UPDATE durable_operations SET cancel_reason = ? WHERE id = ?", [.text(reason), .id(id)])
            try await transaction.notify(.cancelRequested(id))
        default:
            break
        }
        return true
    }

    // MARK: Finishing

    enum Outcome { case succeeded, failed, rejected, cancelled }

    /// Ends an attempt: succeeded, retried (while attempts remain), failed, or cancelled; the
    /// dependents' counters change in the same transaction.
    func finishAttempt(
        _ operation: StoredOperation, _ requested: Outcome, _ value: String, in transaction: SQLiteTransaction
    ) async throws {
        var outcome = requested
        if (outcome == .failed || outcome == .rejected) && operation.cancelReason != nil { outcome = .cancelled }
        let now = Date()
        let id = operation.id
        let attemptError: SQLiteData =
            switch outcome {
            case .succeeded: .null
            case .cancelled: .text("cancelled: \(operation.cancelReason ?? value)")
            case .failed, .rejected: .text(value)
            }
        try await transaction.rows(
            "UPDATE durable_attempts SET ended_at = ?, error = ? WHERE operation = ? AND number = ?",
            [.date(now), attemptError, .id(id), .int(operation.attempt)])
        switch outcome {
        case .succeeded:
            try await transaction.rows(
                "UPDATE durable_operations SET state = 'succeeded', output = ?, worker = NULL, lease_until = NULL, finished_at = ? WHERE id = ?",
                [.text(value), .date(now), .id(id)])
            try await transaction.notify(.finished(id))
            try await settleDependents(of: id, success: true, reason: nil, in: transaction)
        case .failed where operation.attempt < operation.maximumAttempts:
            let delay = operation.retryDelays.indices.contains(operation.attempt - 1) ? operation.retryDelays[operation.attempt - 1] : 0
            try await transaction.rows(
                "UPDATE durable_operations SET state = 'ready', error = ?, worker = NULL, lease_until = NULL, not_before = ? WHERE id = ?",
                [.text(value), .date(now.addingTimeInterval(delay)), .id(id)])
            try await transaction.notify(.workAvailable(queue: operation.queue))
        case .cancelled:
            let reason = operation.cancelReason ?? value
            try await transaction.rows(
                "UPDATE durable_operations SET state = 'cancelled', cancel_reason = ?, worker = NULL, lease_until = NULL, finished_at = ? WHERE id = ?",
                [.text(reason), .date(now), .id(id)])
            try await transaction.notify(.finished(id))
            try await settleDependents(
                of: id, success: false, reason: "dependency \(id.rawValue) (\(operation.kind)) was cancelled: \(reason)",
                in: transaction)
        case .failed, .rejected:
            try await transaction.rows(
                "UPDATE durable_operations SET state = 'failed', error = ?, worker = NULL, lease_until = NULL, finished_at = ? WHERE id = ?",
                [.text(value), .date(now), .id(id)])
            try await transaction.notify(.finished(id))
            try await settleDependents(
                of: id, success: false, reason: "dependency \(id.rawValue) (\(operation.kind)) failed: \(value)", in: transaction)
        }
        // A slot of a limited queue is free: its workers may claim again.
        let limited = try await transaction.rows(
            "SELECT 1 FROM durable_queues WHERE name = ? AND max_concurrent IS NOT NULL", [.text(operation.queue)])
        if !limited.isEmpty { try await transaction.notify(.workAvailable(queue: operation.queue)) }
    }

    /// Dependents of a finished operation: a success (or a dependent that runs anyway) takes
    /// one off their counters, readying those at zero; a failure cancels them, and theirs.
    func settleDependents(
        of id: DurableOperationID, success: Bool, reason: String?, in transaction: SQLiteTransaction
    ) async throws {
        var work: [(DurableOperationID, Bool)] = [(id, success)]
        while let (finished, succeeded) = work.popLast() {
            let dependents = try await transaction.rows(
                """
                SELECT o.id, o.queue, o.runs_anyway, o.pending_dependencies FROM durable_operations o
                JOIN durable_edges e ON o.id = e.dependent
                WHERE e.dependency = ? AND o.state = 'waiting' ORDER BY o.id
                """, [.id(finished)])
            for dependent in dependents {
                let dependentID = DurableOperationID(rawValue: Int64(dependent.int("id")))
                let pending = dependent.int("pending_dependencies")
                if succeeded || dependent.bool("runs_anyway") {
                    try await transaction.rows(
                        """
                        UPDATE durable_operations SET pending_dependencies = pending_dependencies - 1,
                            state = CASE WHEN pending_dependencies = 1 THEN 'ready' ELSE state END WHERE id = ?
                        """, [.id(dependentID)])
                    if pending == 1 { try await transaction.notify(.workAvailable(queue: dependent.text("queue"))) }
                } else {
                    try await transaction.rows(
                        """
                        UPDATE durable_operations SET state = 'cancelled', cancel_reason = ?,
                            pending_dependencies = pending_dependencies - 1, finished_at = ? WHERE id = ?
                        """, [.optionalText(reason), .now, .id(dependentID)])
                    try await transaction.notify(.finished(dependentID))
                    work.append((dependentID, false))
                }
            }
        }
    }
}

/// The columns of a stored operation that its lifecycle reads.
struct StoredOperation {
    var id: DurableOperationID
    var queue: String
    var kind: String
    var state: DurableState
    var attempt: Int
    var maximumAttempts: Int
    var retryDelays: [Double]
    var worker: String?
    var cancelReason: String?

    static func read(_ id: DurableOperationID, in transaction: SQLiteTransaction) async throws -> StoredOperation? {
        guard let row = try await transaction.rows(
            "SELECT id, queue, kind, state, attempt, max_attempts, retry_delays, worker, cancel_reason FROM durable_operations WHERE id = ?",
            [.id(id)]
        ).first else { return nil }
        return StoredOperation(
            id: id, queue: row.text("queue"), kind: row.text("kind"), state: DurableState(rawValue: row.text("state")) ?? .waiting,
            attempt: row.int("attempt"), maximumAttempts: row.int("max_attempts"),
            retryDelays: (try? JSONDecoder().decode([Double].self, from: Data(row.text("retry_delays").utf8))) ?? [],
            worker: row.optionalText("worker"), cancelReason: row.optionalText("cancel_reason"))
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
#endif
