// What an operator's tool reads from the SQLite store, and the retry it asks for. Each read
// goes through the indexes of schema version 5, reading one page.
#if SQLite

import Foundation
import OperationsDurable
import SQLiteNIO

extension SQLiteOperationStore: DurableStoreInspection {
    public func queueSummaries(window: Duration, now: Date) async throws -> [DurableQueueSummary] {
        let since = now.addingTimeInterval(-window.seconds)
        // The queues of unfinished and finished operations are read by skipping through the
        // indexes by queue (one descent per queue), not by reading their rows.
        let rows = try await access.withConnection("reading the summaries of the queues") { connection in
            try await connection.rows(
                """
                WITH RECURSIVE
                    \(Self.distinctQueues("waiting_queues", "state = 'waiting'")),
                    \(Self.distinctQueues("ready_queues", "state = 'ready'")),
                    \(Self.distinctQueues("running_queues", "state = 'running'")),
                    \(Self.distinctQueues("finished_queues", "finished_at IS NOT NULL")),
                    names(name) AS (
                        SELECT queue FROM waiting_queues UNION SELECT queue FROM ready_queues
                        UNION SELECT queue FROM running_queues UNION SELECT queue FROM finished_queues
                        UNION SELECT name FROM durable_queues WHERE max_concurrent IS NOT NULL OR suspended)
                SELECT n.name AS name,
                    (SELECT count(*) FROM durable_operations o WHERE o.queue = n.name AND o.state = 'waiting') AS waiting,
                    (SELECT count(*) FROM durable_operations o WHERE o.queue = n.name AND o.state = 'ready') AS ready,
                    (SELECT count(*) FROM durable_operations o WHERE o.queue = n.name AND o.state = 'running') AS running,
                    (SELECT count(*) FROM durable_operations o WHERE o.queue = n.name AND o.state = 'succeeded'
                        AND o.finished_at > ?1 AND o.finished_at <= ?2) AS succeeded,
                    (SELECT count(*) FROM durable_operations o WHERE o.queue = n.name AND o.state = 'failed'
                        AND o.finished_at > ?1 AND o.finished_at <= ?2) AS failed,
                    (SELECT count(*) FROM durable_operations o WHERE o.queue = n.name AND o.state = 'cancelled'
                        AND o.finished_at > ?1 AND o.finished_at <= ?2) AS cancelled,
                    q.max_concurrent AS max_concurrent, coalesce(q.suspended, 0) AS suspended
                FROM names n LEFT JOIN durable_queues q ON q.name = n.name
                WHERE n.name IS NOT NULL
                """, [.date(since), .date(now)])
        }
        var summaries: [DurableQueueSummary] = []
        for row in rows {
            var counts = DurableOperationCounts()
            for state in [DurableState.waiting, .ready, .running, .succeeded, .failed, .cancelled] {
                counts[state] = row.int(state.rawValue)
            }
            let limit = row.optionalInt("max_concurrent")
            let suspended = row.bool("suspended")
            // A queue whose operations all finished before the window is no longer shown.
            guard limit != nil || suspended || counts.unfinished + counts.succeeded + counts.failed + counts.cancelled > 0
            else { continue }
            summaries.append(DurableQueueSummary(name: row.text("name"), counts: counts, limit: limit, suspended: suspended))
        }
        return summaries.sorted { $0.name < $1.name }
    }

    public func finishedPerMinute(queue: String, minutes: Int, now: Date) async throws -> [Int] {
        guard minutes > 0 else { return [] }
        let since = now.addingTimeInterval(-60 * Double(minutes))
        // A range of the finished index for each finished state; minute 0 is the one ending at `now`.
        let rows = try await access.withConnection("counting the operations of queue \"\(queue)\" finished per minute") {
            connection in
            try await connection.rows(
                """
                SELECT CAST((?3 - finished_at) / 60 AS INTEGER) AS age, count(*) AS n FROM (
                    SELECT finished_at FROM durable_operations WHERE queue = ?1 AND state = 'succeeded'
                        AND finished_at > ?2 AND finished_at <= ?3
                    UNION ALL
                    SELECT finished_at FROM durable_operations WHERE queue = ?1 AND state = 'failed'
                        AND finished_at > ?2 AND finished_at <= ?3
                    UNION ALL
                    SELECT finished_at FROM durable_operations WHERE queue = ?1 AND state = 'cancelled'
                        AND finished_at > ?2 AND finished_at <= ?3)
                GROUP BY age
                """, [.text(queue), .date(since), .date(now)])
        }
        var counts = Array(repeating: 0, count: minutes)
        for row in rows {
            let age = row.int("age")
            if age >= 0, age < minutes { counts[minutes - 1 - age] += row.int("n") }
        }
        return counts
    }

    public func operations(
        queue: String, state: DurableState, after: DurableOperationID?, limit: Int
    ) async throws -> [DurableOperationSummary] {
        guard limit > 0 else { return [] }
        let start: SQLiteData = .integer(SQLiteInt64(after?.rawValue ?? 0))
        let columns = Self.summaryColumns
        return try await access.withConnection("listing the \(state.rawValue) operations of queue \"\(queue)\"") { connection in
            switch state {
            case .waiting, .running:
                // Their indexes by queue end in the rowid: a page is a range of one.
                return try await connection.rows(
                    """
                    SELECT \(columns) FROM durable_operations
                    WHERE queue = ?1 AND state = '\(state.rawValue)' AND id > ?2 ORDER BY id LIMIT ?3
                    """, [.text(queue), start, .int(limit)]
                ).map(Self.summary(from:))
            case .ready:
                // The claimable index orders by priority first: each band of priority is read
                // from its own range, by id, and the bands' pages are merged.
                let bands = try await connection.rows(
                    """
                    WITH RECURSIVE bands(priority) AS (
                        SELECT (SELECT priority FROM durable_operations WHERE queue = ?1 AND state = 'ready'
                            ORDER BY priority DESC LIMIT 1)
                        UNION ALL
                        SELECT (SELECT o.priority FROM durable_operations o
                            WHERE o.queue = ?1 AND o.state = 'ready' AND o.priority < b.priority
                            ORDER BY o.priority DESC LIMIT 1)
                        FROM bands b WHERE b.priority IS NOT NULL)
                    SELECT priority FROM bands WHERE priority IS NOT NULL
                    """, [.text(queue)]
                ).map { $0.int("priority") }
                // A statement merges at most 500 (SQLite's limit on a compound SELECT): the bands
                // go 200 to a statement, and the statements' pages are merged here.
                var merged: [DurableOperationSummary] = []
                for first in stride(from: 0, to: bands.count, by: 200) {
                    let pages = bands[first..<min(first + 200, bands.count)].map { priority in
                        """
                        SELECT * FROM (SELECT \(columns) FROM durable_operations
                            WHERE queue = ?1 AND state = 'ready' AND priority = \(priority) AND id > ?2 ORDER BY id LIMIT ?3)
                        """
                    }
                    merged += try await connection.rows(
                        "SELECT * FROM (\(pages.joined(separator: " UNION ALL "))) ORDER BY id LIMIT ?3",
                        [.text(queue), start, .int(limit)]
                    ).map(Self.summary(from:))
                }
                return Array(merged.sorted { $0.id < $1.id }.prefix(limit))
            case .succeeded, .failed, .cancelled:
                var cursor: (finishedAt: Double, id: Int) = (.infinity, Int.max)
                if let after {
                    // A page after an operation that is no longer finished (retried, pruned) is empty.
                    guard let row = try await connection.rows(
                        "SELECT finished_at, id FROM durable_operations WHERE id = ? AND finished_at IS NOT NULL", [.id(after)]
                    ).first else { return [] }
                    cursor = (row.double("finished_at"), row.int("id"))
                }
                return try await connection.rows(
                    """
                    SELECT \(columns) FROM durable_operations
                    WHERE queue = ?1 AND state = '\(state.rawValue)' AND finished_at IS NOT NULL AND (finished_at, id) < (?2, ?3)
                    ORDER BY finished_at DESC, id DESC LIMIT ?4
                    """, [.text(queue), .float(cursor.finishedAt), .int(cursor.id), .int(limit)]
                ).map(Self.summary(from:))
            }
        }
    }

    public func details(of id: DurableOperationID, edgeLimit: Int) async throws -> DurableOperationDetails? {
        guard let record = try await record(of: id, includingAttempts: true) else { return nil }
        return try await access.withConnection("reading the details of \(id)") { connection -> DurableOperationDetails? in
            guard let row = try await connection.rows(
                "SELECT input, key, priority, created_at, finished_at, state, worker FROM durable_operations WHERE id = ?",
                [.id(id)]
            ).first else { return nil }
            var dependencies: [DurableOperationSummary] = []
            var dependents: [DurableOperationSummary] = []
            if edgeLimit > 0 {
                dependencies = try await connection.rows(
                    """
                    SELECT \(Self.summaryColumns) FROM durable_operations WHERE id IN (
                        SELECT dependency FROM durable_edges WHERE dependent = ?1 ORDER BY dependency LIMIT ?2)
                    ORDER BY id
                    """, [.id(id), .int(edgeLimit)]
                ).map(Self.summary(from:))
                dependents = try await connection.rows(
                    """
                    SELECT \(Self.summaryColumns) FROM durable_operations WHERE id IN (
                        SELECT dependent FROM durable_edges WHERE dependency = ?1 ORDER BY dependent LIMIT ?2)
                    ORDER BY id
                    """, [.id(id), .int(edgeLimit)]
                ).map(Self.summary(from:))
            }
            return DurableOperationDetails(
                record: record, input: row.text("input"), key: row.optionalText("key"), priority: row.int("priority"),
                enqueuedAt: row.date("created_at"), finishedAt: row.optionalDate("finished_at"),
                worker: row.text("state") == DurableState.running.rawValue ? row.optionalText("worker") : nil,
                dependencies: dependencies, dependents: dependents)
        }
    }

    public func failureGroups(queue: String?, window: Duration, now: Date, limit: Int) async throws -> [DurableFailureGroup] {
        guard limit > 0 else { return [] }
        let since = now.addingTimeInterval(-window.seconds)
        // One queue's failures are a range of the finished index; every queue's, a range of
        // the index of failures.
        let rows = try await access.withConnection(
            "reading the failures of \(queue.map { "queue \"\($0)\"" } ?? "every queue")"
        ) { connection in
            try await connection.rows(
                """
                WITH failures AS (
                    SELECT queue, kind, coalesce(error, '') AS error, finished_at, id,
                        count(*) OVER (PARTITION BY queue, kind, coalesce(error, '')) AS n,
                        row_number() OVER (PARTITION BY queue, kind, coalesce(error, '') ORDER BY finished_at DESC, id DESC) AS position
                    FROM durable_operations
                    WHERE \(queue == nil ? "" : "queue = ?4 AND ")state = 'failed' AND finished_at > ?1 AND finished_at <= ?2)
                SELECT queue, kind, error, n, finished_at, id FROM failures WHERE position = 1
                ORDER BY n DESC, finished_at DESC, queue, kind, error LIMIT ?3
                """, [.date(since), .date(now), .int(limit)] + (queue.map { [.text($0)] } ?? []))
        }
        return rows.map { row in
            DurableFailureGroup(
                queue: row.text("queue"), kind: row.text("kind"), error: row.text("error"), count: row.int("n"),
                lastFailedAt: row.date("finished_at"), latest: DurableOperationID(rawValue: Int64(row.int("id"))))
        }
    }

    public func workers(window: Duration, now: Date) async throws -> [DurableWorkerSummary] {
        let since = now.addingTimeInterval(-window.seconds)
        let rows = try await access.withConnection("reading the workers") { connection in
            try await connection.rows(
                """
                SELECT w.id AS id, w.queues AS queues, w.kinds AS kinds, w.heartbeat_at AS heartbeat_at,
                    (SELECT count(*) FROM durable_operations o WHERE o.worker = w.id AND o.state = 'running') AS running
                FROM durable_workers w WHERE w.heartbeat_at > ?
                """, [.date(since)])
        }
        let decoder = JSONDecoder()
        return rows.map { row in
            DurableWorkerSummary(
                name: row.text("id"),
                queues: (try? decoder.decode([String].self, from: Data(row.text("queues").utf8))) ?? [],
                kinds: (try? decoder.decode([String].self, from: Data(row.text("kinds").utf8))) ?? [],
                lastHeartbeat: row.date("heartbeat_at"), running: row.int("running"))
        }.sorted { $0.name < $1.name }
    }

    public func search(_ text: String, limit: Int) async throws -> [DurableOperationSummary] {
        guard limit > 0 else { return [] }
        let id: SQLiteData = Int64(text).map { .integer(SQLiteInt64($0)) } ?? .null
        return try await access.withConnection("searching for \"\(text)\"") { connection in
            try await connection.rows(
                """
                SELECT \(Self.summaryColumns) FROM durable_operations WHERE id IN (
                    SELECT id FROM (SELECT id FROM durable_operations WHERE kind = ?1 ORDER BY id DESC LIMIT ?2)
                    UNION SELECT id FROM (SELECT id FROM durable_operations WHERE key = ?1 ORDER BY id DESC LIMIT ?2)
                    UNION SELECT ?3)
                ORDER BY id DESC LIMIT ?2
                """, [.text(text), .int(limit), id]
            ).map(Self.summary(from:))
        }
    }

    public func retry(_ id: DurableOperationID) async throws -> Bool {
        let retried = try await access.write("retrying \(id)") { transaction -> Bool in
            guard let row = try await transaction.rows(
                "SELECT queue, kind, state, key, runs_anyway FROM durable_operations WHERE id = ?", [.id(id)]
            ).first, ["failed", "cancelled"].contains(row.text("state"))
            else { return false }
            let queue = row.text("queue")
            if let key = row.optionalText("key"),
                let holder = try await transaction.rows(
                    "SELECT id FROM durable_operations WHERE queue = ? AND key = ? AND id <> ? AND \(SQLiteSchema.keyHolder)",
                    [.text(queue), .text(key), .id(id)]
                ).first
            {
                throw DurableError(
                    .invalidArgument,
                    "retrying \(id) (\(row.text("kind"))): its key \"\(key)\" of queue \"\(queue)\" is held by operation \(holder.int("id")), which is pending or running")
            }
            // A dependency that failed or was cancelled has no result to run with.
            if !row.bool("runs_anyway"),
                let ended = try await transaction.rows(
                    """
                    SELECT d.id, d.kind, d.state FROM durable_edges e JOIN durable_operations d ON d.id = e.dependency
                    WHERE e.dependent = ? AND d.state IN ('failed', 'cancelled') ORDER BY d.id LIMIT 1
                    """, [.id(id)]
                ).first
            {
                throw DurableError(
                    .invalidArgument,
                    "retrying \(id) (\(row.text("kind"))): its dependency \(ended.int("id")) (\(ended.text("kind"))) is \(ended.text("state")), and it does not run anyway; retry the dependency first")
            }
            // Counted again: a cancel left the counter as it was. The write lock keeps every
            // dependency as it is until the commit.
            let pending = try await transaction.rows(
                """
                SELECT count(*) AS n FROM durable_edges e JOIN durable_operations d ON d.id = e.dependency
                WHERE e.dependent = ? AND d.state IN ('waiting', 'ready', 'running')
                """, [.id(id)]
            ).first?.int("n") ?? 0
            try await transaction.rows(
                """
                UPDATE durable_operations SET state = ?, pending_dependencies = ?, max_attempts = max(max_attempts, attempt + 1),
                    output = NULL, error = NULL, cancel_reason = NULL, finished_at = NULL, worker = NULL, lease_until = NULL,
                    progress_completed = 0, progress_total = 0, not_before = ?
                WHERE id = ?
                """, [.text(pending > 0 ? "waiting" : "ready"), .int(pending), .now, .id(id)])
            if pending == 0 { try await transaction.notify(.workAvailable(queue: queue)) }
            return true
        }
        if retried { poller.poke() }
        return retried
    }

    // MARK: Reading summaries

    static let summaryColumns = "id, queue, kind, state, key, attempt, max_attempts, finished_at, error, cancel_reason"

    /// The error shown is a failed operation's, or a cancelled one's reason.
    static func summary(from row: SQLiteRow) -> DurableOperationSummary {
        let state = DurableState(rawValue: row.text("state")) ?? .waiting
        return DurableOperationSummary(
            id: DurableOperationID(rawValue: Int64(row.int("id"))), queue: row.text("queue"), kind: row.text("kind"),
            state: state, key: row.optionalText("key"), attempt: row.int("attempt"), maximumAttempts: row.int("max_attempts"),
            finishedAt: row.optionalDate("finished_at"),
            error: state == .failed ? row.optionalText("error") : state == .cancelled ? row.optionalText("cancel_reason") : nil)
    }

    /// A recursive query named `name` of the queues of the operations that match `condition`
    /// (on one column), one index descent per queue (a loose index scan), ending with a NULL row.
    static func distinctQueues(_ name: String, _ condition: String) -> String {
        """
        \(name)(queue) AS (
            SELECT (SELECT queue FROM durable_operations WHERE \(condition) ORDER BY queue LIMIT 1)
            UNION ALL
            SELECT (SELECT o.queue FROM durable_operations o WHERE o.\(condition) AND o.queue > q.queue ORDER BY o.queue LIMIT 1)
            FROM \(name) q WHERE q.queue IS NOT NULL)
        """
    }
}
#endif
