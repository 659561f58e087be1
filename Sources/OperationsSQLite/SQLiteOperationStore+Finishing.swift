// How operations end in the SQLite store: cancelling, finishing an attempt, settling its
// dependents. The same rules as the PostgreSQL store's functions, one transaction each.
#if SQLite

import Foundation
import OperationsDurable
import SQLiteNIO

extension SQLiteOperationStore {
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
            // The delay of this failure's number: attempts given back are not failures.
            let delay = operation.retryBackoff.seconds(
                afterFailure: operation.attempt - operation.givenBack, listed: operation.retryDelays)
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
    var retryBackoff: DurableBackoff
    var givenBack: Int
    var worker: String?
    var cancelReason: String?

    static func read(_ id: DurableOperationID, in transaction: SQLiteTransaction) async throws -> StoredOperation? {
        guard let row = try await transaction.rows(
            """
            SELECT id, queue, kind, state, attempt, max_attempts, retry_delays, retry_initial, retry_multiplier, retry_maximum,
                retry_jittered, given_back, worker, cancel_reason
            FROM durable_operations WHERE id = ?
            """,
            [.id(id)]
        ).first else { return nil }
        return StoredOperation(
            id: id, queue: row.text("queue"), kind: row.text("kind"), state: DurableState(rawValue: row.text("state")) ?? .waiting,
            attempt: row.int("attempt"), maximumAttempts: row.int("max_attempts"),
            retryDelays: (try? JSONDecoder().decode([Double].self, from: Data(row.text("retry_delays").utf8))) ?? [],
            retryBackoff: DurableBackoff(
                initial: row.double("retry_initial"), multiplier: row.double("retry_multiplier"),
                maximum: row.double("retry_maximum"), jittered: row.bool("retry_jittered")),
            givenBack: row.int("given_back"),
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
