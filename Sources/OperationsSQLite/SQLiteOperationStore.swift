// The SQLite store of durable operations: one file, shared by the processes of one machine.
#if SQLite

import Foundation
import OperationsDurable
import SQLiteNIO

/// Stores durable operations in a SQLite file, over sqlite-nio (which bundles SQLite: nothing
/// to install).
///
/// Several processes on one machine may share the file: it is in WAL mode, every change is
/// one `BEGIN IMMEDIATE` transaction (the file's single writer lock, waited for up to
/// ``Configuration/busyTimeout``), so claims are neither lost nor doubled. Changes reach other
/// processes through an events table that each store polls every
/// ``Configuration/pollInterval`` (there is no NOTIFY without a server).
///
/// - Note: `":memory:"` gives a private database for tests, seen by this store only.
public final class SQLiteOperationStore: DurableOperationStore {
    /// Timings of the store.
    public struct Configuration: Sendable {
        /// How long a transaction waits for another process's write lock before it fails.
        public var busyTimeout: Duration = .seconds(10)
        /// How often the store looks for changes made by other processes (cancels, finishes,
        /// new work); changes of this store are told at once.
        public var pollInterval: Duration = .milliseconds(20)
        /// `PRAGMA synchronous = FULL` (a commit survives power loss) or `NORMAL` (survives a
        /// crash of the process; faster).
        public var synchronousFull = true

        public init() {}
    }

    /// The file (or `":memory:"`).
    public let path: String
    public let configuration: Configuration
    let access: SQLiteAccess
    let poller: SQLiteNotificationPoller
    public let finishWatch = DurableFinishWatch()

    /// A store in the file at `path`, created by ``migrate()`` if missing.
    public init(path: String, configuration: Configuration = Configuration()) {
        self.path = path
        self.configuration = configuration
        access = SQLiteAccess(path: path, configuration: configuration)
        poller = SQLiteNotificationPoller(access: access, interval: configuration.pollInterval)
    }

    /// Stops polling and closes the file; the store's methods fail afterwards.
    public func shutdown() async {
        poller.stop()
        await access.close()
    }

    /// Opens the file and reads its header: throws a `DurableError` naming the path when it
    /// cannot be opened or is not a database.
    public func checkConnection() async throws {
        try await access.withConnection("opening the store") { _ in }
    }

    // MARK: Schema

    /// Creates the schema or upgrades it to this library's version, in one transaction (so
    /// several processes may call it at once). Throws when the file is a database of another
    /// application, or its schema is newer than this library.
    public func migrate() async throws {
        try await access.write("migrating the durable schema") { transaction in
            let applicationID = try await transaction.rows("PRAGMA application_id").first?.int("application_id") ?? 0
            let tables = try await transaction.rows(
                "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").first?.int("n") ?? 0
            if applicationID != Int(SQLiteSchema.applicationID) && (applicationID != 0 || tables > 0) {
                let exists = try await transaction.rows(
                    "SELECT count(*) AS n FROM sqlite_master WHERE name = 'durable_schema'").first?.int("n") ?? 0
                if applicationID != 0 || exists == 0 {
                    throw DurableError(
                        .databaseError,
                        "\(path) is a SQLite database but not a durable store (application id \(applicationID), \(tables) tables of its own); nothing was written to it")
                }
            }
            try await transaction.rows(SQLiteSchema.versionTable)
            let version = try await transaction.rows("SELECT version FROM durable_schema").first?.int("version") ?? 0
            if version > SQLiteSchema.currentVersion {
                throw DurableError(
                    .schemaTooNew,
                    "the durable schema in the SQLite store at \(path) is version \(version); this library knows versions up to \(SQLiteSchema.currentVersion): upgrade the library")
            }
            for next in version..<SQLiteSchema.currentVersion {
                for statement in SQLiteSchema.migrations[next] { try await transaction.rows(statement) }
            }
            try await transaction.rows(
                "INSERT INTO durable_schema (singleton, version) VALUES (1, ?) ON CONFLICT (singleton) DO UPDATE SET version = excluded.version",
                [.int(SQLiteSchema.currentVersion)])
            try await transaction.rows("PRAGMA application_id = \(SQLiteSchema.applicationID)")
        }
    }

    // MARK: Reading

    static let recordColumns = """
        id, queue, kind, state, attempt, max_attempts, output, error, cancel_reason, progress_completed,
        progress_total, not_before, pending_dependencies
        """

    static func record(from row: SQLiteRow) -> DurableRecord {
        DurableRecord(
            id: DurableOperationID(rawValue: Int64(row.int("id"))), queue: row.text("queue"), kind: row.text("kind"),
            state: DurableState(rawValue: row.text("state")) ?? .waiting, attempt: row.int("attempt"),
            maximumAttempts: row.int("max_attempts"), output: row.optionalText("output"), error: row.optionalText("error"),
            cancelReason: row.optionalText("cancel_reason"), progressCompleted: Int64(row.int("progress_completed")),
            progressTotal: Int64(row.int("progress_total")), notBefore: row.date("not_before"),
            unfinishedDependencies: row.int("pending_dependencies"), attempts: [])
    }

    public func states(of ids: [DurableOperationID]) async throws -> [DurableOperationID: DurableState] {
        guard !ids.isEmpty else { return [:] }
        let list = ids.map { String($0.rawValue) }.joined(separator: ",")
        return try await access.withConnection("reading the states of \(ids.count) operations") { connection in
            var states: [DurableOperationID: DurableState] = [:]
            for row in try await connection.rows("SELECT id, state FROM durable_operations WHERE id IN (\(list))") {
                states[DurableOperationID(rawValue: Int64(row.int("id")))] = DurableState(rawValue: row.text("state")) ?? .waiting
            }
            return states
        }
    }

    public func records(of ids: [DurableOperationID]) async throws -> [DurableRecord] {
        guard !ids.isEmpty else { return [] }
        let list = ids.map { String($0.rawValue) }.joined(separator: ",")
        return try await access.withConnection("reading \(ids.count) operations") { connection in
            try await connection.rows("SELECT \(Self.recordColumns) FROM durable_operations WHERE id IN (\(list))")
                .map(Self.record(from:))
        }
    }

    public func counts(queue: String) async throws -> DurableOperationCounts {
        try await access.withConnection("counting the operations of queue \"\(queue)\"") { connection in
            var counts = DurableOperationCounts()
            for row in try await connection.rows(
                "SELECT state, count(*) AS n FROM durable_operations WHERE queue = ? GROUP BY state", [.text(queue)])
            {
                if let state = DurableState(rawValue: row.text("state")) { counts[state] = row.int("n") }
            }
            return counts
        }
    }

    public func unfinishedCount(queue: String) async throws -> Int {
        // Each count is answered by the partial index of its state.
        try await access.withConnection("counting the unfinished operations of queue \"\(queue)\"") { connection in
            let rows = try await connection.rows(
                """
                SELECT (SELECT count(*) FROM durable_operations WHERE queue = ?1 AND state = 'waiting')
                    + (SELECT count(*) FROM durable_operations WHERE queue = ?1 AND state = 'ready')
                    + (SELECT count(*) FROM durable_operations WHERE queue = ?1 AND state = 'running') AS n
                """, [.text(queue)])
            return rows[0].int("n")
        }
    }

    public func record(of id: DurableOperationID, includingAttempts: Bool) async throws -> DurableRecord? {
        try await access.withConnection("reading \(id)") { connection in
            guard let row = try await connection.rows(
                "SELECT \(Self.recordColumns) FROM durable_operations WHERE id = ?", [.id(id)]).first
            else { return nil }
            var record = Self.record(from: row)
            if includingAttempts {
                record.attempts = try await connection.rows(
                    "SELECT number, worker, started_at, ended_at, error FROM durable_attempts WHERE operation = ? ORDER BY number",
                    [.id(id)]
                ).map { row in
                    DurableAttempt(
                        number: row.int("number"), worker: row.text("worker"), start: row.date("started_at"),
                        end: row.optionalDate("ended_at"), error: row.optionalText("error"))
                }
            }
            return record
        }
    }

    public func waitFacts(of id: DurableOperationID) async throws -> DurableWaitFacts? {
        guard let record = try await record(of: id, includingAttempts: false) else { return nil }
        return try await access.withConnection("reading why \(id) waits") { connection in
            let now = Date()
            let rows = try await connection.rows(
                """
                SELECT coalesce((SELECT suspended FROM durable_queues WHERE name = ?1), 0) AS suspended,
                    (SELECT max_concurrent FROM durable_queues WHERE name = ?1) AS max_concurrent,
                    (SELECT count(*) FROM durable_operations WHERE queue = ?1 AND state = 'running') AS running,
                    EXISTS (SELECT 1 FROM durable_workers w WHERE w.heartbeat_at > ?3
                        AND EXISTS (SELECT 1 FROM json_each(w.queues) WHERE value = ?1)
                        AND EXISTS (SELECT 1 FROM json_each(w.kinds) WHERE value = ?2)) AS known
                """, [.text(record.queue), .text(record.kind), .date(now.addingTimeInterval(-30))])
            let row = rows[0]
            return DurableWaitFacts(
                record: record, queueSuspended: row.bool("suspended"), queueLimit: row.optionalInt("max_concurrent"),
                queueRunning: row.int("running"), liveWorkerKnowsKind: row.bool("known"), now: now)
        }
    }

    // MARK: Queues

    public func setMaxConcurrentOperationCount(_ count: Int?, queue: String) async throws {
        try await access.write("setting the limit of queue \"\(queue)\"") { transaction in
            try await transaction.rows(
                """
                INSERT INTO durable_queues (name, max_concurrent) VALUES (?, ?)
                ON CONFLICT (name) DO UPDATE SET max_concurrent = excluded.max_concurrent
                """, [.text(queue), count.map { .int($0) } ?? .null])
            try await transaction.notify(.workAvailable(queue: queue))
        }
        poller.poke()
    }

    public func maxConcurrentOperationCount(queue: String) async throws -> Int? {
        try await access.withConnection("reading the limit of queue \"\(queue)\"") { connection in
            try await connection.rows("SELECT max_concurrent FROM durable_queues WHERE name = ?", [.text(queue)])
                .first?.optionalInt("max_concurrent")
        }
    }

    public func setSuspended(_ suspended: Bool, queue: String) async throws {
        try await access.write("suspending or resuming queue \"\(queue)\"") { transaction in
            try await transaction.rows(
                """
                INSERT INTO durable_queues (name, suspended) VALUES (?, ?)
                ON CONFLICT (name) DO UPDATE SET suspended = excluded.suspended
                """, [.text(queue), .int(suspended ? 1 : 0)])
            try await transaction.notify(.workAvailable(queue: queue))
        }
        poller.poke()
    }

    public func isSuspended(queue: String) async throws -> Bool {
        try await access.withConnection("reading whether queue \"\(queue)\" is suspended") { connection in
            try await connection.rows("SELECT suspended FROM durable_queues WHERE name = ?", [.text(queue)])
                .first?.bool("suspended") ?? false
        }
    }

    public func reportProgress(of id: DurableOperationID, attempt: Int, completed: Int64, total: Int64) async throws {
        try await access.withConnection("reporting the progress of \(id)") { connection in
            try await connection.execute(
                "UPDATE durable_operations SET progress_completed = ?, progress_total = ? WHERE id = ? AND attempt = ? AND state = 'running'",
                [.integer(SQLiteInt64(completed)), .integer(SQLiteInt64(total)), .id(id), .int(attempt)])
        }
    }

    public func prune(finishedBefore date: Date, limit: Int) async throws -> Int {
        try await access.write("pruning finished operations") { transaction in
            let doomed = try await transaction.rows(
                "SELECT id FROM durable_operations WHERE finished_at < ? ORDER BY finished_at LIMIT ?", [.date(date), .int(limit)]
            ).map { $0.int("id") }
            guard !doomed.isEmpty else { return 0 }
            let list = doomed.map(String.init).joined(separator: ",")
            try await transaction.rows("DELETE FROM durable_attempts WHERE operation IN (\(list))")
            try await transaction.rows("DELETE FROM durable_edges WHERE dependency IN (\(list)) OR dependent IN (\(list))")
            try await transaction.rows("DELETE FROM durable_operations WHERE id IN (\(list))")
            return doomed.count
        }
    }

    public func notifications() -> AsyncStream<DurableStoreNotification> {
        poller.subscribe()
    }
}
#endif
