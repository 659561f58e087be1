// The store's functions that several schema versions create, as templates of their statements.
#if PostgreSQL

extension PostgresSchema {
    /// The enqueue function, with the lock it takes on the dependencies' rows and the condition
    /// on an operation (columns unqualified) that holds its key: the key index's.
    /// `storesBackoff`: takes the maximum as a `bigint` and the retry's formula (a function of
    /// its own, beside the one without them).
    static func enqueueFunction(
        create: String, dependencyLock: String, keyHolder: String = "key IS NOT NULL AND state IN ('waiting', 'ready', 'running')",
        storesBackoff: Bool = false
    ) -> String {
        """
        \(create) durable_enqueue(
            p_queue text, p_kind text, p_input text, p_priority integer, p_key text, p_not_before timestamptz,
            p_max_attempts \(storesBackoff ? "bigint" : "integer"), p_delays double precision[], \(storesBackoff
                ? "p_retry_initial double precision, p_retry_multiplier double precision, p_retry_maximum double precision, p_retry_jittered boolean, "
                : "")p_dependencies bigint[], p_runs_anyway boolean)
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
                WHERE o.queue = p_queue AND o.key = p_key AND \(keyHolder);
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
                pending_dependencies, runs_anyway, max_attempts, retry_delays, \(storesBackoff
                    ? "retry_initial, retry_multiplier, retry_maximum, retry_jittered, " : "")cancel_reason, finished_at)
            VALUES (p_queue, p_kind, p_input, v_state, p_priority, p_key, coalesce(p_not_before, clock_timestamp()),
                v_pending, p_runs_anyway, p_max_attempts, p_delays, \(storesBackoff
                    ? "p_retry_initial, p_retry_multiplier, p_retry_maximum, p_retry_jittered, " : "")v_cancel,
                CASE WHEN v_cancel IS NOT NULL THEN clock_timestamp() END)
            ON CONFLICT (queue, key) WHERE \(keyHolder) DO NOTHING
            RETURNING o.id INTO v_id;
            IF v_id IS NULL THEN
                -- Another transaction added the same key first.
                SELECT o.id INTO v_id FROM durable_operations o
                WHERE o.queue = p_queue AND o.key = p_key AND \(keyHolder);
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

    /// A give-back function: `selection` picks, and locks, the rows it gives back; `counts`
    /// is how a give-back is counted (assignments of the operation's columns).
    static func giveBackFunction(
        create: String = "CREATE FUNCTION", signature: String, selection: String,
        counts: String = "max_attempts = max_attempts + 1"
    ) -> String {
        """
        \(create) \(signature) RETURNS void
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
                        \(counts) WHERE id = o.id;
                    PERFORM pg_notify('operations_durable', 'w:' || o.queue);
                END IF;
            END LOOP;
        END $$
        """
    }

    /// The function that ends an attempt; `delay` is the retry's wait, in seconds; a failure
    /// is retried while `retries` holds.
    static func finishAttemptFunction(
        create: String, delay: String, retries: String = "o.attempt < o.max_attempts", settlesSuccess: Bool = true
    ) -> String {
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
            ELSIF v_outcome = 'failed' AND \(retries) THEN
                v_delay := \(delay);
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
}
#endif
