"""PostgreSQL: the engine's commit and rollback as server-side functions, version 1
(docs/design.md, "The engine on PostgreSQL"). One call is one statement, sent with its step's
``BEGIN`` and ``COMMIT`` in one round trip; errors are raised with the engine's own
SQLSTATEs (``transactions.dialects.postgresql.ENGINE_ERRORS`` maps them once to the
project's error classes). A later change adds ``_v2`` functions in a new migration and
leaves these as they are; a function no longer called is dropped by a migration of its own.

* ``baton_messages_commit_v1(ids)``: the message store's part of a commit of a group of
  units of work (``brokers.dialects.postgresql.messages_commit``).
* ``baton_messages_rollback_v1(id, now)``: the message store's part of a rollback that moves
  no message (``brokers.dialects.postgresql.messages_rollback``).
* ``baton_commit_v1(id, now, channel)`` and ``baton_rollback_v1(id, reason, now,
  require_open, channel)``: a whole commit or rollback of one unit of work; for one with
  marks or links (or, rolled back, gets from a queue with a backout threshold) they change
  nothing and answer ``managers``: the resource managers act in Python, then call the
  message store's function above (``transactions.manager``).

Lock order (docs/concurrency.md): link-graph lock → transaction rows → queue rows (id
order) → release rows → message rows. Release rows: ``mod(pg_backend_pid(), 8)`` is the
connection's own (``brokers.dialects.postgresql.RELEASE_STRIPES``). SQLite has no functions:
its dialect modules run the same operations as named statements."""

from django.db import migrations

#: transactions.queries.LINK_GRAPH_LOCK_KEY
GRAPH_LOCK_KEY = 0x62_61_74_6F_6E

MESSAGES_COMMIT = """
CREATE FUNCTION baton_messages_commit_v1(p_ids text[]) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
    v_queues integer[];
    v_first bigint[];
    v_last bigint[];
    v_gets bigint[];
    v_base bigint;
    v_count bigint;
BEGIN
    -- what the group did, per queue: the id range of its puts not gotten inside the group,
    -- and how many messages it got (no lock: the group's rows, held, keep these rows still)
    SELECT array_agg(queue_id ORDER BY queue_id), array_agg(first_id ORDER BY queue_id),
           array_agg(last_id ORDER BY queue_id), array_agg(gets ORDER BY queue_id)
      INTO v_queues, v_first, v_last, v_gets
      FROM (SELECT queue_id, MIN(first_id) AS first_id, MAX(last_id) AS last_id, SUM(gets)::bigint AS gets
              FROM (SELECT m.queue_id, MIN(m.id) AS first_id, MAX(m.id) AS last_id, 0 AS gets
                      FROM brokers_message m WHERE m.put_transaction_id = ANY(p_ids)
                       AND (m.get_transaction_id IS NULL OR m.get_transaction_id <> ALL(p_ids))
                     GROUP BY m.queue_id
                    UNION ALL
                    SELECT m.queue_id, NULL, NULL, COUNT(*) FROM brokers_message m
                     WHERE m.get_transaction_id = ANY(p_ids) GROUP BY m.queue_id) s
             GROUP BY queue_id) t;
    IF v_queues IS NULL THEN
        RETURN '{}';
    END IF;
    IF array_length(v_queues, 1) > 1 THEN  -- several queues: their rows in id order first
        PERFORM 1 FROM brokers_queue WHERE id = ANY(v_queues) ORDER BY id FOR UPDATE;
    END IF;
    -- commit-ordered queues: the puts take commit sequences in put order, the queue's row
    -- locked by the UPDATE that hands them out (so they follow commit order)
    FOR i IN 1 .. array_length(v_queues, 1) LOOP
        IF v_first[i] IS NOT NULL
           AND (SELECT read_order FROM brokers_queue WHERE id = v_queues[i]) = 'commit' THEN
            v_count := v_last[i] - v_first[i] + 1;
            UPDATE brokers_queue SET next_commit_seq = next_commit_seq + v_count WHERE id = v_queues[i]
                RETURNING next_commit_seq - v_count INTO v_base;
            UPDATE brokers_message SET put_transaction_id = NULL, commit_seq = id - v_first[i] + v_base
             WHERE queue_id = v_queues[i] AND put_transaction_id = ANY(p_ids)
               AND (get_transaction_id IS NULL OR get_transaction_id <> ALL(p_ids));
        END IF;
    END LOOP;
    -- gets: their room back on this connection's release rows (queue id order), then gone
    IF EXISTS (SELECT 1 FROM unnest(v_gets) g WHERE g > 0) THEN
        INSERT INTO brokers_queuerelease (queue_id, stripe, released)
            SELECT g.queue_id, mod(pg_backend_pid(), 8), g.n FROM unnest(v_queues, v_gets) AS g(queue_id, n)
             WHERE g.n > 0 ORDER BY g.queue_id
            ON CONFLICT (queue_id, stripe) DO UPDATE SET released = brokers_queuerelease.released + excluded.released;
        DELETE FROM brokers_message WHERE get_transaction_id = ANY(p_ids);
    END IF;
    RETURN ARRAY(SELECT 'queue:' || q FROM unnest(v_queues) q);
END
$$
"""

MESSAGES_ROLLBACK = """
CREATE FUNCTION baton_messages_rollback_v1(p_id text, p_now timestamptz) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
    v_keys text[];
BEGIN
    -- puts: their room back on this connection's release rows (queue id order), then gone
    INSERT INTO brokers_queuerelease (queue_id, stripe, released)
        SELECT queue_id, mod(pg_backend_pid(), 8), COUNT(*) FROM brokers_message WHERE put_transaction_id = p_id
         GROUP BY queue_id ORDER BY queue_id
        ON CONFLICT (queue_id, stripe) DO UPDATE SET released = brokers_queuerelease.released + excluded.released;
    DELETE FROM brokers_message WHERE put_transaction_id = p_id;
    -- gets return, backout count + 1 (a peek-locked message completed under it keeps its
    -- lock and its count), each with the journal's backout event, in id order
    WITH r AS (
        UPDATE brokers_message SET get_transaction_id = NULL,
               backout_count = backout_count + CASE WHEN lock_token IS NULL THEN 1 ELSE 0 END
         WHERE get_transaction_id = p_id RETURNING id, queue_id, msg_id, backout_count, lock_token
    ), j AS (
        INSERT INTO transactions_journalevent (at, kind, broker, queue, transaction_id, msg_id, detail, count)
        SELECT p_now, 'backout', b.name, q.name, p_id, r.msg_id, jsonb_build_object('backout_count', r.backout_count), 1
          FROM r JOIN brokers_queue q ON q.id = r.queue_id JOIN brokers_broker b ON b.id = q.broker_id
         WHERE r.lock_token IS NULL ORDER BY r.id
    )
    SELECT ARRAY(SELECT DISTINCT 'queue:' || queue_id FROM r) INTO v_keys;
    RETURN v_keys;
END
$$
"""

NOTIFY = """
CREATE FUNCTION baton_notify_v1(p_channel text, p_keys text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_payload text := array_to_string(p_keys, ' ');
BEGIN
    IF p_channel IS NOT NULL THEN  -- delivered at commit; one payload has room for 8000 bytes
        PERFORM pg_notify(p_channel, CASE WHEN length(v_payload) <= 7000 THEN v_payload ELSE '*' END);
    END IF;
END
$$
"""

COMMIT = f"""
CREATE FUNCTION baton_commit_v1(p_id text, p_now timestamptz, p_channel text)
RETURNS TABLE (outcome text, keys text[], t transactions_transaction)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r transactions_transaction;
    k text[];
BEGIN
    PERFORM pg_advisory_xact_lock_shared({GRAPH_LOCK_KEY});
    SELECT * INTO r FROM transactions_transaction WHERE id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'BT101', MESSAGE = 'No transaction ' || p_id || '.';
    END IF;
    IF r.state = 'rolled_back' THEN
        RAISE EXCEPTION USING ERRCODE = 'BT102', MESSAGE = 'Transaction ' || p_id || ' was rolled back.',
            DETAIL = r.reason;
    END IF;
    IF r.state = 'committed' THEN
        RETURN QUERY SELECT 'resolved'::text, '{{}}'::text[], r;
        RETURN;
    END IF;
    IF r.marks <> '[]'::jsonb
       OR EXISTS (SELECT 1 FROM transactions_link WHERE upstream_id = p_id OR downstream_id = p_id) THEN
        RETURN QUERY SELECT 'managers'::text, '{{}}'::text[], r;
        RETURN;
    END IF;
    IF r.deadline_at IS NOT NULL AND r.deadline_at <= p_now THEN
        RAISE EXCEPTION USING ERRCODE = 'BT103', MESSAGE = 'Transaction ' || p_id || ' is past its deadline.';
    END IF;
    k := baton_messages_commit_v1(ARRAY[p_id]) || ('txn:' || p_id);
    UPDATE transactions_transaction SET state = 'committed', resolved_at = p_now WHERE id = p_id;
    INSERT INTO transactions_journalevent (at, kind, broker, queue, transaction_id, msg_id, detail, count)
        VALUES (p_now, 'commit', r.broker, '', p_id, '', '{{}}'::jsonb, 1);
    PERFORM baton_notify_v1(p_channel, k);
    r.state := 'committed';
    r.resolved_at := p_now;
    RETURN QUERY SELECT 'done'::text, k, r;
END
$$
"""

ROLLBACK = f"""
CREATE FUNCTION baton_rollback_v1(p_id text, p_reason text, p_now timestamptz, p_require_open boolean, p_channel text)
RETURNS TABLE (outcome text, keys text[], t transactions_transaction)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r transactions_transaction;
    k text[];
BEGIN
    PERFORM pg_advisory_xact_lock_shared({GRAPH_LOCK_KEY});
    SELECT * INTO r FROM transactions_transaction WHERE id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'BT101', MESSAGE = 'No transaction ' || p_id || '.';
    END IF;
    IF r.state = 'committed' AND p_require_open THEN
        RAISE EXCEPTION USING ERRCODE = 'BT104', MESSAGE = 'Transaction ' || p_id || ' has already committed.',
            DETAIL = r.state;
    END IF;
    IF r.state IN ('committed', 'rolled_back') THEN
        RETURN QUERY SELECT 'resolved'::text, '{{}}'::text[], r;
        RETURN;
    END IF;
    IF r.marks <> '[]'::jsonb
       OR EXISTS (SELECT 1 FROM transactions_link WHERE upstream_id = p_id OR downstream_id = p_id)
       OR EXISTS (SELECT 1 FROM brokers_message m JOIN brokers_queue q ON q.id = m.queue_id
                   WHERE m.get_transaction_id = p_id AND q.backout_threshold > 0) THEN
        RETURN QUERY SELECT 'managers'::text, '{{}}'::text[], r;
        RETURN;
    END IF;
    k := baton_messages_rollback_v1(p_id, p_now) || ('txn:' || p_id);
    UPDATE transactions_transaction SET state = 'rolled_back', resolved_at = p_now, reason = p_reason WHERE id = p_id;
    INSERT INTO transactions_journalevent (at, kind, broker, queue, transaction_id, msg_id, detail, count)
        VALUES (p_now, 'rollback', r.broker, '', p_id, '', jsonb_build_object('reason', p_reason), 1);
    PERFORM baton_notify_v1(p_channel, k);
    r.state := 'rolled_back';
    r.resolved_at := p_now;
    r.reason := p_reason;
    RETURN QUERY SELECT 'done'::text, k, r;
END
$$
"""

FUNCTIONS = (
    ("baton_messages_commit_v1(text[])", MESSAGES_COMMIT),
    ("baton_messages_rollback_v1(text, timestamptz)", MESSAGES_ROLLBACK),
    ("baton_notify_v1(text, text[])", NOTIFY),
    ("baton_commit_v1(text, timestamptz, text)", COMMIT),
    ("baton_rollback_v1(text, text, timestamptz, boolean, text)", ROLLBACK),
)


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for _, create in FUNCTIONS:
            schema_editor.execute(create)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for signature, _ in reversed(FUNCTIONS):
            schema_editor.execute(f"DROP FUNCTION IF EXISTS {signature}")


class Migration(migrations.Migration):
    dependencies = [
        ("brokers", "0020_dead_letter_watch"),
        ("transactions", "0010_resolved_index"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
