// The PostgreSQL store of durable operations, over postgres-nio's PostgresClient.
#if PostgreSQL

import Foundation
import Logging
@_spi(Engine) import Operations
import OperationsDurable
import PostgresNIO

/// Stores durable operations in PostgreSQL: every queue operation is one round trip to a
/// function the schema installs (see ``migrate()``), and changes are told with NOTIFY.
public final class PostgresOperationStore: DurableOperationStore {
    public let configuration: Configuration
    /// The pool every query goes through.
    public let client: PostgresClient
    let logger = Logger(label: "operations.durable.postgres")
    let clientTask: Task<Void, Never>
    let listener: PostgresNotificationListener
    public let finishWatch = DurableFinishWatch()
    private let statements = Locked(0)

    /// How many statements (round trips) the store has sent, for measuring its cost.
    public var statementsSent: Int { statements.withLock { $0 } }

    /// A store with a client of its own, which it runs until ``shutdown()``.
    public init(configuration: Configuration) {
        self.configuration = configuration
        let client = PostgresClient(configuration: configuration.clientConfiguration)
        self.client = client
        clientTask = Task { await client.run() }
        listener = PostgresNotificationListener(configuration: configuration, logger: logger)
    }

    /// Closes the store's connections; its methods fail afterwards.
    public func shutdown() async {
        listener.stop()
        clientTask.cancel()
        await clientTask.value
    }

    // MARK: Running queries

    /// Runs a query and collects its rows, turning errors into ``DurableError``s that say what failed.
    @discardableResult
    func rows(_ query: PostgresQuery, _ what: @autoclosure () -> String) async throws -> [PostgresRow] {
        statements.withLock { $0 += 1 }
        do {
            return try await client.query(query, logger: logger).collect()
        } catch {
            throw describe(error, what())
        }
    }

    func describe(_ error: any Error, _ what: String) -> any Error {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                let code = error.serverInfo?[.sqlState] == "P0001" ? DurableError.Code.invalidArgument : .databaseError
                return DurableError(code, code == .invalidArgument ? message : "\(what): PostgreSQL at \(configuration.address): \(message)")
            }
            return DurableError(.databaseUnreachable, "\(what): PostgreSQL at \(configuration.address): \(error.code)")
        }
        return error
    }

    /// Throws a `DurableError` naming host and port when no connection can be made.
    public func checkConnection() async throws {
        do {
            let connection = try await PostgresConnection.connect(
                configuration: try configuration.connectionConfiguration(), id: 0, logger: logger)
            try await connection.close()
        } catch {
            var detail = "\(error)"
            if let error = error as? PSQLError {
                detail = error.serverInfo?[.message] ?? "\(error.code)"
                if let underlying = error.underlying { detail += " (\(underlying))" }
            }
            throw DurableError(
                .databaseUnreachable, "cannot reach PostgreSQL at \(configuration.address): \(detail)")
        }
    }

    // MARK: Schema

    /// Creates the schema or upgrades it to this library's version, in one transaction under
    /// an advisory lock (so several workers may call it at once). Throws when the database's
    /// schema is newer than this library.
    public func migrate() async throws {
        try await checkConnection()
        do {
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(PostgresSchema.migrationLockKey))", logger: logger)
                try await connection.query(PostgresQuery(unsafeSQL: PostgresSchema.versionTable), logger: logger)
                var version = 0
                for try await found in try await connection.query("SELECT version FROM durable_schema", logger: logger)
                    .decode(Int.self)
                {
                    version = found
                }
                if version > PostgresSchema.currentVersion {
                    throw DurableError(
                        .schemaTooNew,
                        "the durable schema in PostgreSQL at \(configuration.address) is version \(version); this library knows versions up to \(PostgresSchema.currentVersion): upgrade the library")
                }
                for next in version..<PostgresSchema.currentVersion {
                    for statement in PostgresSchema.migrations[next] {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                }
                let current = PostgresSchema.currentVersion
                try await connection.query(
                    "INSERT INTO durable_schema (version) VALUES (\(current)) ON CONFLICT (singleton) DO UPDATE SET version = \(current)",
                    logger: logger)
            }
        } catch let error as PostgresTransactionError {
            if let inner = error.closureError as? DurableError { throw inner }
            throw describe(error.closureError ?? error.commitError ?? error.beginError ?? error, "migrating the durable schema")
        }
    }

    // MARK: Reading

    /// The columns `record(from:)` decodes.
    static let recordColumns = """
        id, queue, kind, state, attempt, max_attempts, output, error, cancel_reason, progress_completed,
            progress_total, not_before, pending_dependencies
        """

    static func record(from row: PostgresRow) throws -> DurableRecord {
        let (rawID, queue, kind, state, attempt, maximum, output, error, reason, completed, total, notBefore, pending) =
            try row.decode((Int64, String, String, String, Int, Int, String?, String?, String?, Int64, Int64, Date, Int).self)
        return DurableRecord(
            id: DurableOperationID(rawValue: rawID), queue: queue, kind: kind, state: DurableState(rawValue: state) ?? .waiting,
            attempt: attempt, maximumAttempts: maximum, output: output, error: error, cancelReason: reason,
            progressCompleted: completed, progressTotal: total, notBefore: notBefore, unfinishedDependencies: pending,
            attempts: [])
    }

    public func records(of ids: [DurableOperationID]) async throws -> [DurableRecord] {
        guard !ids.isEmpty else { return [] }
        return try await rows(
            PostgresQuery(unsafeSQL: "SELECT \(Self.recordColumns) FROM durable_operations WHERE id = ANY($1::bigint[])", binds: {
                var binds = PostgresBindings()
                binds.append(ids.map(\.rawValue))
                return binds
            }()), "reading \(ids.count) operations"
        ).map(Self.record(from:))
    }

    public func record(of id: DurableOperationID, includingAttempts: Bool) async throws -> DurableRecord? {
        let found = try await rows(
            PostgresQuery(unsafeSQL: "SELECT \(Self.recordColumns) FROM durable_operations WHERE id = $1", binds: {
                var binds = PostgresBindings()
                binds.append(id.rawValue)
                return binds
            }()), "reading \(id)")
        guard let row = found.first else { return nil }
        var record = try Self.record(from: row)
        if includingAttempts {
            let attemptRows = try await rows(
                "SELECT number, worker, started_at, ended_at, error FROM durable_attempts WHERE operation = \(id.rawValue) ORDER BY number",
                "reading the attempts of \(id)")
            record.attempts = try attemptRows.map { row in
                let (number, worker, start, end, error) = try row.decode((Int, String, Date, Date?, String?).self)
                return DurableAttempt(number: number, worker: worker, start: start, end: end, error: error)
            }
        }
        return record
    }

    public func waitFacts(of id: DurableOperationID) async throws -> DurableWaitFacts? {
        guard let record = try await record(of: id, includingAttempts: false) else { return nil }
        let rows = try await rows(
            """
            SELECT coalesce((SELECT suspended FROM durable_queues WHERE name = \(record.queue)), false),
                (SELECT max_concurrent FROM durable_queues WHERE name = \(record.queue)),
                (SELECT count(*)::integer FROM durable_operations WHERE queue = \(record.queue) AND state = 'running'),
                EXISTS (SELECT 1 FROM durable_workers WHERE \(record.queue) = ANY(queues) AND \(record.kind) = ANY(kinds)
                    AND heartbeat_at > clock_timestamp() - interval '30 seconds'),
                clock_timestamp()
            """, "reading why \(id) waits")
        let (suspended, limit, running, known, now) = try rows[0].decode((Bool, Int?, Int, Bool, Date).self)
        return DurableWaitFacts(
            record: record, queueSuspended: suspended, queueLimit: limit, queueRunning: running,
            liveWorkerKnowsKind: known, now: now)
    }

    public func states(of ids: [DurableOperationID]) async throws -> [DurableOperationID: DurableState] {
        guard !ids.isEmpty else { return [:] }
        let found = try await rows(
            "SELECT id, state FROM durable_operations WHERE id = ANY(\(ids.map(\.rawValue))::bigint[])",
            "reading the states of \(ids.count) operations")
        var states: [DurableOperationID: DurableState] = [:]
        for row in found {
            let (id, state) = try row.decode((Int64, String).self)
            states[DurableOperationID(rawValue: id)] = DurableState(rawValue: state) ?? .waiting
        }
        return states
    }

    public func counts(queue: String) async throws -> DurableOperationCounts {
        let found = try await rows(
            "SELECT state, count(*)::bigint FROM durable_operations WHERE queue = \(queue) GROUP BY state",
            "counting the operations of queue \"\(queue)\"")
        var counts = DurableOperationCounts()
        for row in found {
            let (state, count) = try row.decode((String, Int64).self)
            if let state = DurableState(rawValue: state) { counts[state] = Int(count) }
        }
        return counts
    }

    public func unfinishedCount(queue: String) async throws -> Int {
        // Each count is answered by the partial index of its state.
        let found = try await rows(
            """
            SELECT (SELECT count(*) FROM durable_operations WHERE queue = \(queue) AND state = 'waiting')
                + (SELECT count(*) FROM durable_operations WHERE queue = \(queue) AND state = 'ready')
                + (SELECT count(*) FROM durable_operations WHERE queue = \(queue) AND state = 'running')
            """, "counting the unfinished operations of queue \"\(queue)\"")
        return Int(try found[0].decode(Int64.self))
    }

    // MARK: Changing

    public func cancel(_ id: DurableOperationID, reason: String) async throws {
        let rows = try await rows("SELECT durable_cancel(\(id.rawValue)::bigint, \(Self.storable(reason))::text)", "cancelling \(id)")
        guard try rows.first?.decode(Bool.self) == true else {
            throw DurableError(.notFound, "cancelling \(id): it is not stored (never added, or pruned)")
        }
    }

    public func cancelAll(queue: String, reason: String) async throws {
        try await rows(
            """
            SELECT durable_cancel(id, \(Self.storable(reason))::text) FROM (SELECT id FROM durable_operations
                WHERE queue = \(queue) AND state IN ('waiting', 'ready', 'running') ORDER BY id) unfinished
            """, "cancelling the operations of queue \"\(queue)\"")
    }

    public func reportProgress(of id: DurableOperationID, attempt: Int, completed: Int64, total: Int64) async throws {
        try await rows(
            """
            UPDATE durable_operations SET progress_completed = \(completed), progress_total = \(total)
            WHERE id = \(id.rawValue) AND attempt = \(attempt) AND state = 'running'
            """, "reporting the progress of \(id)")
    }

    public func setMaxConcurrentOperationCount(_ count: Int?, queue: String) async throws {
        try await rows(
            """
            WITH changed AS (INSERT INTO durable_queues (name, max_concurrent) VALUES (\(queue), \(count)::integer)
                ON CONFLICT (name) DO UPDATE SET max_concurrent = excluded.max_concurrent RETURNING name)
            SELECT pg_notify('operations_durable', 'w:' || name) FROM changed
            """, "setting the limit of queue \"\(queue)\"")
    }

    public func maxConcurrentOperationCount(queue: String) async throws -> Int? {
        let rows = try await rows(
            "SELECT max_concurrent FROM durable_queues WHERE name = \(queue)", "reading the limit of queue \"\(queue)\"")
        return try rows.first?.decode(Int?.self) ?? nil
    }

    public func setSuspended(_ suspended: Bool, queue: String) async throws {
        try await rows(
            """
            WITH changed AS (INSERT INTO durable_queues (name, suspended) VALUES (\(queue), \(suspended))
                ON CONFLICT (name) DO UPDATE SET suspended = excluded.suspended RETURNING name)
            SELECT pg_notify('operations_durable', 'w:' || name) FROM changed
            """, "suspending or resuming queue \"\(queue)\"")
    }

    public func isSuspended(queue: String) async throws -> Bool {
        let rows = try await rows(
            "SELECT suspended FROM durable_queues WHERE name = \(queue)", "reading whether queue \"\(queue)\" is suspended")
        return try rows.first?.decode(Bool.self) ?? false
    }

    public func prune(finishedBefore date: Date, limit: Int) async throws -> Int {
        let rows = try await rows(
            """
            WITH doomed AS (SELECT id FROM durable_operations WHERE finished_at < \(date)
                    ORDER BY finished_at LIMIT \(limit) FOR UPDATE SKIP LOCKED),
                attempts AS (DELETE FROM durable_attempts WHERE operation IN (SELECT id FROM doomed)),
                edges AS (DELETE FROM durable_edges WHERE dependency IN (SELECT id FROM doomed)
                    OR dependent IN (SELECT id FROM doomed))
            DELETE FROM durable_operations WHERE id IN (SELECT id FROM doomed) RETURNING id
            """, "pruning finished operations")
        return rows.count
    }

    public func notifications() -> AsyncStream<DurableStoreNotification> {
        listener.subscribe()
    }
}

extension Duration {
    /// The duration in seconds, for SQL intervals.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
#endif
