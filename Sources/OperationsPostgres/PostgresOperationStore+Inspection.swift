// What an operator's tool reads from the PostgreSQL store, and the retry it asks for. Each
// read is one statement over the indexes of schema version 8, reading one page.
#if PostgreSQL

import Foundation
import OperationsDurable
import PostgresNIO

extension PostgresOperationStore: DurableStoreInspection {
    public func queueSummaries(window: Duration, now: Date) async throws -> [DurableQueueSummary] {
        let since = now.addingTimeInterval(-window.seconds)
        // The queues of unfinished and finished operations are read by skipping through the
        // indexes by queue (one descent per queue), not by reading their rows.
        let names = try await rows(
            """
            WITH RECURSIVE
                \(unescaped: Self.distinctQueues("waiting_queues", "state = 'waiting'")),
                \(unescaped: Self.distinctQueues("ready_queues", "state = 'ready'")),
                \(unescaped: Self.distinctQueues("running_queues", "state = 'running'")),
                \(unescaped: Self.distinctQueues("finished_queues", "finished_at IS NOT NULL"))
            SELECT queue FROM waiting_queues WHERE queue IS NOT NULL UNION SELECT queue FROM ready_queues WHERE queue IS NOT NULL
            UNION SELECT queue FROM running_queues WHERE queue IS NOT NULL UNION SELECT queue FROM finished_queues WHERE queue IS NOT NULL
            UNION SELECT name FROM durable_queues WHERE max_concurrent IS NOT NULL OR suspended
            """, "reading the names of the queues"
        ).map { try $0.decode(String.self) }
        guard !names.isEmpty else { return [] }
        // The names travel as an array, whose length the planner knows: counted in the same
        // statement as the recursive queries, each count was estimated for a hundred queues,
        // and the statement's cost made PostgreSQL compile it (JIT) for longer than it ran.
        let rows = try await rows(
            """
            SELECT n.name,
                (SELECT count(*) FROM durable_operations o WHERE o.queue = n.name AND o.state = 'waiting')::integer,
                (SELECT count(*) FROM durable_operations o WHERE o.queue = n.name AND o.state = 'ready')::integer,
                (SELECT count(*) FROM durable_operations o WHERE o.queue = n.name AND o.state = 'running')::integer,
                (SELECT count(*) FROM durable_operations o WHERE o.queue = n.name AND o.state = 'succeeded'
                    AND o.finished_at > \(since) AND o.finished_at <= \(now))::integer,
                (SELECT count(*) FROM durable_operations o WHERE o.queue = n.name AND o.state = 'failed'
                    AND o.finished_at > \(since) AND o.finished_at <= \(now))::integer,
                (SELECT count(*) FROM durable_operations o WHERE o.queue = n.name AND o.state = 'cancelled'
                    AND o.finished_at > \(since) AND o.finished_at <= \(now))::integer,
                q.max_concurrent, coalesce(q.suspended, false)
            FROM unnest(\(names)::text[]) n(name) LEFT JOIN durable_queues q ON q.name = n.name
            """, "counting the operations of \(names.count) queues")
        var summaries: [DurableQueueSummary] = []
        for row in rows {
            let (name, waiting, ready, running, succeeded, failed, cancelled, limit, suspended) = try row.decode(
                (String, Int, Int, Int, Int, Int, Int, Int?, Bool).self)
            var counts = DurableOperationCounts()
            counts.waiting = waiting
            counts.ready = ready
            counts.running = running
            counts.succeeded = succeeded
            counts.failed = failed
            counts.cancelled = cancelled
            // A queue whose operations all finished before the window is no longer shown.
            guard limit != nil || suspended || counts.unfinished + succeeded + failed + cancelled > 0 else { continue }
            summaries.append(DurableQueueSummary(name: name, counts: counts, limit: limit, suspended: suspended))
        }
        return summaries.sorted { $0.name < $1.name }
    }

    public func finishedPerMinute(queue: String, minutes: Int, now: Date) async throws -> [Int] {
        guard minutes > 0 else { return [] }
        let since = now.addingTimeInterval(-60 * Double(minutes))
        // A range of the finished index for each finished state; minute 0 is the one ending at `now`.
        let rows = try await rows(
            """
            SELECT floor(extract(epoch FROM \(now)::timestamptz - f.finished_at) / 60)::integer AS age, count(*)::integer
            FROM (
                SELECT finished_at FROM durable_operations WHERE queue = \(queue) AND state = 'succeeded'
                    AND finished_at > \(since) AND finished_at <= \(now)
                UNION ALL
                SELECT finished_at FROM durable_operations WHERE queue = \(queue) AND state = 'failed'
                    AND finished_at > \(since) AND finished_at <= \(now)
                UNION ALL
                SELECT finished_at FROM durable_operations WHERE queue = \(queue) AND state = 'cancelled'
                    AND finished_at > \(since) AND finished_at <= \(now)) f
            GROUP BY age
            """, "counting the operations of queue \"\(queue)\" finished per minute")
        var counts = Array(repeating: 0, count: minutes)
        for row in rows {
            let (age, count) = try row.decode((Int, Int).self)
            if age >= 0, age < minutes { counts[minutes - 1 - age] += count }
        }
        return counts
    }

    public func operations(
        queue: String, state: DurableState, after: DurableOperationID?, limit: Int
    ) async throws -> [DurableOperationSummary] {
        guard limit > 0 else { return [] }
        let what = "listing the \(state.rawValue) operations of queue \"\(queue)\""
        let columns = Self.summaryColumns
        let start = after?.rawValue ?? 0
        // A literal, so that the planner matches the state's partial index.
        let stateLiteral = "'\(state.rawValue)'"
        let query: PostgresQuery
        // A page's ids are read from the range of the state's index that leads with the
        // queue (from the index alone where it holds them), then its rows by id. The queue is
        // matched with `= ANY`, not `=`: equal to a constant, it drops out of the order, and
        // the planner may then walk the primary key (or the finished index) instead, filtering
        // out every row of other queues and states that lies between two of the page's.
        switch state {
        case .waiting, .running:
            query = """
                SELECT \(unescaped: Self.summaryColumns("o")) FROM (
                    SELECT id FROM durable_operations
                    WHERE queue = ANY(ARRAY[\(queue)]) AND state = \(unescaped: stateLiteral) AND id > \(start)
                    ORDER BY queue, id LIMIT \(limit)) page
                JOIN durable_operations o ON o.id = page.id
                ORDER BY o.id
                """
        case .ready:
            // The claimable index orders by priority first: each band of priority is read
            // from its own range, by id, and the bands' pages are merged.
            query = """
                WITH RECURSIVE bands(priority) AS (
                    (SELECT priority FROM durable_operations WHERE queue = \(queue) AND state = 'ready'
                        ORDER BY priority DESC LIMIT 1)
                    UNION ALL
                    SELECT (SELECT o.priority FROM durable_operations o
                        WHERE o.queue = \(queue) AND o.state = 'ready' AND o.priority < b.priority
                        ORDER BY o.priority DESC LIMIT 1)
                    FROM bands b WHERE b.priority IS NOT NULL)
                SELECT page.* FROM bands b CROSS JOIN LATERAL (
                    SELECT \(unescaped: columns) FROM durable_operations o
                    WHERE o.queue = \(queue) AND o.state = 'ready' AND o.priority = b.priority AND o.id > \(start)
                    ORDER BY o.id LIMIT \(limit)) page
                WHERE b.priority IS NOT NULL
                ORDER BY page.id LIMIT \(limit)
                """
        case .succeeded, .failed, .cancelled:
            // The cursor's finish time is read in the statement: a time that went through a
            // `Date` could lose a microsecond, and with it the rows finished at that instant.
            let cursor = after.map {
                "AND (finished_at, id) < (SELECT c.finished_at, c.id FROM durable_operations c WHERE c.id = \($0.rawValue))"
            }
            query = """
                SELECT \(unescaped: Self.summaryColumns("o")) FROM (
                    SELECT id FROM durable_operations
                    WHERE queue = ANY(ARRAY[\(queue)]) AND state = \(unescaped: stateLiteral) AND finished_at IS NOT NULL
                        \(unescaped: cursor ?? "")
                    ORDER BY queue DESC, finished_at DESC, id DESC LIMIT \(limit)) page
                JOIN durable_operations o ON o.id = page.id
                ORDER BY o.finished_at DESC, o.id DESC
                """
        }
        return try await rows(query, what).map(Self.summary(from:))
    }

    public func details(of id: DurableOperationID, edgeLimit: Int) async throws -> DurableOperationDetails? {
        guard let record = try await record(of: id, includingAttempts: true) else { return nil }
        let found = try await rows(
            """
            SELECT input, key, priority, created_at, finished_at, CASE WHEN state = 'running' THEN worker END
            FROM durable_operations WHERE id = \(id.rawValue)
            """, "reading the details of \(id)")
        guard let row = found.first else { return nil }
        let (input, key, priority, enqueuedAt, finishedAt, worker) = try row.decode((String, String?, Int, Date, Date?, String?).self)
        var dependencies: [DurableOperationSummary] = []
        var dependents: [DurableOperationSummary] = []
        if edgeLimit > 0 {
            let edges = try await rows(
                """
                SELECT true, \(unescaped: Self.summaryColumns("o")) FROM (
                    SELECT dependency FROM durable_edges WHERE dependent = \(id.rawValue) ORDER BY dependency LIMIT \(edgeLimit)) e
                JOIN durable_operations o ON o.id = e.dependency
                UNION ALL
                SELECT false, \(unescaped: Self.summaryColumns("o")) FROM (
                    SELECT dependent FROM durable_edges WHERE dependency = \(id.rawValue) ORDER BY dependent LIMIT \(edgeLimit)) e
                JOIN durable_operations o ON o.id = e.dependent
                """, "reading the dependencies and dependents of \(id)")
            for edge in edges {
                let (isDependency, rawID, queue, kind, state, key, attempt, maximum, finished, error, reason) = try edge.decode(
                    (Bool, Int64, String, String, String, String?, Int, Int, Date?, String?, String?).self)
                let summary = Self.summary(
                    id: rawID, queue: queue, kind: kind, state: state, key: key, attempt: attempt, maximum: maximum,
                    finishedAt: finished, error: error, reason: reason)
                if isDependency { dependencies.append(summary) } else { dependents.append(summary) }
            }
        }
        return DurableOperationDetails(
            record: record, input: input, key: key, priority: priority, enqueuedAt: enqueuedAt, finishedAt: finishedAt,
            worker: worker, dependencies: dependencies.sorted { $0.id < $1.id }, dependents: dependents.sorted { $0.id < $1.id })
    }

    public func failureGroups(queue: String?, window: Duration, now: Date, limit: Int) async throws -> [DurableFailureGroup] {
        guard limit > 0 else { return [] }
        let since = now.addingTimeInterval(-window.seconds)
        // One queue's failures are a range of the finished index; every queue's, a range of
        // the index of failures.
        let grouping = """
            SELECT queue, kind, coalesce(error, '') AS error, count(*)::integer AS failures, max(finished_at) AS last_failed,
                (array_agg(id ORDER BY finished_at DESC, id DESC))[1]
            FROM durable_operations
            """
        let order = "GROUP BY queue, kind, coalesce(error, '') ORDER BY failures DESC, last_failed DESC, queue, kind, error"
        let query: PostgresQuery
        if let queue {
            query = """
                \(unescaped: grouping)
                WHERE queue = \(queue) AND state = 'failed' AND finished_at > \(since) AND finished_at <= \(now)
                \(unescaped: order) LIMIT \(limit)
                """
        } else {
            query = """
                \(unescaped: grouping)
                WHERE state = 'failed' AND finished_at > \(since) AND finished_at <= \(now)
                \(unescaped: order) LIMIT \(limit)
                """
        }
        let rows = try await rows(query, "reading the failures of \(queue.map { "queue \"\($0)\"" } ?? "every queue")")
        return try rows.map { row in
            let (queue, kind, error, count, last, latest) = try row.decode((String, String, String, Int, Date, Int64).self)
            return DurableFailureGroup(
                queue: queue, kind: kind, error: error, count: count, lastFailedAt: last,
                latest: DurableOperationID(rawValue: latest))
        }
    }

    public func workers(window: Duration, now: Date) async throws -> [DurableWorkerSummary] {
        let since = now.addingTimeInterval(-window.seconds)
        let rows = try await rows(
            """
            SELECT w.id, w.queues, w.kinds, w.heartbeat_at,
                (SELECT count(*) FROM durable_operations o WHERE o.worker = w.id AND o.state = 'running')::integer
            FROM durable_workers w WHERE w.heartbeat_at > \(since)
            """, "reading the workers")
        return try rows.map { row in
            let (name, queues, kinds, heartbeat, running) = try row.decode((String, [String], [String], Date, Int).self)
            return DurableWorkerSummary(name: name, queues: queues, kinds: kinds, lastHeartbeat: heartbeat, running: running)
        }.sorted { $0.name < $1.name }
    }

    public func search(_ text: String, limit: Int) async throws -> [DurableOperationSummary] {
        guard limit > 0 else { return [] }
        let id = Int64(text)
        let rows = try await rows(
            """
            SELECT \(unescaped: Self.summaryColumns) FROM durable_operations WHERE id IN (
                SELECT id FROM (SELECT id FROM durable_operations WHERE kind = \(text) ORDER BY id DESC LIMIT \(limit)) by_kind
                UNION SELECT id FROM (SELECT id FROM durable_operations WHERE key = \(text) ORDER BY id DESC LIMIT \(limit)) by_key
                UNION SELECT id FROM durable_operations WHERE id = \(id)::bigint)
            ORDER BY id DESC LIMIT \(limit)
            """, "searching for \"\(text)\"")
        return try rows.map(Self.summary(from:))
    }

    public func retry(_ id: DurableOperationID) async throws -> Bool {
        let rows = try await rows("SELECT durable_retry(\(id.rawValue)::bigint)", "retrying \(id)")
        return try rows.first?.decode(Bool.self) ?? false
    }

    // MARK: Reading summaries

    /// The columns `summary(from:)` decodes, of the table or of `alias`.
    static func summaryColumns(_ alias: String) -> String {
        ["id", "queue", "kind", "state", "key", "attempt", "max_attempts", "finished_at", "error", "cancel_reason"]
            .map { "\(alias).\($0)" }.joined(separator: ", ")
    }

    static let summaryColumns = "id, queue, kind, state, key, attempt, max_attempts, finished_at, error, cancel_reason"

    static func summary(from row: PostgresRow) throws -> DurableOperationSummary {
        let (id, queue, kind, state, key, attempt, maximum, finished, error, reason) = try row.decode(
            (Int64, String, String, String, String?, Int, Int, Date?, String?, String?).self)
        return summary(
            id: id, queue: queue, kind: kind, state: state, key: key, attempt: attempt, maximum: maximum,
            finishedAt: finished, error: error, reason: reason)
    }

    /// The error shown is a failed operation's, or a cancelled one's reason.
    static func summary(
        id: Int64, queue: String, kind: String, state rawState: String, key: String?, attempt: Int, maximum: Int,
        finishedAt: Date?, error: String?, reason: String?
    ) -> DurableOperationSummary {
        let state = DurableState(rawValue: rawState) ?? .waiting
        return DurableOperationSummary(
            id: DurableOperationID(rawValue: id), queue: queue, kind: kind, state: state, key: key, attempt: attempt,
            maximumAttempts: maximum, finishedAt: finishedAt,
            error: state == .failed ? error : state == .cancelled ? reason : nil)
    }

    /// A recursive query named `name` of the queues of the operations that match `condition`
    /// (on one column), one index descent per queue (a loose index scan), ending with a NULL row.
    static func distinctQueues(_ name: String, _ condition: String) -> String {
        """
        \(name)(queue) AS (
            (SELECT queue FROM durable_operations WHERE \(condition) ORDER BY queue LIMIT 1)
            UNION ALL
            SELECT (SELECT o.queue FROM durable_operations o WHERE o.\(condition) AND o.queue > q.queue ORDER BY o.queue LIMIT 1)
            FROM \(name) q WHERE q.queue IS NOT NULL)
        """
    }
}
#endif
