// The dashboard's pages where the queue paged is a small share of a large store: 50 queues,
// one of which ("old") finished its 20,000 operations two hours ago and has held its 2,000
// pending ones since, while 49 busy queues finished 980,000 operations after them and hold
// 98,000 pending ones. Each page of each state of "old" is timed (best of 5) first, after the
// middle and last (25 rows), with a few pages of a busy queue; PostgreSQL's plans are `EXPLAIN
// ANALYZE` (the rows each plan read), SQLite's `EXPLAIN QUERY PLAN`.

import Foundation
import OperationsDurable
import PostgresNIO
import SQLiteNIO

enum DashboardPagingBenchmark {
    static let total = 1_100_000
    // Operation i has id i. 1…20,000: "old", finished in id order over the first 20,000 of the
    // 1,000,000 finish times (every 20th failed, every 20th from 10 cancelled: the store's only
    // cancelled operations); 20,001…22,000: "old", pending (even: waiting, odd: ready, a fifth
    // of those at priority 10); 22,001…1,002,000: queue-01…queue-49 in turn (i % 49 + 1),
    // finished (every 20th failed); 1,002,001…1,100,000: those queues, pending. Finish times
    // spread evenly over the last 2 hours, cut to whole seconds: about 139 operations share each.
    static let busy = "queue-01"

    /// One timed page: its name, queue, state, the id it starts after and the rows expected.
    struct Page {
        let name: String
        let queue: String
        let state: DurableState
        let after: Int64?
        let rows: Int
    }

    static let pages: [Page] = [
        Page(name: "old, ready, first page", queue: "old", state: .ready, after: nil, rows: 51),
        Page(name: "old, ready, after the middle", queue: "old", state: .ready, after: 21_001, rows: 51),
        Page(name: "old, ready, last page", queue: "old", state: .ready, after: 21_949, rows: 25),
        Page(name: "old, waiting, first page", queue: "old", state: .waiting, after: nil, rows: 51),
        Page(name: "old, waiting, after the middle", queue: "old", state: .waiting, after: 21_000, rows: 51),
        Page(name: "old, waiting, last page", queue: "old", state: .waiting, after: 21_950, rows: 25),
        Page(name: "old, succeeded, first page", queue: "old", state: .succeeded, after: nil, rows: 51),
        Page(name: "old, succeeded, after the middle", queue: "old", state: .succeeded, after: 10_001, rows: 51),
        Page(name: "old, succeeded, last page", queue: "old", state: .succeeded, after: 28, rows: 25),
        Page(name: "old, failed, first page", queue: "old", state: .failed, after: nil, rows: 51),
        Page(name: "old, failed, after the middle", queue: "old", state: .failed, after: 10_000, rows: 51),
        Page(name: "old, failed, last page", queue: "old", state: .failed, after: 520, rows: 25),
        Page(name: "old, cancelled, first page", queue: "old", state: .cancelled, after: nil, rows: 51),
        Page(name: "old, cancelled, after the middle", queue: "old", state: .cancelled, after: 10_010, rows: 51),
        Page(name: "old, cancelled, last page", queue: "old", state: .cancelled, after: 510, rows: 25),
        Page(name: "\(busy), waiting, after the middle", queue: busy, state: .waiting, after: 1_051_050, rows: 51),
        Page(name: "\(busy), succeeded, first page", queue: busy, state: .succeeded, after: nil, rows: 51),
        Page(name: "\(busy), succeeded, after the middle", queue: busy, state: .succeeded, after: 512_001, rows: 51),
        Page(name: "\(busy), failed, first page", queue: busy, state: .failed, after: nil, rows: 51),
    ]

    /// Each page's cursor, with its queue and state, as the fill must have made it.
    static let cursors: [(id: Int64, queue: String, state: String)] = [
        (28, "old", "succeeded"), (510, "old", "cancelled"), (520, "old", "failed"), (10_000, "old", "failed"),
        (10_001, "old", "succeeded"), (10_010, "old", "cancelled"), (21_000, "old", "waiting"), (21_001, "old", "ready"),
        (21_949, "old", "ready"), (21_950, "old", "waiting"), (512_001, busy, "succeeded"), (1_051_050, busy, "waiting"),
    ]

    static func run(_ storeKinds: [StoreKind]) async throws {
        print("\nDashboard pages of a small queue: 50 queues; \"old\" finished 20,000 operations 2 h ago (1,000 failed, 1,000 cancelled, the store's only ones) and holds 2,000 pending; 49 busy queues finished 980,000 since and hold 98,000 pending\n")
        var table: [String] = []
        var plans: [String] = []
        for kind in storeKinds {
            let database = try await Database(kind: kind, name: "dashboard_paging")
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
            for page in pages {
                var best = Double.infinity
                var rows = 0
                for _ in 0..<5 {
                    let start = ContinuousClock.now
                    rows = try await store.operations(
                        queue: page.queue, state: page.state, after: page.after.map(DurableOperationID.init(rawValue:)),
                        limit: DashboardBenchmark.pageSize + 1
                    ).count
                    best = min(best, seconds(ContinuousClock.now - start) * 1000)
                }
                guard rows == page.rows else { fatalError("\(kind.rawValue), \(page.name): \(rows) rows, expected \(page.rows)") }
                table.append("| \(kind.rawValue) | \(page.name) | \(rows) | \(format(best, 2)) |")
            }
            plans += try await (kind == .postgres ? postgresPlans(database) : sqlitePlans(database))
            await database.close()
        }
        print("\n| store | page | rows | best of 5, ms |")
        print("|---|---|---:|---:|")
        table.forEach { print($0) }
        print("\nQuery plans of the pages\n")
        plans.forEach { print($0) }
    }

    // MARK: Filling

    static let columns =
        "queue, kind, input, state, priority, key, not_before, pending_dependencies, attempt, max_attempts, error, cancel_reason, created_at, finished_at"

    /// The SELECT that makes operation `i` of the series `source`; `time` makes a time of a
    /// number of seconds since 1970, `whole` cuts a number to whole seconds.
    static func operationRows(source: String, now: Double, time: (String) -> String, whole: (String) -> String) -> String {
        let kinds = DashboardBenchmark.kinds
        let kind = "CASE i % 5 " + kinds.enumerated().map { "WHEN \($0.offset) THEN '\($0.element)'" }.joined(separator: " ") + " END"
        return """
            SELECT queue, \(kind), '{}', state, CASE WHEN state = 'ready' AND i % 10 = 1 THEN 10 ELSE 0 END,
                CASE WHEN i % 10 = 0 THEN 'key-' || i END, \(time("\(now) - 7300")),
                CASE WHEN state = 'waiting' THEN 1 ELSE 0 END, CASE WHEN f IS NULL THEN 0 ELSE 1 END, 1,
                CASE WHEN state = 'failed' THEN 'timeout after 30 s' END,
                CASE WHEN state = 'cancelled' THEN 'cancelled by an operator' END,
                \(time("\(now) - 7300")),
                CASE WHEN f IS NOT NULL THEN \(time(whole("\(now) - 7200.0 * (1000000 - f) / 1000000"))) END
            FROM (
                SELECT i, f, queue,
                    CASE WHEN f IS NULL THEN CASE WHEN i % 2 = 0 THEN 'waiting' ELSE 'ready' END
                        WHEN i <= 20000 AND i % 20 = 10 THEN 'cancelled' WHEN i % 20 = 0 THEN 'failed' ELSE 'succeeded' END AS state
                FROM (
                    SELECT i, CASE WHEN i <= 20000 THEN i WHEN i > 22000 AND i <= 1002000 THEN i - 2000 END AS f,
                        CASE WHEN i <= 22000 THEN 'old' WHEN i % 49 + 1 < 10 THEN 'queue-0' || (i % 49 + 1)
                            ELSE 'queue-' || (i % 49 + 1) END AS queue
                    FROM \(source)) numbered) stated
            """
    }

    /// Fails when an operation a page starts after is not of the queue and state it should be.
    static func check(_ found: [(Int64, String, String)]) {
        let expected = cursors.sorted { $0.id < $1.id }
        guard found.count == expected.count,
            zip(found, expected).allSatisfy({ $0.0 == $1.id && $0.1 == $1.queue && $0.2 == $1.state })
        else { fatalError("unexpected cursors: \(found)") }
    }

    static var cursorList: String { cursors.map { String($0.id) }.joined(separator: ", ") }

    static func fillPostgres(_ database: Database, now: Double) async throws {
        let connection = try await connect(database.name)
        do {
            let rows = operationRows(
                source: "generate_series(1, \(total)) i", now: now, time: { "to_timestamp(\($0))" }, whole: { "floor(\($0))" })
            for statement in ["INSERT INTO durable_operations (\(columns)) " + rows, "VACUUM ANALYZE"] {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            let found = try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT id, queue, state FROM durable_operations WHERE id IN (\(cursorList)) ORDER BY id"),
                logger: logger
            ).collect()
            check(try found.map { try $0.decode((Int64, String, String).self) })
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
                "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < \(total)) "
                    + "INSERT INTO durable_operations (\(columns)) "
                    + operationRows(source: "s", now: now, time: { $0 }, whole: { "CAST(\($0) AS INTEGER)" }))
            _ = try await connection.query("COMMIT")
            _ = try await connection.query("ANALYZE")
            let found = try await connection.query(
                "SELECT id, queue, state FROM durable_operations WHERE id IN (\(cursorList)) ORDER BY id")
            check(found.map {
                (Int64($0.column("id")?.integer ?? 0), $0.column("queue")?.string ?? "", $0.column("state")?.string ?? "")
            })
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }

    // MARK: Plans

    static let summaryColumns = "id, queue, kind, state, key, attempt, max_attempts, finished_at, error, cancel_reason"

    /// The statement of `PostgresOperationStore.operations(queue:state:after:limit:)`.
    static func postgresStatement(_ page: Page, limit: Int) -> PostgresQuery {
        let queue = page.queue
        let columns = summaryColumns
        let start = page.after ?? 0
        let stateLiteral = "'\(page.state.rawValue)'"
        let outer = "o." + columns.replacingOccurrences(of: ", ", with: ", o.")
        switch page.state {
        case .waiting, .running:
            return """
                SELECT \(unescaped: outer) FROM (
                    SELECT id FROM durable_operations
                    WHERE queue = ANY(ARRAY[\(queue)]) AND state = \(unescaped: stateLiteral) AND id > \(start)
                    ORDER BY queue, id LIMIT \(limit)) page
                JOIN durable_operations o ON o.id = page.id
                ORDER BY o.id
                """
        case .ready:
            return """
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
            let cursor = page.after.map {
                "AND (finished_at, id) < (SELECT c.finished_at, c.id FROM durable_operations c WHERE c.id = \($0))"
            }
            return """
                SELECT \(unescaped: outer) FROM (
                    SELECT id FROM durable_operations
                    WHERE queue = ANY(ARRAY[\(queue)]) AND state = \(unescaped: stateLiteral) AND finished_at IS NOT NULL
                        \(unescaped: cursor ?? "")
                    ORDER BY queue DESC, finished_at DESC, id DESC LIMIT \(limit)) page
                JOIN durable_operations o ON o.id = page.id
                ORDER BY o.finished_at DESC, o.id DESC
                """
        }
    }

    static func postgresPlans(_ database: Database) async throws -> [String] {
        try await QueryPlans.postgres(
            database.name, options: "ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF",
            pages.map { ($0.name, postgresStatement($0, limit: DashboardBenchmark.pageSize + 1)) })
    }

    /// The statements of `SQLiteOperationStore.operations(queue:state:after:limit:)` (for a
    /// finished state, the one after reading the cursor's finish time); ready pages as the
    /// bands 10 and 0.
    static func sqliteStatement(_ page: Page, limit: Int, cursorFinishedAt: Double?) -> (String, [SQLiteData]) {
        let columns = summaryColumns
        let start = SQLiteData.integer(SQLiteInt64(page.after ?? 0))
        switch page.state {
        case .waiting, .running:
            return (
                """
                SELECT \(columns) FROM durable_operations
                WHERE queue = ?1 AND state = '\(page.state.rawValue)' AND id > ?2 ORDER BY id LIMIT ?3
                """, [.text(page.queue), start, .integer(SQLiteInt64(limit))]
            )
        case .ready:
            let pages = [10, 0].map { priority in
                """
                SELECT * FROM (SELECT \(columns) FROM durable_operations
                    WHERE queue = ?1 AND state = 'ready' AND priority = \(priority) AND id > ?2 ORDER BY id LIMIT ?3)
                """
            }
            return (
                "SELECT * FROM (\(pages.joined(separator: " UNION ALL "))) ORDER BY id LIMIT ?3",
                [.text(page.queue), start, .integer(SQLiteInt64(limit))]
            )
        case .succeeded, .failed, .cancelled:
            return (
                """
                SELECT \(columns) FROM durable_operations
                WHERE queue = ?1 AND state = '\(page.state.rawValue)' AND finished_at IS NOT NULL AND (finished_at, id) < (?2, ?3)
                ORDER BY finished_at DESC, id DESC LIMIT ?4
                """,
                [
                    .text(page.queue), .float(cursorFinishedAt ?? .infinity), .integer(SQLiteInt64(page.after ?? Int64.max)),
                    .integer(SQLiteInt64(limit)),
                ]
            )
        }
    }

    static func sqlitePlans(_ database: Database) async throws -> [String] {
        try await QueryPlans.sqlite(path: database.path) { connection in
            var statements: [(name: String, sql: String, binds: [SQLiteData])] = []
            for page in pages {
                var cursorFinishedAt: Double?
                if let after = page.after, page.state.isFinished {
                    cursorFinishedAt = try await connection.query(
                        "SELECT finished_at FROM durable_operations WHERE id = ?", [.integer(SQLiteInt64(after))]
                    ).first?.column("finished_at")?.double
                }
                let (sql, binds) = sqliteStatement(page, limit: DashboardBenchmark.pageSize + 1, cursorFinishedAt: cursorFinishedAt)
                statements.append((page.name, sql, binds))
            }
            return statements
        }
    }
}
