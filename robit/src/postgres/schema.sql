-- robit's lock tables and functions, in the schema __SCHEMA__ (the driver's `schema`
-- setting; `robit` by default). The driver runs this file on first use, in one
-- transaction, when its role may create them; otherwise an owner runs it once (see
-- docs/postgres.md) and grants the role what the end of this file lists.
--
-- Every operation is one statement on these tables: a function call or a plain UPDATE,
-- timed by the server's clock (clock_timestamp()), so that nothing lives in a session
-- and any pooled connection, or a transaction-mode pooler, serves every call.

CREATE SCHEMA IF NOT EXISTS __SCHEMA__;

-- One row per held lock (and per lock whose holder stopped renewing, until it is next
-- locked or its lock-delay ends and a release, a force release or an acquire removes
-- it). A release deletes its row.
CREATE TABLE IF NOT EXISTS __SCHEMA__.locks (
    namespace  text        NOT NULL,
    name       bytea       NOT NULL,
    owner      uuid        NOT NULL,
    fence      bigint      NOT NULL,
    expires_at timestamptz NOT NULL,
    lock_delay interval    NOT NULL,
    PRIMARY KEY (namespace, name)
) WITH (fillfactor = 50);

-- The fencing counters: 1,024 rows per namespace at most, one per bucket of lock names,
-- so that grants of different names rarely wait for one another, and no row is kept
-- per name. A grant's token is the larger of its bucket's last token plus one and the
-- server's clock in microseconds.
CREATE TABLE IF NOT EXISTS __SCHEMA__.fences (
    namespace text     NOT NULL,
    bucket    smallint NOT NULL,
    last      bigint   NOT NULL,
    PRIMARY KEY (namespace, bucket)
) WITH (fillfactor = 50);

-- Waiting lock() calls, first come first served. An entry lives while its waiter keeps
-- asking (four poll intervals, at least a second, after its last attempt).
CREATE TABLE IF NOT EXISTS __SCHEMA__.waiters (
    namespace  text        NOT NULL,
    name       bytea       NOT NULL,
    waiter     uuid        NOT NULL,
    queued_at  timestamptz NOT NULL,
    live_until timestamptz NOT NULL,
    PRIMARY KEY (namespace, name, waiter)
);

-- One row per namespace: the server its state was last written on (the cluster's system
-- identifier and the timeline it writes on, which a promotion or a restore from a
-- backup changes), and the quarantine that began when an acquire found another.
CREATE TABLE IF NOT EXISTS __SCHEMA__.namespaces (
    namespace        text        PRIMARY KEY,
    server           text        NOT NULL,
    quarantine_until timestamptz NOT NULL
);

-- The server answering: its system identifier and its current timeline. The identifier
-- is read once per session (pg_control_system() reads the control file from disk) and
-- kept in a setting of the session's: a session never moves to another server.
CREATE OR REPLACE FUNCTION __SCHEMA__.server_v1()
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    v_system text := current_setting('robit.system_identifier', true);
BEGIN
    IF v_system IS NULL OR v_system = '' THEN
        SELECT s.system_identifier::text INTO v_system FROM pg_control_system() s;
        PERFORM set_config('robit.system_identifier', v_system, false);
    END IF;
    RETURN v_system || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8);
END
$fn$;

-- When the namespace's quarantine ends: it begins (or goes on) when the namespace's state
-- was written on another server than this one, for `p_quarantine_ms`, and this server is
-- recorded; a new namespace is recorded without one.
CREATE OR REPLACE FUNCTION __SCHEMA__.quarantine_v1(
    p_namespace text, p_quarantine_ms bigint, p_now timestamptz)
RETURNS timestamptz LANGUAGE plpgsql AS $fn$
DECLARE
    v_here   text := __SCHEMA__.server_v1();
    v_server text;
    v_until  timestamptz;
BEGIN
    SELECT n.server, n.quarantine_until INTO v_server, v_until
      FROM __SCHEMA__.namespaces n
     WHERE n.namespace = p_namespace;
    IF NOT FOUND THEN
        INSERT INTO __SCHEMA__.namespaces (namespace, server, quarantine_until)
        VALUES (p_namespace, v_here, '-infinity')
        ON CONFLICT (namespace) DO NOTHING;
        RETURN '-infinity';
    END IF;
    IF v_server IS DISTINCT FROM v_here THEN
        UPDATE __SCHEMA__.namespaces
           SET server = v_here,
               quarantine_until = greatest(quarantine_until,
                                           p_now + p_quarantine_ms * interval '1 millisecond')
         WHERE namespace = p_namespace
        RETURNING quarantine_until INTO v_until;
    END IF;
    RETURN v_until;
END
$fn$;

-- Queues (or keeps queued) a waiter; nothing for a single try (no waiter). (Functions
-- here are PL/pgSQL, whose plans a session keeps; an SQL function is planned anew at
-- every call from another function.)
CREATE OR REPLACE FUNCTION __SCHEMA__.queue_v1(
    p_namespace text, p_name bytea, p_waiter uuid, p_retry_ms bigint, p_now timestamptz)
RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    IF p_waiter IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO __SCHEMA__.waiters AS w (namespace, name, waiter, queued_at, live_until)
    VALUES (p_namespace, p_name, p_waiter, p_now,
            p_now + greatest(4 * p_retry_ms, 1000) * interval '1 millisecond')
    ON CONFLICT (namespace, name, waiter) DO UPDATE SET live_until = EXCLUDED.live_until;
END
$fn$;

-- Tells the first live waiter of a lock, if any, that it is free: a notification on
-- the channel __SCHEMA__ whose payload is the waiter's id (32 hex digits).
CREATE OR REPLACE FUNCTION __SCHEMA__.wake_v1(p_namespace text, p_name bytea)
RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
    v_waiter uuid;
BEGIN
    SELECT w.waiter INTO v_waiter
      FROM __SCHEMA__.waiters w
     WHERE w.namespace = p_namespace AND w.name = p_name
       AND w.live_until > clock_timestamp()
     ORDER BY w.queued_at, w.waiter
     LIMIT 1;
    IF FOUND THEN
        PERFORM pg_notify('__SCHEMA__', replace(v_waiter::text, '-', ''));
    END IF;
END
$fn$;

-- One acquire attempt. Answers (1, token, NULL) granted; (2, NULL, ms) held, and for
-- how long at most unless renewed (its lock-delay included); (2, NULL, NULL) free but
-- promised to a waiter that queued first; (3, NULL, ms) quarantined for that long. A
-- waiter is queued (or kept queued) when it is not granted. With `p_quarantine_ms`
-- NULL, the server is not checked.
CREATE OR REPLACE FUNCTION __SCHEMA__.acquire_v1(
    p_namespace text, p_name bytea, p_bucket smallint, p_owner uuid,
    p_ttl_ms bigint, p_delay_ms bigint, p_waiter uuid, p_retry_ms bigint,
    p_quarantine_ms bigint, p_lock_timeout_ms bigint,
    OUT status smallint, OUT fence bigint, OUT left_ms bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
    v_now    timestamptz := clock_timestamp();
    v_until  timestamptz;
    v_mine   timestamptz;
    v_queued bigint;
BEGIN
    -- A grant is acknowledged only once it is on disk (and on a synchronous standby, if
    -- one is configured), whatever the session's setting: a crash must not lose one.
    PERFORM set_config('synchronous_commit', 'on', true);
    -- A row lock waited for longer than the caller waits (behind a guarded commit, say)
    -- fails the attempt rather than granting after the caller gave up.
    PERFORM set_config('lock_timeout', p_lock_timeout_ms::text, true);
    IF p_quarantine_ms IS NOT NULL THEN
        v_until := __SCHEMA__.quarantine_v1(p_namespace, p_quarantine_ms, v_now);
        IF v_until > v_now THEN
            PERFORM __SCHEMA__.queue_v1(p_namespace, p_name, p_waiter, p_retry_ms, v_now);
            status := 3;
            left_ms := ceil(extract(epoch FROM v_until - v_now) * 1000);
            RETURN;
        END IF;
    END IF;
    SELECT l.expires_at + l.lock_delay INTO v_until
      FROM __SCHEMA__.locks l
     WHERE l.namespace = p_namespace AND l.name = p_name
       FOR UPDATE;
    IF v_until > v_now THEN
        PERFORM __SCHEMA__.queue_v1(p_namespace, p_name, p_waiter, p_retry_ms, v_now);
        status := 2;
        left_ms := ceil(extract(epoch FROM v_until - v_now) * 1000);
        RETURN;
    END IF;
    -- Free: the caller's, unless a live waiter queued before it. (The queue is read
    -- once: in the common case, nobody waits.)
    SELECT count(*), max(w.queued_at) FILTER (WHERE w.waiter = p_waiter)
      INTO v_queued, v_mine
      FROM __SCHEMA__.waiters w
     WHERE w.namespace = p_namespace AND w.name = p_name;
    IF v_queued > 0 AND EXISTS (
        SELECT 1 FROM __SCHEMA__.waiters w
         WHERE w.namespace = p_namespace AND w.name = p_name
           AND w.live_until > v_now
           AND w.waiter IS DISTINCT FROM p_waiter
           AND (v_mine IS NULL OR (w.queued_at, w.waiter) < (v_mine, p_waiter))) THEN
        PERFORM __SCHEMA__.queue_v1(p_namespace, p_name, p_waiter, p_retry_ms, v_now);
        status := 2;
        RETURN;
    END IF;
    INSERT INTO __SCHEMA__.fences AS f (namespace, bucket, last)
    VALUES (p_namespace, p_bucket, floor(extract(epoch FROM v_now) * 1000000)::bigint)
    ON CONFLICT (namespace, bucket) DO UPDATE SET last = greatest(f.last + 1, EXCLUDED.last)
    RETURNING f.last INTO fence;
    INSERT INTO __SCHEMA__.locks AS l (namespace, name, owner, fence, expires_at, lock_delay)
    VALUES (p_namespace, p_name, p_owner, fence,
            v_now + p_ttl_ms * interval '1 millisecond',
            p_delay_ms * interval '1 millisecond')
    ON CONFLICT (namespace, name) DO UPDATE
       SET owner = EXCLUDED.owner, fence = EXCLUDED.fence,
           expires_at = EXCLUDED.expires_at, lock_delay = EXCLUDED.lock_delay
     WHERE l.expires_at + l.lock_delay <= v_now;
    IF NOT FOUND THEN
        -- Granted to another caller between the read and the write.
        SELECT l.expires_at + l.lock_delay INTO v_until
          FROM __SCHEMA__.locks l
         WHERE l.namespace = p_namespace AND l.name = p_name;
        PERFORM __SCHEMA__.queue_v1(p_namespace, p_name, p_waiter, p_retry_ms, v_now);
        status := 2;
        fence := NULL;
        left_ms := greatest(ceil(extract(epoch FROM v_until - clock_timestamp()) * 1000), 0);
        RETURN;
    END IF;
    IF v_queued > 0 THEN
        DELETE FROM __SCHEMA__.waiters w
         WHERE w.namespace = p_namespace AND w.name = p_name
           AND (w.waiter = p_waiter OR w.live_until <= v_now);
    END IF;
    status := 1;
END
$fn$;

-- Extends the grant (owner, fence) to `p_ttl_ms` from now, if it is still there and has
-- not ended. Whether it was.
CREATE OR REPLACE FUNCTION __SCHEMA__.renew_v1(
    p_namespace text, p_name bytea, p_owner uuid, p_fence bigint, p_ttl_ms bigint)
RETURNS boolean LANGUAGE plpgsql AS $fn$
BEGIN
    -- A renewal lost in a crash would leave the holder believing in a longer grant than
    -- the server keeps.
    PERFORM set_config('synchronous_commit', 'on', true);
    UPDATE __SCHEMA__.locks
       SET expires_at = clock_timestamp() + p_ttl_ms * interval '1 millisecond'
     WHERE namespace = p_namespace AND name = p_name AND owner = p_owner
       AND fence = p_fence AND expires_at > clock_timestamp();
    RETURN FOUND;
END
$fn$;

-- Deletes the grant (owner, fence) if it is still there, and wakes the next waiter.
-- Whether it was there.
CREATE OR REPLACE FUNCTION __SCHEMA__.release_v1(
    p_namespace text, p_name bytea, p_owner uuid, p_fence bigint)
RETURNS boolean LANGUAGE plpgsql AS $fn$
BEGIN
    DELETE FROM __SCHEMA__.locks
     WHERE namespace = p_namespace AND name = p_name AND owner = p_owner AND fence = p_fence;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM __SCHEMA__.wake_v1(p_namespace, p_name);
    RETURN true;
END
$fn$;

-- Frees a lock by force if `p_holder` holds it or held it and it is in its lock-delay;
-- wakes the next waiter. Whether it freed anything.
CREATE OR REPLACE FUNCTION __SCHEMA__.force_release_v1(
    p_namespace text, p_name bytea, p_holder uuid)
RETURNS boolean LANGUAGE plpgsql AS $fn$
DECLARE
    v_until timestamptz;
BEGIN
    DELETE FROM __SCHEMA__.locks
     WHERE namespace = p_namespace AND name = p_name AND owner = p_holder
    RETURNING expires_at + lock_delay INTO v_until;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM __SCHEMA__.wake_v1(p_namespace, p_name);
    RETURN v_until > clock_timestamp();
END
$fn$;

-- Takes a waiter that gave up out of its queue; if the lock is free, the next waiter
-- may take it now.
CREATE OR REPLACE FUNCTION __SCHEMA__.withdraw_v1(
    p_namespace text, p_name bytea, p_waiter uuid)
RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    DELETE FROM __SCHEMA__.waiters
     WHERE namespace = p_namespace AND name = p_name AND waiter = p_waiter;
    IF FOUND AND NOT EXISTS (
        SELECT 1 FROM __SCHEMA__.locks
         WHERE namespace = p_namespace AND name = p_name
           AND expires_at + lock_delay > clock_timestamp()) THEN
        PERFORM __SCHEMA__.wake_v1(p_namespace, p_name);
    END IF;
END
$fn$;

-- What a role needs, besides USAGE on the schema: on the four tables SELECT, INSERT,
-- UPDATE and DELETE, and EXECUTE on the functions (PUBLIC has it unless revoked).
