// The SQLite store's schema, one list of statements per version.
#if SQLite

/// The schema's versions. Times are seconds since 1970 (`REAL`); lists are JSON text.
enum SQLiteSchema {
    /// The newest version this library knows.
    static var currentVersion: Int { migrations.count }

    /// `PRAGMA application_id` of a store ("OpDu"): a database of another application is refused.
    static let applicationID: Int32 = 0x4F70_4475

    static let versionTable = """
        CREATE TABLE IF NOT EXISTS durable_schema (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            version INTEGER NOT NULL)
        """

    static let migrations: [[String]] = [version1, version2, version3, version4, version5]

    /// What holds a key: an unfinished operation whose cancel was not requested. A running
    /// operation whose cancel was requested takes no new callers, so the next add under its
    /// key stores a fresh operation beside it.
    static let keyHolder = "key IS NOT NULL AND state IN ('waiting', 'ready', 'running') AND cancel_reason IS NULL"

    // What an operator's tool reads (`DurableStoreInspection`), each page from an index:
    // - finished operations by queue, state and finish time: a window's counts, and one
    //   queue's failures, are ranges of it; a list of finished ones is read newest first from
    //   it. Partial: a row enters it when it finishes.
    // - failed operations by finish time: every queue's failures in a window are a range of
    //   it. Partial: a row enters it when it fails.
    // - every operation by kind, and keyed ones by key: a search reads the newest matches (the
    //   key index of version 2 holds only unfinished operations). Neither column changes, so
    //   an update does not touch them.
    // Waiting and running operations are listed by id from their indexes by queue, which end
    // in the rowid; ready ones from the claimable index, a band of priority at a time.
    static let version5: [String] = [
        """
        CREATE INDEX durable_operations_queue_finished ON durable_operations (queue, state, finished_at)
            WHERE finished_at IS NOT NULL
        """,
        "CREATE INDEX durable_operations_failures ON durable_operations (finished_at) WHERE state = 'failed'",
        "CREATE INDEX durable_operations_kind ON durable_operations (kind)",
        "CREATE INDEX durable_operations_key_search ON durable_operations (key) WHERE key IS NOT NULL",
    ]

    // The index counts a queue's waiting operations, as the claimable and running indexes
    // count the others.
    static let version4: [String] = [
        "CREATE INDEX durable_operations_waiting ON durable_operations (queue) WHERE state = 'waiting'",
    ]

    // Retries are stored as the strategy's parameters (`DurableBackoff`), which the store
    // evaluates when an attempt fails, after the waits listed when it was added: what is
    // stored does not grow with the maximum. A give-back counts itself (`given_back`): the
    // failure whose wait is taken is the attempt less the attempts given back, which the
    // listed waits' count no longer tells. Rows stored before were given back
    // `max_attempts - 1 - json_array_length(retry_delays)` times.
    static let version3: [String] = [
        "ALTER TABLE durable_operations ADD COLUMN retry_initial REAL NOT NULL DEFAULT 0",
        "ALTER TABLE durable_operations ADD COLUMN retry_multiplier REAL NOT NULL DEFAULT 1",
        "ALTER TABLE durable_operations ADD COLUMN retry_maximum REAL NOT NULL DEFAULT 0",
        "ALTER TABLE durable_operations ADD COLUMN retry_jittered INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE durable_operations ADD COLUMN given_back INTEGER NOT NULL DEFAULT 0",
        """
        UPDATE durable_operations SET given_back = max(0, max_attempts - 1 - json_array_length(retry_delays))
        WHERE finished_at IS NULL
        """,
    ]

    static let version2: [String] = [
        "DROP INDEX durable_operations_key",
        "CREATE UNIQUE INDEX durable_operations_key ON durable_operations (queue, key) WHERE \(keyHolder)",
    ]

    static let version1: [String] = [
        """
        CREATE TABLE durable_queues (
            name TEXT PRIMARY KEY,
            max_concurrent INTEGER CHECK (max_concurrent IS NULL OR max_concurrent > 0),
            suspended INTEGER NOT NULL DEFAULT 0)
        """,
        // AUTOINCREMENT: an id is never reused after pruning, so an old handle cannot name a new operation.
        """
        CREATE TABLE durable_operations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            queue TEXT NOT NULL,
            kind TEXT NOT NULL,
            input TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('waiting', 'ready', 'running', 'succeeded', 'failed', 'cancelled')),
            priority INTEGER NOT NULL DEFAULT 0,
            key TEXT,
            not_before REAL NOT NULL,
            pending_dependencies INTEGER NOT NULL DEFAULT 0,
            runs_anyway INTEGER NOT NULL DEFAULT 0,
            attempt INTEGER NOT NULL DEFAULT 0,
            max_attempts INTEGER NOT NULL DEFAULT 1,
            retry_delays TEXT NOT NULL DEFAULT '[]',
            worker TEXT,
            lease_until REAL,
            output TEXT,
            error TEXT,
            cancel_reason TEXT,
            progress_completed INTEGER NOT NULL DEFAULT 0,
            progress_total INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            finished_at REAL)
        """,
        "CREATE INDEX durable_operations_claimable ON durable_operations (queue, priority DESC, id) WHERE state = 'ready'",
        "CREATE INDEX durable_operations_running ON durable_operations (queue) WHERE state = 'running'",
        "CREATE INDEX durable_operations_worker ON durable_operations (worker) WHERE state = 'running'",
        "CREATE INDEX durable_operations_leases ON durable_operations (lease_until) WHERE state = 'running'",
        "CREATE INDEX durable_operations_finished ON durable_operations (finished_at) WHERE finished_at IS NOT NULL",
        """
        CREATE UNIQUE INDEX durable_operations_key ON durable_operations (queue, key)
            WHERE key IS NOT NULL AND state IN ('waiting', 'ready', 'running')
        """,
        """
        CREATE TABLE durable_edges (
            dependency INTEGER NOT NULL,
            dependent INTEGER NOT NULL,
            PRIMARY KEY (dependency, dependent)) WITHOUT ROWID
        """,
        "CREATE INDEX durable_edges_dependent ON durable_edges (dependent)",
        """
        CREATE TABLE durable_attempts (
            operation INTEGER NOT NULL,
            number INTEGER NOT NULL,
            worker TEXT NOT NULL,
            started_at REAL NOT NULL,
            ended_at REAL,
            error TEXT,
            PRIMARY KEY (operation, number)) WITHOUT ROWID
        """,
        """
        CREATE TABLE durable_workers (
            id TEXT PRIMARY KEY,
            queues TEXT NOT NULL,
            kinds TEXT NOT NULL,
            heartbeat_at REAL NOT NULL)
        """,
        // What NOTIFY carries in PostgreSQL: each transaction appends its changes, and every
        // process's poller reads those past the last it saw. Kinds: `w` (payload: queue), `f`
        // (finished id), `c` (cancel-requested id). Kept a minute.
        """
        CREATE TABLE durable_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            payload TEXT NOT NULL,
            at REAL NOT NULL)
        """,
    ]
}
#endif
