// The store's schema, one list of statements per version.
#if PostgreSQL

import OperationsDurable

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

    static let migrations: [[String]] = [version1, version2, version3, version4, version5, version6, version7, version8]

    // What an operator's tool reads (`DurableStoreInspection`), each page from an index:
    // - finished operations by queue, state and finish time: a window's counts, and one
    //   queue's failures, are ranges of it; a list of finished ones is read newest first from
    //   it. Partial: a row enters it when it finishes.
    // - waiting operations by queue and id (instead of by queue alone): a list of them by id
    //   reads one page; the counts use it as they used the old one.
    // - failed operations by finish time: every queue's failures in a window are a range of
    //   it. Partial: a row enters it when it fails.
    // - every operation by kind, and keyed ones by key: a search reads the newest matches
    //   (the key index of version 5 holds only unfinished operations). The kind index is the
    //   one that costs every write: each new version of a row (claim, end, lease renewal)
    //   adds an entry to it; the others take only the rows that finish, fail or have a key.
    // A retry (`durable_retry`) makes a failed or cancelled operation waiting or ready again
    // with one more attempt, and tells the workers as an enqueue does; it is refused while a
    // dependency is failed or cancelled, unless the operation runs anyway. Its unfinished
    // dependencies are counted again (a cancel left the counter as it was): locked as the
    // enqueue locks them, so that none finishes between the count and the update.
    static let version8: [String] = [
        """
        CREATE INDEX durable_operations_queue_finished ON durable_operations (queue, state, finished_at, id)
            WHERE finished_at IS NOT NULL
        """,
        "CREATE INDEX durable_operations_failures ON durable_operations (finished_at) WHERE state = 'failed'",
        "DROP INDEX durable_operations_waiting",
        "CREATE INDEX durable_operations_waiting ON durable_operations (queue, id) WHERE state = 'waiting'",
        "CREATE INDEX durable_operations_kind ON durable_operations (kind, id)",
        "CREATE INDEX durable_operations_key_search ON durable_operations (key, id) WHERE key IS NOT NULL",
        """
        CREATE FUNCTION durable_retry(p_id bigint) RETURNS boolean
        LANGUAGE plpgsql AS $$
        DECLARE
            o durable_operations;
            v_holder bigint;
            v_ended durable_operations;
            v_pending integer;
        BEGIN
            SELECT * INTO o FROM durable_operations WHERE id = p_id FOR UPDATE;
            IF NOT FOUND OR o.state NOT IN ('failed', 'cancelled') THEN
                RETURN false;
            END IF;
            IF o.key IS NOT NULL THEN
                SELECT h.id INTO v_holder FROM durable_operations h
                WHERE h.queue = o.queue AND h.key = o.key AND h.id <> p_id AND \(keyHolder);
                IF FOUND THEN
                    RAISE EXCEPTION 'retrying durable operation % (%): its key "%" of queue "%" is held by operation %, which is pending or running',
                        p_id, o.kind, o.key, o.queue, v_holder USING ERRCODE = 'P0001';
                END IF;
            END IF;
            IF NOT o.runs_anyway THEN
                SELECT d.* INTO v_ended FROM durable_operations d JOIN durable_edges e ON d.id = e.dependency
                WHERE e.dependent = p_id AND d.state IN ('failed', 'cancelled') ORDER BY d.id LIMIT 1;
                IF FOUND THEN
                    RAISE EXCEPTION 'retrying durable operation % (%): its dependency % (%) is %, and it does not run anyway; retry the dependency first',
                        p_id, o.kind, v_ended.id, v_ended.kind, v_ended.state USING ERRCODE = 'P0001';
                END IF;
            END IF;
            SELECT count(*) INTO v_pending FROM (
                SELECT d.id FROM durable_operations d JOIN durable_edges e ON d.id = e.dependency
                WHERE e.dependent = p_id AND d.state IN ('waiting', 'ready', 'running')
                ORDER BY d.id FOR KEY SHARE OF d) unfinished;
            UPDATE durable_operations SET state = CASE WHEN v_pending > 0 THEN 'waiting' ELSE 'ready' END,
                pending_dependencies = v_pending, max_attempts = greatest(max_attempts, attempt::bigint + 1),
                output = NULL, error = NULL, cancel_reason = NULL, finished_at = NULL, worker = NULL, lease_until = NULL,
                progress_completed = 0, progress_total = 0, not_before = clock_timestamp()
            WHERE id = p_id;
            IF v_pending = 0 THEN
                PERFORM pg_notify('operations_durable', 'w:' || o.queue);
            END IF;
            RETURN true;
        END $$
        """,
    ]

    // Batches: one call stores many operations, which may depend on earlier ones of the same
    // call by position (`members`, from 0), in one round trip; a member whose key coalesced
    // stands for the operation it coalesced with. A coalescing with an operation of another
    // kind fails the whole call. The index counts a queue's waiting operations, as the
    // claimable and running indexes count the others.
    static let version7: [String] = [
        """
        CREATE FUNCTION durable_enqueue_batch(p_requests jsonb)
        RETURNS TABLE (operation_id bigint, coalesced boolean)
        LANGUAGE plpgsql AS $$
        DECLARE
            r jsonb;
            v_ids bigint[] := '{}';
            v_id bigint;
            v_coalesced boolean;
            v_kind text;
        BEGIN
            FOR r IN SELECT e.value FROM jsonb_array_elements(p_requests) WITH ORDINALITY e ORDER BY e.ordinality LOOP
                SELECT q.operation_id, q.coalesced INTO v_id, v_coalesced FROM durable_enqueue(
                    r->>'queue', r->>'kind', r->>'input', (r->>'priority')::integer, r->>'key',
                    to_timestamp((r->>'notBefore')::double precision), (r->>'maximumAttempts')::bigint,
                    ARRAY(SELECT x::double precision FROM jsonb_array_elements_text(r->'retryDelays') x),
                    (r->>'retryInitial')::double precision, (r->>'retryMultiplier')::double precision,
                    (r->>'retryMaximum')::double precision, (r->>'retryJittered')::boolean,
                    ARRAY(SELECT x::bigint FROM jsonb_array_elements_text(r->'dependencies') x)
                        || ARRAY(SELECT v_ids[m::integer + 1] FROM jsonb_array_elements_text(r->'members') m),
                    (r->>'runsAnyway')::boolean) q;
                IF v_coalesced THEN
                    SELECT o.kind INTO v_kind FROM durable_operations o WHERE o.id = v_id;
                    IF v_kind IS DISTINCT FROM r->>'kind' THEN
                        RAISE EXCEPTION 'adding % to queue "%" with key "%": the key is held by operation %, of kind %, which is pending or running; a key coalesces operations of one kind',
                            r->>'kind', r->>'queue', r->>'key', v_id, v_kind USING ERRCODE = 'P0001';
                    END IF;
                END IF;
                v_ids := v_ids || v_id;
                operation_id := v_id;
                coalesced := v_coalesced;
                RETURN NEXT;
            END LOOP;
        END $$
        """,
        "CREATE INDEX durable_operations_waiting ON durable_operations (queue) WHERE state = 'waiting'",
        // A worker's steady state: the ends of a batch of attempts recorded, and as many
        // operations claimed, in one transaction (the claim sees what the ends released).
        """
        CREATE FUNCTION durable_complete_and_claim(
            p_worker text, p_ids bigint[], p_attempts integer[], p_outcomes text[], p_values text[],
            p_queue text, p_kinds text[], p_limit integer, p_lease double precision)
        RETURNS TABLE (operation_id bigint, kind text, input text, attempt integer, max_attempts integer, dependencies bigint[])
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM durable_complete(p_worker, p_ids, p_attempts, p_outcomes, p_values);
            RETURN QUERY SELECT c.operation_id, c.kind, c.input, c.attempt, c.max_attempts, c.dependencies
                FROM durable_claim_operations(p_queue, p_kinds, p_worker, p_limit, p_lease) WITH ORDINALITY c
                ORDER BY c.ordinality;
        END $$
        """,
    ]

    // Retries are stored as the strategy's parameters (`DurableBackoff`), which
    // `durable_retry_wait` evaluates when an attempt fails, after the waits listed when it was
    // added: what is stored does not grow with the maximum, which is a bigint (`Int.max`:
    // until it succeeds). A give-back counts itself (`given_back`): the failure whose wait is
    // taken is the attempt less the attempts given back, which the listed waits' count no
    // longer tells; rows stored before were given back `max_attempts - 1 - (listed waits)`
    // times. Attempt numbers are integers: the attempt numbered 2,147,483,647 is the last.
    // The claim function of version 3 returns the maximum as an integer, as before (a larger
    // one reads as that last attempt's number); the enqueue function without the formula stays
    // for processes of the previous version still running during an upgrade.
    static let version6: [String] = [
        """
        ALTER TABLE durable_operations ALTER COLUMN max_attempts TYPE bigint,
            ADD COLUMN given_back integer NOT NULL DEFAULT 0,
            ADD COLUMN retry_initial double precision NOT NULL DEFAULT 0,
            ADD COLUMN retry_multiplier double precision NOT NULL DEFAULT 1,
            ADD COLUMN retry_maximum double precision NOT NULL DEFAULT 0,
            ADD COLUMN retry_jittered boolean NOT NULL DEFAULT false
        """,
        """
        UPDATE durable_operations SET given_back = greatest(0, max_attempts - 1 - coalesce(array_length(retry_delays, 1), 0))
        WHERE finished_at IS NULL
        """,
        // The wait after the failure that ended the operation's current attempt, in seconds:
        // DurableBackoff.seconds(afterFailure:listed:fraction:). The growth is compared in
        // logarithms first: a power that overflows (or underflows) is an error in PostgreSQL.
        """
        CREATE FUNCTION durable_retry_wait(o durable_operations) RETURNS double precision
        LANGUAGE plpgsql AS $$
        DECLARE
            v_failure bigint := o.attempt - o.given_back;
            v_listed integer := coalesce(array_length(o.retry_delays, 1), 0);
            v_growth double precision;
            v_wait double precision;
        BEGIN
            IF v_failure >= 1 AND v_failure <= v_listed THEN
                v_wait := o.retry_delays[v_failure::integer];
            ELSIF o.retry_initial <= 0 OR o.retry_maximum <= 0 THEN
                v_wait := 0;
            ELSIF v_failure <= 1 OR o.retry_multiplier = 1 THEN
                v_wait := least(o.retry_maximum, o.retry_initial);
            ELSIF o.retry_multiplier = 0 THEN
                v_wait := 0;
            ELSE
                v_growth := ln(o.retry_initial) + (v_failure - 1) * ln(o.retry_multiplier);
                IF v_growth >= ln(o.retry_maximum) THEN
                    v_wait := o.retry_maximum;
                ELSIF v_growth < -700 THEN
                    v_wait := 0;
                ELSE
                    v_wait := o.retry_initial * power(o.retry_multiplier, (v_failure - 1)::double precision);
                END IF;
            END IF;
            IF o.retry_jittered AND v_failure > v_listed THEN
                v_wait := v_wait * random();
            END IF;
            RETURN least(greatest(coalesce(v_wait, 0), 0), \(DurableBackoff.longestWait));
        END $$
        """,
        finishAttemptFunction(
            create: "CREATE OR REPLACE FUNCTION", delay: "durable_retry_wait(o)",
            retries: "o.attempt < least(o.max_attempts, 2147483647)", settlesSuccess: false),
        giveBackFunction(
            create: "CREATE OR REPLACE FUNCTION",
            signature: "durable_give_back(p_worker text, p_ids bigint[], p_reason text)",
            selection: """
                SELECT * FROM durable_operations WHERE id = ANY(p_ids) AND worker = p_worker AND state = 'running'
                ORDER BY id FOR UPDATE
                """,
            counts: givenBackCount),
        giveBackFunction(
            create: "CREATE OR REPLACE FUNCTION",
            signature: giveBackAttempts.signature, selection: giveBackAttempts.selection,
            counts: givenBackCount),
        claimFunction(
            create: "CREATE OR REPLACE FUNCTION", name: "durable_claim_operations",
            columns: "operation_id bigint, kind text, input text, attempt integer, max_attempts integer, dependencies bigint[]",
            select: "c.id, c.kind, c.input, c.attempt, least(c.max_attempts, 2147483647)::integer, "
                + "ARRAY(SELECT e.dependency FROM durable_edges e WHERE e.dependent = c.id ORDER BY e.dependency)"),
        enqueueFunction(create: "CREATE FUNCTION", dependencyLock: "FOR KEY SHARE", keyHolder: keyHolder, storesBackoff: true),
    ]

    /// A give-back does not count against the maximum (which saturates) and is counted.
    /// The function that gives back chosen attempts: its signature and the rows it takes,
    /// the same in every version that defines it.
    static let giveBackAttempts = (
        signature: "durable_give_back_attempts(p_worker text, p_ids bigint[], p_attempts integer[], p_reason text)",
        selection: """
            SELECT d.* FROM durable_operations d
            JOIN unnest(p_ids, p_attempts) AS a(id, attempt) ON d.id = a.id AND d.attempt = a.attempt
            WHERE d.worker = p_worker AND d.state = 'running'
            ORDER BY d.id FOR UPDATE OF d
            """
    )

    static let givenBackCount =
        "max_attempts = CASE WHEN max_attempts < 9223372036854775807 THEN max_attempts + 1 ELSE max_attempts END, given_back = given_back + 1"

    /// What holds a key: an unfinished operation whose cancel was not requested (the key
    /// index's condition, and the enqueue's lookup).
    static let keyHolder = "key IS NOT NULL AND state IN ('waiting', 'ready', 'running') AND cancel_reason IS NULL"

    // A running operation whose cancel was requested takes no new callers: it leaves the key's
    // index when the cancel is requested, and the next add under the key stores a fresh
    // operation, which holds the key beside the doomed one until that one ends.
    static let version5: [String] = [
        "DROP INDEX durable_operations_key",
        "CREATE UNIQUE INDEX durable_operations_key ON durable_operations (queue, key) WHERE \(keyHolder)",
        enqueueFunction(create: "CREATE OR REPLACE FUNCTION", dependencyLock: "FOR KEY SHARE", keyHolder: keyHolder),
    ]

    // A batch's successes release their dependents together: one update of each dependent's
    // counter per batch, in the order of their ids, instead of one per finished dependency.
    // Each update leaves a row version that later ones step over until it is pruned, so a
    // fan-in's sink updated once per leaf made a finish cost more the more leaves finished
    // before it.
    static let version4: [String] = [
        finishAttemptFunction(
            create: "CREATE OR REPLACE FUNCTION",
            delay: "coalesce(o.retry_delays[o.attempt - (o.max_attempts - 1 - coalesce(array_length(o.retry_delays, 1), 0))], 0)",
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
            signature: giveBackAttempts.signature, selection: giveBackAttempts.selection),
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
            delay: "coalesce(o.retry_delays[o.attempt - (o.max_attempts - 1 - coalesce(array_length(o.retry_delays, 1), 0))], 0)"),
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
        finishAttemptFunction(create: "CREATE FUNCTION", delay: "coalesce(o.retry_delays[o.attempt], 0)"),
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
