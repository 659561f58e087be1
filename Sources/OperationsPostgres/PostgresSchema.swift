// The store's schema, one list of statements per version.
#if PostgreSQL

/// The schema's versions. A migration runs in one transaction under an advisory lock, so
/// several workers starting at once migrate once.
enum PostgresSchema {
    /// The newest version this library knows.
    static var currentVersion: Int { migrations.count }

    /// The channel every notification of the store is sent on. Payloads: `w:<queue>` (work
    /// became claimable), `f:<id>` (finished), `c:<id>` (cancel requested).
    static let channel = "operations_durable"

    /// An arbitrary constant that names the migration lock among advisory locks.
    static let migrationLockKey: Int64 = 0x0D0_7AB1E

    static let versionTable = """
        CREATE TABLE IF NOT EXISTS durable_schema (
            singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
            version integer NOT NULL)
        """

    static let migrations: [[String]] = [version1, version2, version3, version4]

    /// The enqueue function, with the lock it takes on the dependencies' rows.
    static func enqueueFunction(create: String, dependencyLock: String) -> String {
        """
        \(create) durable_enqueue(
            p_queue text, p_kind text, p_input text, p_priority integer, p_key text, p_not_before timestamptz,
            p_max_attempts integer, p_delays double precision[], p_dependencies bigint[], p_runs_anyway boolean)
        RETURNS TABLE (operation_id bigint, coalesced boolean)
        LANGUAGE plpgsql AS $$
        DECLARE
            v_id bigint;
            v_pending integer := 0;
            v_found integer := 0;
            v_cancel text;
            v_state text;
            d record;
        BEGIN
            IF p_key IS NOT NULL THEN
                SELECT o.id INTO v_id FROM durable_operations o
                WHERE o.queue = p_queue AND o.key = p_key AND o.state IN ('waiting', 'ready', 'running');
                IF FOUND THEN
                    RETURN QUERY SELECT v_id, true;
                    RETURN;
                END IF;
            END IF;
            -- Locked so that a dependency cannot finish between reading its state and storing the edge.
            FOR d IN
                SELECT o.id, o.kind, o.state, o.error, o.cancel_reason FROM durable_operations o
                WHERE o.id = ANY(p_dependencies) ORDER BY o.id \(dependencyLock)
            LOOP
                v_found := v_found + 1;
                IF d.state NOT IN ('succeeded', 'failed', 'cancelled') THEN
                    v_pending := v_pending + 1;
                ELSIF d.state <> 'succeeded' AND NOT p_runs_anyway AND v_cancel IS NULL THEN
                    v_cancel := 'dependency ' || d.id || ' (' || d.kind || ') '
                        || CASE WHEN d.state = 'failed' THEN 'failed: ' || coalesce(d.error, '')
                                ELSE 'was cancelled: ' || coalesce(d.cancel_reason, '') END;
                END IF;
            END LOOP;
            IF v_found <> (SELECT count(DISTINCT x) FROM unnest(p_dependencies) x) THEN
                RAISE EXCEPTION 'adding % to queue "%": a dependency is not stored (ids %)', p_kind, p_queue, p_dependencies
                    USING ERRCODE = 'P0001';
            END IF;
            v_state := CASE WHEN v_cancel IS NOT NULL THEN 'cancelled' WHEN v_pending > 0 THEN 'waiting' ELSE 'ready' END;
            INSERT INTO durable_operations AS o (queue, kind, input, state, priority, key, not_before,
                pending_dependencies, runs_anyway, max_attempts, retry_delays, cancel_reason, finished_at)
            VALUES (p_queue, p_kind, p_input, v_state, p_priority, p_key, coalesce(p_not_before, clock_timestamp()),
                v_pending, p_runs_anyway, p_max_attempts, p_delays, v_cancel,
                CASE WHEN v_cancel IS NOT NULL THEN clock_timestamp() END)
            ON CONFLICT (queue, key) WHERE key IS NOT NULL AND state IN ('waiting', 'ready', 'running') DO NOTHING
            RETURNING o.id INTO v_id;
            IF v_id IS NULL THEN
                -- Another transaction added the same key first.
                SELECT o.id INTO v_id FROM durable_operations o
                WHERE o.queue = p_queue AND o.key = p_key AND o.state IN ('waiting', 'ready', 'running');
                RETURN QUERY SELECT v_id, true;
                RETURN;
            END IF;
            INSERT INTO durable_edges (dependency, dependent)
                SELECT DISTINCT x, v_id FROM unnest(p_dependencies) x;
            IF v_state = 'ready' THEN
                PERFORM pg_notify('operations_durable', 'w:' || p_queue);
            ELSIF v_state = 'cancelled' THEN
                PERFORM pg_notify('operations_durable', 'f:' || v_id);
            END IF;
            RETURN QUERY SELECT v_id, false;
        END $$
        """
    }

    /// The claim function: `columns` are what it returns, `select` computes them from the
    /// claimed rows (`c`).
    static func claimFunction(create: String, name: String, columns: String, select: String) -> String {
        """
        \(create) \(name)(p_queue text, p_kinds text[], p_worker text, p_limit integer, p_lease double precision)
        RETURNS TABLE (\(columns))
        LANGUAGE plpgsql AS $$
        DECLARE
            q record;
            v_limit integer := p_limit;
            v_running integer;
        BEGIN
            SELECT * INTO q FROM durable_queues WHERE name = p_queue;
            IF FOUND THEN
                IF q.max_concurrent IS NOT NULL THEN
                    SELECT * INTO q FROM durable_queues WHERE name = p_queue FOR UPDATE;
                END IF;
                IF q.suspended THEN
                    RETURN;
                END IF;
                IF q.max_concurrent IS NOT NULL THEN
                    SELECT count(*) INTO v_running FROM durable_operations o WHERE o.queue = p_queue AND o.state = 'running';
                    v_limit := least(v_limit, q.max_concurrent - v_running);
                END IF;
            END IF;
            IF v_limit <= 0 THEN
                RETURN;
            END IF;
            RETURN QUERY
            WITH picked AS (
                SELECT o.id FROM durable_operations o
                WHERE o.queue = p_queue AND o.state = 'ready' AND o.kind = ANY(p_kinds) AND o.not_before <= clock_timestamp()
                ORDER BY o.priority DESC, o.id
                LIMIT v_limit
                FOR UPDATE SKIP LOCKED),
            claimed AS (
                UPDATE durable_operations o SET state = 'running', attempt = o.attempt + 1, worker = p_worker,
                    lease_until = clock_timestamp() + p_lease * interval '1 second'
                FROM picked WHERE o.id = picked.id
                RETURNING o.id, o.kind, o.input, o.attempt, o.priority, o.max_attempts),
            recorded AS (
                INSERT INTO durable_attempts (operation, number, worker, started_at)
                SELECT c.id, c.attempt, p_worker, clock_timestamp() FROM claimed c)
            SELECT \(select) FROM claimed c ORDER BY c.priority DESC, c.id;
        END $$
        """
    }

    /// The function that ends a batch of attempts. `settlesSuccessesTogether`: the successes'
    /// dependents are released after the loop, together (`durable_settle_successes`); else
    /// `durable_finish_attempt` releases each success's own.
    static func completeFunction(create: String, settlesSuccessesTogether: Bool) -> String {
        """
        \(create) durable_complete(p_worker text, p_ids bigint[], p_attempts integer[], p_outcomes text[], p_values text[])
        RETURNS void
        LANGUAGE plpgsql AS $$
        DECLARE
            o durable_operations;
            i integer;
            v_succeeded bigint[] := '{}';
        BEGIN
            FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
                SELECT * INTO o FROM durable_operations WHERE id = p_ids[i] FOR UPDATE;
                -- An attempt whose lease was taken back is no longer this worker's to end.
                CONTINUE WHEN NOT FOUND OR o.state <> 'running' OR o.worker IS DISTINCT FROM p_worker
                    OR o.attempt <> p_attempts[i];
                PERFORM durable_finish_attempt(o, p_outcomes[i], p_values[i]);
                IF p_outcomes[i] = 'succeeded' THEN
                    v_succeeded := v_succeeded || o.id;
                END IF;
            END LOOP;
            \(settlesSuccessesTogether ? "PERFORM durable_settle_successes(v_succeeded);" : "-- Each success released its dependents.")
        END $$
        """
    }

    /// A give-back function: `selection` picks, and locks, the rows it gives back.
    static func giveBackFunction(signature: String, selection: String) -> String {
        """
        CREATE FUNCTION \(signature) RETURNS void
        LANGUAGE plpgsql AS $$
        DECLARE
            o durable_operations;
        BEGIN
            FOR o IN
        \(selection)
            LOOP
                IF o.cancel_reason IS NOT NULL THEN
                    PERFORM durable_finish_attempt(o, 'cancelled', o.cancel_reason);
                ELSE
                    UPDATE durable_attempts SET ended_at = clock_timestamp(), error = p_reason
                    WHERE operation = o.id AND number = o.attempt;
                    -- Given back, not failed: the attempt does not count against the maximum.
                    UPDATE durable_operations SET state = 'ready', worker = NULL, lease_until = NULL,
                        max_attempts = max_attempts + 1 WHERE id = o.id;
                    PERFORM pg_notify('operations_durable', 'w:' || o.queue);
                END IF;
            END LOOP;
        END $$
        """
    }

    /// The function that ends an attempt; `delayIndex` picks the retry's wait from
    /// `retry_delays` (1-based).
    static func finishAttemptFunction(create: String, delayIndex: String, settlesSuccess: Bool = true) -> String {
        """
        \(create) durable_finish_attempt(o durable_operations, p_outcome text, p_value text) RETURNS void
        LANGUAGE plpgsql AS $$
        DECLARE
            v_outcome text := p_outcome;
            v_delay double precision;
            v_limited boolean;
        BEGIN
            IF v_outcome IN ('failed', 'rejected') AND o.cancel_reason IS NOT NULL THEN
                v_outcome := 'cancelled';
            END IF;
            UPDATE durable_attempts SET ended_at = clock_timestamp(),
                error = CASE WHEN v_outcome = 'succeeded' THEN NULL
                             WHEN v_outcome = 'cancelled' THEN 'cancelled: ' || coalesce(o.cancel_reason, p_value)
                             ELSE p_value END
            WHERE operation = o.id AND number = o.attempt;
            IF v_outcome = 'succeeded' THEN
                UPDATE durable_operations SET state = 'succeeded', output = p_value, worker = NULL, lease_until = NULL,
                    finished_at = clock_timestamp() WHERE id = o.id;
                PERFORM pg_notify('operations_durable', 'f:' || o.id);
                \(settlesSuccess ? "PERFORM durable_settle_dependents(o.id, true, NULL);" : "-- The caller settles the dependents of a batch's successes at once.")
            ELSIF v_outcome = 'failed' AND o.attempt < o.max_attempts THEN
                v_delay := coalesce(o.retry_delays[\(delayIndex)], 0);
                UPDATE durable_operations SET state = 'ready', error = p_value, worker = NULL, lease_until = NULL,
                    not_before = clock_timestamp() + v_delay * interval '1 second' WHERE id = o.id;
                PERFORM pg_notify('operations_durable', 'w:' || o.queue);
            ELSIF v_outcome = 'cancelled' THEN
                UPDATE durable_operations SET state = 'cancelled', cancel_reason = coalesce(o.cancel_reason, p_value),
                    worker = NULL, lease_until = NULL, finished_at = clock_timestamp() WHERE id = o.id;
                PERFORM pg_notify('operations_durable', 'f:' || o.id);
                PERFORM durable_settle_dependents(o.id, false,
                    'dependency ' || o.id || ' (' || o.kind || ') was cancelled: ' || coalesce(o.cancel_reason, p_value));
            ELSE
                UPDATE durable_operations SET state = 'failed', error = p_value, worker = NULL, lease_until = NULL,
                    finished_at = clock_timestamp() WHERE id = o.id;
                PERFORM pg_notify('operations_durable', 'f:' || o.id);
                PERFORM durable_settle_dependents(o.id, false,
                    'dependency ' || o.id || ' (' || o.kind || ') failed: ' || p_value);
            END IF;
            -- A slot of a limited queue is free: its workers may claim again.
            SELECT max_concurrent IS NOT NULL INTO v_limited FROM durable_queues WHERE name = o.queue;
            IF v_limited THEN
                PERFORM pg_notify('operations_durable', 'w:' || o.queue);
            END IF;
        END $$
        """
    }

    // A batch's successes release their dependents together: one update of each dependent's
    // counter per batch, in the order of their ids, instead of one per finished dependency.
    // Each update leaves a row version that later ones step over until it is pruned, so a
    // fan-in's sink updated once per leaf made a finish cost more the more leaves finished
    // before it.
    static let version4: [String] = [
        finishAttemptFunction(
            create: "CREATE OR REPLACE FUNCTION",
            delayIndex: "o.attempt - (o.max_attempts - 1 - coalesce(array_length(o.retry_delays, 1), 0))",
            settlesSuccess: false),
        """
        CREATE FUNCTION durable_settle_successes(p_ids bigint[]) RETURNS void
        LANGUAGE plpgsql AS $$
        DECLARE
            d record;
        BEGIN
            FOR d IN
                SELECT o.id, o.queue, o.pending_dependencies, c.finished FROM durable_operations o
                JOIN (SELECT e.dependent, count(*)::integer AS finished FROM durable_edges e
                      WHERE e.dependency = ANY(p_ids) GROUP BY e.dependent) c ON o.id = c.dependent
                WHERE o.state = 'waiting'
                ORDER BY o.id FOR UPDATE OF o
            LOOP
                UPDATE durable_operations SET pending_dependencies = pending_dependencies - d.finished,
                    state = CASE WHEN pending_dependencies = d.finished THEN 'ready' ELSE state END
                WHERE id = d.id;
                IF d.pending_dependencies = d.finished THEN
                    PERFORM pg_notify('operations_durable', 'w:' || d.queue);
                END IF;
            END LOOP;
        END $$
        """,
        completeFunction(create: "CREATE OR REPLACE FUNCTION", settlesSuccessesTogether: true),
    ]

    // A claim returns each operation's maximum and dependencies itself, read in its own
    // statement: read by the caller's statement, whose snapshot is older than the claim's
    // (which may wait for a limited queue's row), an operation committed meanwhile had neither.
    // The old claim function stays for processes of the previous version still running
    // during an upgrade (one that restarts refuses the newer schema).
    //
    // A heartbeat also returns the running operations the worker holds but did not name
    // (`renewed` false), with their attempt: claims whose answer it never received, which it
    // gives back. A give-back names attempts, so that a late one never ends a later attempt.
    static let version3: [String] = [
        claimFunction(
            create: "CREATE FUNCTION", name: "durable_claim_operations",
            columns: "operation_id bigint, kind text, input text, attempt integer, max_attempts integer, dependencies bigint[]",
            select: "c.id, c.kind, c.input, c.attempt, c.max_attempts, "
                + "ARRAY(SELECT e.dependency FROM durable_edges e WHERE e.dependent = c.id ORDER BY e.dependency)"),
        "DROP FUNCTION durable_heartbeat(text, text[], text[], bigint[], double precision)",
        """
        CREATE FUNCTION durable_heartbeat(p_worker text, p_queues text[], p_kinds text[], p_held bigint[], p_lease double precision)
        RETURNS TABLE (operation_id bigint, cancel_reason text, renewed boolean, attempt integer)
        LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO durable_workers (id, queues, kinds, heartbeat_at) VALUES (p_worker, p_queues, p_kinds, clock_timestamp())
            ON CONFLICT (id) DO UPDATE SET queues = excluded.queues, kinds = excluded.kinds, heartbeat_at = excluded.heartbeat_at;
            RETURN QUERY
            UPDATE durable_operations o SET lease_until = clock_timestamp() + p_lease * interval '1 second'
            WHERE o.worker = p_worker AND o.state = 'running' AND o.id = ANY(p_held)
            RETURNING o.id, o.cancel_reason, true, o.attempt;
            RETURN QUERY
            SELECT o.id, o.cancel_reason, false, o.attempt FROM durable_operations o
            WHERE o.worker = p_worker AND o.state = 'running' AND NOT (o.id = ANY(p_held));
        END $$
        """,
        giveBackFunction(
            signature: "durable_give_back_attempts(p_worker text, p_ids bigint[], p_attempts integer[], p_reason text)",
            selection: """
                SELECT d.* FROM durable_operations d
                JOIN unnest(p_ids, p_attempts) AS a(id, attempt) ON d.id = a.id AND d.attempt = a.attempt
                WHERE d.worker = p_worker AND d.state = 'running'
                ORDER BY d.id FOR UPDATE OF d
                """),
    ]

    // The dependencies' rows are locked FOR KEY SHARE instead of FOR SHARE. What the lock must
    // prevent is a dependency finishing (or being pruned) between reading its state and storing
    // the edge; every statement that finishes or deletes an operation first locks its row FOR
    // UPDATE (durable_complete, durable_rescue, durable_give_back, durable_cancel,
    // durable_settle_dependents, prune), which KEY SHARE still conflicts with. FOR SHARE also
    // conflicted with the plain UPDATEs of a running dependency's heartbeat and progress, so
    // an application transaction that added a dependent held up the dependency's lease renewal.
    //
    // A claim reads its operation's dependencies (for the worker's events): an index on edges
    // by dependent.
    //
    // A retry waits the delay of its failure's number: attempts given back (which raised
    // max_attempts by one each, past the retry_delays stored for the original maximum) are
    // not failures.
    static let version2: [String] = [
        enqueueFunction(create: "CREATE OR REPLACE FUNCTION", dependencyLock: "FOR KEY SHARE"),
        finishAttemptFunction(
            create: "CREATE OR REPLACE FUNCTION",
            delayIndex: "o.attempt - (o.max_attempts - 1 - coalesce(array_length(o.retry_delays, 1), 0))"),
        "CREATE INDEX durable_edges_dependent ON durable_edges (dependent)",
    ]

    static let version1: [String] = [
        """
        CREATE TABLE durable_queues (
            name text PRIMARY KEY,
            max_concurrent integer CHECK (max_concurrent IS NULL OR max_concurrent > 0),
            suspended boolean NOT NULL DEFAULT false)
        """,
        """
        CREATE TABLE durable_operations (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            queue text NOT NULL,
            kind text NOT NULL,
            input text NOT NULL,
            state text NOT NULL CHECK (state IN ('waiting', 'ready', 'running', 'succeeded', 'failed', 'cancelled')),
            priority integer NOT NULL DEFAULT 0,
            key text,
            not_before timestamptz NOT NULL DEFAULT clock_timestamp(),
            pending_dependencies integer NOT NULL DEFAULT 0,
            runs_anyway boolean NOT NULL DEFAULT false,
            attempt integer NOT NULL DEFAULT 0,
            max_attempts integer NOT NULL DEFAULT 1,
            retry_delays double precision[] NOT NULL DEFAULT '{}',
            worker text,
            lease_until timestamptz,
            output text,
            error text,
            cancel_reason text,
            progress_completed bigint NOT NULL DEFAULT 0,
            progress_total bigint NOT NULL DEFAULT 0,
            created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
            finished_at timestamptz)
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
            dependency bigint NOT NULL,
            dependent bigint NOT NULL,
            PRIMARY KEY (dependency, dependent))
        """,
        """
        CREATE TABLE durable_attempts (
            operation bigint NOT NULL,
            number integer NOT NULL,
            worker text NOT NULL,
            started_at timestamptz NOT NULL,
            ended_at timestamptz,
            error text,
            PRIMARY KEY (operation, number))
        """,
        """
        CREATE TABLE durable_workers (
            id text PRIMARY KEY,
            queues text[] NOT NULL,
            kinds text[] NOT NULL,
            heartbeat_at timestamptz NOT NULL)
        """,
        // Dependents of a finished operation, in the finish's transaction: a success (or a
        // dependent that runs anyway) decrements the counter through the edges, and the last
        // one makes the dependent claimable; a failure cancels the other dependents, and theirs.
        """
        CREATE FUNCTION durable_settle_dependents(p_id bigint, p_success boolean, p_reason text) RETURNS void
        LANGUAGE plpgsql AS $$
        DECLARE
            d record;
        BEGIN
            FOR d IN
                SELECT o.id, o.queue, o.runs_anyway, o.pending_dependencies FROM durable_operations o
                JOIN durable_edges e ON o.id = e.dependent
                WHERE e.dependency = p_id AND o.state = 'waiting'
                ORDER BY o.id FOR UPDATE OF o
            LOOP
                IF p_success OR d.runs_anyway THEN
                    UPDATE durable_operations SET pending_dependencies = pending_dependencies - 1,
                        state = CASE WHEN pending_dependencies = 1 THEN 'ready' ELSE state END
                    WHERE id = d.id;
                    IF d.pending_dependencies = 1 THEN
                        PERFORM pg_notify('operations_durable', 'w:' || d.queue);
                    END IF;
                ELSE
                    UPDATE durable_operations SET state = 'cancelled', cancel_reason = p_reason,
                        pending_dependencies = pending_dependencies - 1, finished_at = clock_timestamp()
                    WHERE id = d.id;
                    PERFORM pg_notify('operations_durable', 'f:' || d.id);
                    PERFORM durable_settle_dependents(d.id, false, p_reason);
                END IF;
            END LOOP;
        END $$
        """,
        enqueueFunction(create: "CREATE FUNCTION", dependencyLock: "FOR SHARE"),
        // The cluster-wide limit: with a limit, claims of a queue take its row's lock and count
        // its running operations; the operation rows themselves are skipped when locked.
        claimFunction(
            create: "CREATE FUNCTION", name: "durable_claim",
            columns: "operation_id bigint, kind text, input text, attempt integer",
            select: "c.id, c.kind, c.input, c.attempt"),
        // Ends an attempt: succeeded, retried (while attempts remain), failed, or cancelled.
        finishAttemptFunction(create: "CREATE FUNCTION", delayIndex: "o.attempt"),
        completeFunction(create: "CREATE FUNCTION", settlesSuccessesTogether: false),
        """
        CREATE FUNCTION durable_heartbeat(p_worker text, p_queues text[], p_kinds text[], p_held bigint[], p_lease double precision)
        RETURNS TABLE (operation_id bigint, cancel_reason text)
        LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO durable_workers (id, queues, kinds, heartbeat_at) VALUES (p_worker, p_queues, p_kinds, clock_timestamp())
            ON CONFLICT (id) DO UPDATE SET queues = excluded.queues, kinds = excluded.kinds, heartbeat_at = excluded.heartbeat_at;
            RETURN QUERY
            UPDATE durable_operations o SET lease_until = clock_timestamp() + p_lease * interval '1 second'
            WHERE o.worker = p_worker AND o.state = 'running' AND o.id = ANY(p_held)
            RETURNING o.id, o.cancel_reason;
        END $$
        """,
        // Leases that expired: the interrupted attempt is recorded as ended now; the operation
        // is ready again, or failed when no attempt is left, or cancelled if that was asked.
        """
        CREATE FUNCTION durable_rescue() RETURNS integer
        LANGUAGE plpgsql AS $$
        DECLARE
            o durable_operations;
            v_count integer := 0;
        BEGIN
            FOR o IN
                SELECT * FROM durable_operations WHERE state = 'running' AND lease_until < clock_timestamp()
                ORDER BY id FOR UPDATE SKIP LOCKED
            LOOP
                PERFORM durable_finish_attempt(o, 'failed',
                    'worker ' || o.worker || ' stopped renewing its lease during attempt ' || o.attempt);
                v_count := v_count + 1;
            END LOOP;
            DELETE FROM durable_workers WHERE heartbeat_at < clock_timestamp() - interval '1 day';
            RETURN v_count;
        END $$
        """,
        giveBackFunction(
            signature: "durable_give_back(p_worker text, p_ids bigint[], p_reason text)",
            selection: """
                SELECT * FROM durable_operations WHERE id = ANY(p_ids) AND worker = p_worker AND state = 'running'
                ORDER BY id FOR UPDATE
                """),
        """
        CREATE FUNCTION durable_cancel(p_id bigint, p_reason text) RETURNS boolean
        LANGUAGE plpgsql AS $$
        DECLARE
            o durable_operations;
        BEGIN
            SELECT * INTO o FROM durable_operations WHERE id = p_id FOR UPDATE;
            IF NOT FOUND THEN
                RETURN false;
            END IF;
            IF o.state IN ('waiting', 'ready') THEN
                UPDATE durable_operations SET state = 'cancelled', cancel_reason = p_reason, finished_at = clock_timestamp()
                WHERE id = p_id;
                PERFORM pg_notify('operations_durable', 'f:' || p_id);
                PERFORM durable_settle_dependents(p_id, false,
                    'dependency ' || p_id || ' (' || o.kind || ') was cancelled: ' || p_reason);
            ELSIF o.state = 'running' AND o.cancel_reason IS NULL THEN
                UPDATE durable_operations SET cancel_reason = p_reason WHERE id = p_id;
                PERFORM pg_notify('operations_durable', 'c:' || p_id);
            END IF;
            RETURN true;
        END $$
        """,
    ]
}
#endif
