// The dashboard's reads on a large store: one queue with 1,000,000 finished operations and
// 100,000 pending ones, filled by bulk SQL; each read of `DurableStoreInspection` timed as
// the dashboard makes it (best of 5), the plans of the main queries (the SQL copied from the
// stores), and the overview's shared reads under ten viewers polling `/api/overview`; then
// the pages of a small queue among many (`DashboardPaging.swift`).

import Foundation
import OperationsDashboard
import OperationsDurable
import OperationsPostgres
import OperationsSQLite
import PostgresNIO
import SQLiteNIO

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct ViewerFailure: Error, CustomStringConvertible {
    let description: String
}

enum DashboardBenchmark {
    static let queue = "dashboard"
    static let finished = 1_000_000
    static let pending = 100_000
    static let kinds = ["email.send", "image.resize", "report.build", "invoice.charge", "cache.warm"]
    static let errors = ["timeout after 30 s", "connection refused", "invalid input: missing field", "rate limited by upstream"]
    // Operation i has id i: finished ones are 1…1,000,000 (every 20th failed, finished in
    // id order over the last 2 hours), pending ones after (even: waiting on the ready one
    // before it; odd: ready, every fifth of those at priority 10). Every 10th has a key.
    static let middleFailed = DurableOperationID(rawValue: 500_000)
    static let middleSucceeded = DurableOperationID(rawValue: 500_001)
    static let middleWaiting = DurableOperationID(rawValue: Int64(finished + pending / 2))
    static let middleReady = DurableOperationID(rawValue: Int64(finished + pending / 2 + 1))
    static let pageSize = 50

    static func run(_ storeKinds: [StoreKind]) async throws {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        print("Dashboard reads: one queue of \(finished) finished operations (5 % failed, 4 errors, over 2 h) and \(pending) pending (half waiting, half ready); \(cores) cores\n")
        var table: [String] = []
        var plans: [String] = []
        var viewers: [String] = []
        for kind in storeKinds {
            let database = try await Database(kind: kind, name: "dashboard_reads")
            await database.close()
            let started = ContinuousClock.now
            let now = Date().timeIntervalSince1970
            switch kind {
            case .postgres: try await fillPostgres(database, now: now)
            case .sqlite: try await fillSQLite(database, now: now)
            }
            print("\(kind.rawValue): filled and analyzed in \(format(seconds(ContinuousClock.now - started), 1)) s")
            guard let store = database.open(connections: 4) as? any DurableStoreInspection else {
                fatalError("\(kind.rawValue) store does not implement DurableStoreInspection")
            }
            table += try await timings(kind, store)
            plans += try await queryPlans(kind, database)
            viewers.append(try await pollingViewers(kind, store))
            await database.close()
        }
        print("\n| store | call | rows | best of 5, ms |")
        print("|---|---|---:|---:|")
        table.forEach { print($0) }
        print("\nTen viewers polling GET /api/overview for 6 s (refresh interval 2 s)\n")
        print("| store | requests served | overview reads made | request p50 ms | request max ms |")
        print("|---|---:|---:|---:|---:|")
        viewers.forEach { print($0) }
        print("\nQuery plans\n")
        plans.forEach { print($0) }
        try await DashboardPagingBenchmark.run(storeKinds)
    }

    // MARK: Filling

    /// The SELECT that makes operation `i` of the series `source`, with times as `time` of a
    /// number of seconds since 1970.
    static func operationRows(source: String, now: Double, time: (String) -> String) -> String {
        let kind = "CASE i % 5 " + kinds.enumerated().map { "WHEN \($0.offset) THEN '\($0.element)'" }.joined(separator: " ") + " END"
        let error = "CASE (i / 20) % 4 " + errors.enumerated().map { "WHEN \($0.offset) THEN '\($0.element)'" }.joined(separator: " ") + " END"
        let finishedAt = "\(now) - 7200.0 * (\(finished) - i) / \(finished)"
        return """
            SELECT 'dashboard', \(kind), '{}',
                CASE WHEN i <= \(finished) THEN CASE WHEN i % 20 = 0 THEN 'failed' ELSE 'succeeded' END
                    WHEN i % 2 = 0 THEN 'waiting' ELSE 'ready' END,
                CASE WHEN i > \(finished) AND i % 10 = 1 THEN 10 ELSE 0 END,
                CASE WHEN i % 10 = 0 THEN 'key-' || i END,
                \(time("CASE WHEN i <= \(finished) THEN \(finishedAt) - 1 ELSE \(now) - 1 END")),
                CASE WHEN i > \(finished) AND i % 2 = 0 THEN 1 ELSE 0 END,
                CASE WHEN i <= \(finished) THEN 1 ELSE 0 END, 1,
                CASE WHEN i <= \(finished) AND i % 20 = 0 THEN \(error) END,
                \(time("CASE WHEN i <= \(finished) THEN \(finishedAt) - 1 ELSE \(now) - 1 END")),
                \(time("CASE WHEN i <= \(finished) THEN \(finishedAt) END"))
            FROM \(source)
            """
    }

    static let operationColumns =
        "queue, kind, input, state, priority, key, not_before, pending_dependencies, attempt, max_attempts, error, created_at, finished_at"

    static func fillPostgres(_ database: Database, now: Double) async throws {
        let connection = try await connect(database.name)
        do {
            let statements = [
                "INSERT INTO durable_operations (\(operationColumns)) "
                    + operationRows(source: "generate_series(1, \(finished + pending)) i", now: now) { "to_timestamp(\($0))" },
                "INSERT INTO durable_edges (dependency, dependent) SELECT i - 1, i FROM generate_series(\(finished + 2), \(finished + pending), 2) i",
                """
                INSERT INTO durable_attempts (operation, number, worker, started_at, ended_at, error)
                SELECT id, 1, 'worker-' || (id % 3), created_at, finished_at, error FROM durable_operations WHERE finished_at IS NOT NULL
                """,
                """
                INSERT INTO durable_workers (id, queues, kinds, heartbeat_at)
                SELECT 'worker-' || i, '{dashboard}', '{}', now() FROM generate_series(0, 2) i
                """,
                "VACUUM ANALYZE",
            ]
            for statement in statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            // The ids the series gave: the calls below name operations by them.
            let rows = try await connection.query(
                "SELECT id, state FROM durable_operations WHERE id IN (500000, 500001, 1050000, 1050001) ORDER BY id", logger: logger
            ).collect()
            let states = try rows.map { try $0.decode((Int64, String).self).1 }
            guard states == ["failed", "succeeded", "waiting", "ready"] else { fatalError("unexpected ids: \(states)") }
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }

    static func fillSQLite(_ database: Database, now: Double) async throws {
        let connection = try await SQLiteConnection.open(storage: .file(path: database.path))
        do {
            _ = try await connection.query("PRAGMA busy_timeout = 10000")
            _ = try await connection.query("BEGIN IMMEDIATE")
            _ = try await connection.query(
                "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < \(finished + pending)) "
                    + "INSERT INTO durable_operations (id, \(operationColumns)) "
                    + operationRows(source: "s", now: now) { $0 }.replacingOccurrences(of: "SELECT 'dashboard'", with: "SELECT i, 'dashboard'"))
            _ = try await connection.query(
                "WITH RECURSIVE s(i) AS (SELECT \(finished + 2) UNION ALL SELECT i + 2 FROM s WHERE i + 2 <= \(finished + pending)) "
                    + "INSERT INTO durable_edges (dependency, dependent) SELECT i - 1, i FROM s")
            _ = try await connection.query(
                """
                INSERT INTO durable_attempts (operation, number, worker, started_at, ended_at, error)
                SELECT id, 1, 'worker-' || (id % 3), created_at, finished_at, error FROM durable_operations WHERE finished_at IS NOT NULL
                """)
            _ = try await connection.query(
                """
                INSERT INTO durable_workers (id, queues, kinds, heartbeat_at)
                VALUES ('worker-0', '["dashboard"]', '[]', \(now)), ('worker-1', '["dashboard"]', '[]', \(now)),
                    ('worker-2', '["dashboard"]', '[]', \(now))
                """)
            _ = try await connection.query("COMMIT")
            _ = try await connection.query("ANALYZE")
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }

    // MARK: Timing the calls

    static func timings(_ kind: StoreKind, _ store: any DurableStoreInspection) async throws -> [String] {
        let hour = Duration.seconds(3600)
        let limit = pageSize + 1  // The dashboard asks for one more, to know whether a next page exists.
        let calls: [(String, () async throws -> Int)] = [
            ("queueSummaries (1 h)", { try await store.queueSummaries(window: hour, now: Date()).count }),
            ("finishedPerMinute (30)", { try await store.finishedPerMinute(queue: queue, minutes: 30, now: Date()).count }),
            ("workers (1 h)", { try await store.workers(window: hour, now: Date()).count }),
            ("failureGroups (every queue, 1 h)", { try await store.failureGroups(queue: nil, window: hour, now: Date(), limit: 20).count }),
            ("overview (the four reads above, in turn)", {
                let now = Date()
                let summaries = try await store.queueSummaries(window: hour, now: now)
                for summary in summaries { _ = try await store.finishedPerMinute(queue: summary.name, minutes: 30, now: now) }
                _ = try await store.workers(window: hour, now: now)
                return try await store.failureGroups(queue: nil, window: hour, now: now, limit: 20).count + summaries.count
            }),
            ("failureGroups (queue, 1 h)", { try await store.failureGroups(queue: queue, window: hour, now: Date(), limit: 100).count }),
            ("operations ready, first page", { try await store.operations(queue: queue, state: .ready, after: nil, limit: limit).count }),
            ("operations ready, after the middle", {
                try await store.operations(queue: queue, state: .ready, after: middleReady, limit: limit).count
            }),
            ("operations waiting, first page", { try await store.operations(queue: queue, state: .waiting, after: nil, limit: limit).count }),
            ("operations waiting, after the middle", {
                try await store.operations(queue: queue, state: .waiting, after: middleWaiting, limit: limit).count
            }),
            ("operations succeeded, first page", {
                try await store.operations(queue: queue, state: .succeeded, after: nil, limit: limit).count
            }),
            ("operations succeeded, after the middle", {
                try await store.operations(queue: queue, state: .succeeded, after: middleSucceeded, limit: limit).count
            }),
            ("operations failed, first page", { try await store.operations(queue: queue, state: .failed, after: nil, limit: limit).count }),
            ("operations failed, after the middle", {
                try await store.operations(queue: queue, state: .failed, after: middleFailed, limit: limit).count
            }),
            ("details (a failed one, 100 edges)", { try await store.details(of: middleFailed, edgeLimit: 100) == nil ? 0 : 1 }),
            ("details (a waiting one, 100 edges)", { try await store.details(of: middleWaiting, edgeLimit: 100) == nil ? 0 : 1 }),
            ("search by id", { try await store.search("500000", limit: 50).count }),
            ("search by kind", { try await store.search("report.build", limit: 50).count }),
            ("search by key", { try await store.search("key-500000", limit: 50).count }),
        ]
        var lines: [String] = []
        for (name, call) in calls {
            var best = Double.infinity
            var rows = 0
            for _ in 0..<5 {
                let start = ContinuousClock.now
                rows = try await call()
                best = min(best, seconds(ContinuousClock.now - start) * 1000)
            }
            lines.append("| \(kind.rawValue) | \(name) | \(rows) | \(format(best, 2)) |")
        }
        return lines
    }

    // MARK: Query plans

    static func queryPlans(_ kind: StoreKind, _ database: Database) async throws -> [String] {
        switch kind {
        case .postgres: try await postgresPlans(database)
        case .sqlite: try await sqlitePlans(database)
        }
    }

    /// The statements of `PostgresOperationStore+Inspection.swift`, with the values the
    /// timed calls pass.
    static func postgresPlans(_ database: Database) async throws -> [String] {
        let now = Date()
        let since = now.addingTimeInterval(-3600)
        let since30 = now.addingTimeInterval(-1800)
        let names = [queue]
        let columns = "id, queue, kind, state, key, attempt, max_attempts, finished_at, error, cancel_reason"
        let outer = "o." + columns.replacingOccurrences(of: ", ", with: ", o.")
        let limit = pageSize + 1
        let start = Int64(0)
        let text = "report.build"
        let id: Int64? = nil
        let statements: [(String, PostgresQuery)] = [
            ("queueSummaries: the counts", """
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
                """),
            ("finishedPerMinute", """
                SELECT floor(extract(epoch FROM \(now)::timestamptz - f.finished_at) / 60)::integer AS age, count(*)::integer
                FROM (
                    SELECT finished_at FROM durable_operations WHERE queue = \(queue) AND state = 'succeeded'
                        AND finished_at > \(since30) AND finished_at <= \(now)
                    UNION ALL
                    SELECT finished_at FROM durable_operations WHERE queue = \(queue) AND state = 'failed'
                        AND finished_at > \(since30) AND finished_at <= \(now)
                    UNION ALL
                    SELECT finished_at FROM durable_operations WHERE queue = \(queue) AND state = 'cancelled'
                        AND finished_at > \(since30) AND finished_at <= \(now)) f
                GROUP BY age
                """),
            ("failureGroups (every queue)", """
                SELECT queue, kind, coalesce(error, '') AS error, count(*)::integer AS failures, max(finished_at) AS last_failed,
                    (array_agg(id ORDER BY finished_at DESC, id DESC))[1]
                FROM durable_operations
                WHERE state = 'failed' AND finished_at > \(since) AND finished_at <= \(now)
                GROUP BY queue, kind, coalesce(error, '') ORDER BY failures DESC, last_failed DESC, queue, kind, error LIMIT \(20)
                """),
            ("operations ready, first page", """
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
                """),
            ("operations waiting, after the middle", """
                SELECT \(unescaped: outer) FROM (
                    SELECT id FROM durable_operations
                    WHERE queue = ANY(ARRAY[\(queue)]) AND state = 'waiting' AND id > \(middleWaiting.rawValue)
                    ORDER BY queue, id LIMIT \(limit)) page
                JOIN durable_operations o ON o.id = page.id
                ORDER BY o.id
                """),
            ("operations succeeded, after the middle", """
                SELECT \(unescaped: outer) FROM (
                    SELECT id FROM durable_operations
                    WHERE queue = ANY(ARRAY[\(queue)]) AND state = 'succeeded' AND finished_at IS NOT NULL
                        AND (finished_at, id) < (SELECT c.finished_at, c.id FROM durable_operations c WHERE c.id = \(middleSucceeded.rawValue))
                    ORDER BY queue DESC, finished_at DESC, id DESC LIMIT \(limit)) page
                JOIN durable_operations o ON o.id = page.id
                ORDER BY o.finished_at DESC, o.id DESC
                """),
            ("search (by kind)", """
                SELECT \(unescaped: columns) FROM durable_operations WHERE id IN (
                    SELECT id FROM (SELECT id FROM durable_operations WHERE kind = \(text) ORDER BY id DESC LIMIT \(50)) by_kind
                    UNION SELECT id FROM (SELECT id FROM durable_operations WHERE key = \(text) ORDER BY id DESC LIMIT \(50)) by_key
                    UNION SELECT id FROM durable_operations WHERE id = \(id)::bigint)
                ORDER BY id DESC LIMIT \(50)
                """),
        ]
        return try await QueryPlans.postgres(database.name, options: "COSTS OFF", statements)
    }

    /// The statements of `SQLiteOperationStore+Inspection.swift`, with the values the timed
    /// calls pass.
    static func sqlitePlans(_ database: Database) async throws -> [String] {
        let now = Date().timeIntervalSince1970
        let columns = "id, queue, kind, state, key, attempt, max_attempts, finished_at, error, cancel_reason"
        let limit = pageSize + 1
        func distinctQueues(_ name: String, _ condition: String) -> String {
            """
            \(name)(queue) AS (
                SELECT (SELECT queue FROM durable_operations WHERE \(condition) ORDER BY queue LIMIT 1)
                UNION ALL
                SELECT (SELECT o.queue FROM durable_operations o WHERE o.\(condition) AND o.queue > q.queue ORDER BY o.queue LIMIT 1)
                FROM \(name) q WHERE q.queue IS NOT NULL)
            """
        }
        let statements: [(String, String, [SQLiteData])] = [
            ("queueSummaries", """
                WITH RECURSIVE
                    \(distinctQueues("waiting_queues", "state = 'waiting'")),
                    \(distinctQueues("ready_queues", "state = 'ready'")),
                    \(distinctQueues("running_queues", "state = 'running'")),
                    \(distinctQueues("finished_queues", "finished_at IS NOT NULL")),
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
                """, [.float(now - 3600), .float(now)]),
            ("finishedPerMinute", """
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
                """, [.text(queue), .float(now - 1800), .float(now)]),
            ("failureGroups (every queue)", """
                WITH failures AS (
                    SELECT queue, kind, coalesce(error, '') AS error, finished_at, id,
                        count(*) OVER (PARTITION BY queue, kind, coalesce(error, '')) AS n,
                        row_number() OVER (PARTITION BY queue, kind, coalesce(error, '') ORDER BY finished_at DESC, id DESC) AS position
                    FROM durable_operations
                    WHERE state = 'failed' AND finished_at > ?1 AND finished_at <= ?2)
                SELECT queue, kind, error, n, finished_at, id FROM failures WHERE position = 1
                ORDER BY n DESC, finished_at DESC, queue, kind, error LIMIT ?3
                """, [.float(now - 3600), .float(now), .integer(20)]),
            ("operations ready, first page (bands 10 and 0)", """
                SELECT * FROM (\([10, 0].map { priority in
                    """
                    SELECT * FROM (SELECT \(columns) FROM durable_operations
                        WHERE queue = ?1 AND state = 'ready' AND priority = \(priority) AND id > ?2 ORDER BY id LIMIT ?3)
                    """
                }.joined(separator: " UNION ALL "))) ORDER BY id LIMIT ?3
                """, [.text(queue), .integer(0), .integer(limit)]),
            ("operations waiting, after the middle", """
                SELECT \(columns) FROM durable_operations
                WHERE queue = ?1 AND state = 'waiting' AND id > ?2 ORDER BY id LIMIT ?3
                """, [.text(queue), .integer(SQLiteInt64(middleWaiting.rawValue)), .integer(limit)]),
            ("operations succeeded, after the middle", """
                SELECT \(columns) FROM durable_operations
                WHERE queue = ?1 AND state = 'succeeded' AND finished_at IS NOT NULL AND (finished_at, id) < (?2, ?3)
                ORDER BY finished_at DESC, id DESC LIMIT ?4
                """, [.text(queue), .float(now - 3600), .integer(SQLiteInt64(middleSucceeded.rawValue)), .integer(limit)]),
            ("search (by kind)", """
                SELECT \(columns) FROM durable_operations WHERE id IN (
                    SELECT id FROM (SELECT id FROM durable_operations WHERE kind = ?1 ORDER BY id DESC LIMIT ?2)
                    UNION SELECT id FROM (SELECT id FROM durable_operations WHERE key = ?1 ORDER BY id DESC LIMIT ?2)
                    UNION SELECT ?3)
                ORDER BY id DESC LIMIT ?2
                """, [.text("report.build"), .integer(50), .null]),
        ]
        return try await QueryPlans.sqlite(path: database.path) { _ in statements }
    }

    // MARK: Viewers

    /// Ten tasks request the overview in a loop for 6 s: the requests served against the
    /// sets of reads the dashboard made.
    static func pollingViewers(_ kind: StoreKind, _ store: any DurableStoreInspection) async throws -> String {
        let dashboard = OperationsDashboard(
            store: store, storeName: kind.rawValue, configuration: .init(port: 0, refreshInterval: .seconds(2)))
        let url = try await dashboard.start().appendingPathComponent("api/overview")
        let before = await dashboard.refreshes
        let end = ContinuousClock.now + .seconds(6)
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for _ in 0..<10 {
                group.addTask {
                    var latencies: [Double] = []
                    while ContinuousClock.now < end {
                        let start = ContinuousClock.now
                        let (data, response) = try await URLSession.shared.data(from: url)
                        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
                            throw ViewerFailure(description: "GET \(url): \(response)")
                        }
                        let overview = try JSONSerialization.jsonObject(with: data) as? [String: Any]
                        if let error = (overview?["store"] as? [String: Any])?["error"] as? String {
                            throw ViewerFailure(description: "the overview reports an error: \(error)")
                        }
                        latencies.append(seconds(ContinuousClock.now - start) * 1000)
                    }
                    return latencies
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }.sorted()
        }
        let reads = await dashboard.refreshes - before
        await dashboard.stop()
        return "| \(kind.rawValue) | \(latencies.count) | \(reads) | \(format(percentile(latencies, 0.5), 1)) | \(format(latencies.last, 1)) |"
    }
}
