"""PostgreSQL: the unordered destructive get as one server-side function, version 1
(docs/design.md, "The engine on PostgreSQL"). It replaces the get's guard (``baton_require``)
and its fall-back to the get's statements: a get it serves on PostgreSQL always calls it,
deferred, so that it travels with its ``BEGIN`` and ``COMMIT`` in one round trip. Errors are
raised with the engine's own SQLSTATEs (``transactions.dialects.postgresql.ENGINE_ERRORS``).

* ``baton_get_v1(version, queue_id, broker, queue, txn, begun, deadline, user_id,
  begun_user, now, limit, priority_first, commit_ordered, msg_id, correl_id, group_id,
  stripe, reports, channel)``: the definitions version must still be ``version`` (BT106:
  the caller's cache is stale; it reads them again and calls again); the named unit of work
  (``txn``, if any) locked and checked as ``baton_put_v1`` checks it (BT101, BT102, BT105,
  BT103); no other consumer's exclusive input on the queue (BT108); no unit of work past its
  deadline holding the queue's messages (BT109, its id the detail: the caller rolls it back
  and calls again); no peek-lock on the queue run out (BT110: the caller releases them and
  calls again). Then up to ``limit`` messages chosen in delivery order and locked ``FOR
  UPDATE SKIP LOCKED``; when one asks for reports and ``reports`` is false, BT111 (the
  caller calls again with it true, reading the answer before its ``COMMIT`` to send the
  reports or mark the unit of work). Then, in one statement, the chosen rows deleted (a final
  get: its room given back on release row ``stripe``, and with ``channel`` the queue's
  wake-up key notified) or marked gotten by ``txn`` or ``begun`` (delivery count + 1; the
  unit of work ``begun`` written with its begin event if it took any), with the journal's
  get event. Answers the messages taken, in no order.

One static statement per delivery order (priority first or not, commit order or put order),
and one per id a get matches by (through that id's index): each planned once per connection
and kept (a statement built at each call is planned at each call). Lock order (docs/concurrency.md): transaction
row → message rows (``SKIP LOCKED``) → release row."""

from django.db import migrations

#: ``put_time`` as Python's ``isoformat()`` writes it (UTC, microseconds only when not zero).
_ISO = (
    "to_char(d.put_time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')"
    " || CASE WHEN to_char(d.put_time, 'US') = '000000' THEN '' ELSE '.' || to_char(d.put_time, 'US') END"
    " || '+00:00'"
)

#: What every unordered get may take (the choice's common conditions).
_FREE = (
    "queue_id = p_queue_id AND get_transaction_id IS NULL AND lock_token IS NULL"
    " AND (expires_at IS NULL OR expires_at > p_now)"
)
#: A put-ordered queue's messages whose put is committed.
_PUT_COMMITTED = (
    "(put_transaction_id IS NULL"
    " OR (SELECT pt.state FROM transactions_transaction pt WHERE pt.id = put_transaction_id) = 'committed')"
)


#: The journal's get event of the rows ``d`` took (none when it took none), as
#: ``journal_step_event`` writes it: one message's own row, or several in delivery order.
#: ``{taker}``: the unit of work's id, or ``''``.
_EVENT = (
    "SELECT p_now, 'get', p_broker, p_queue, {taker}, CASE WHEN COUNT(*) = 1 THEN MIN(x.msg_id) ELSE '' END,"
    " CASE WHEN COUNT(*) = 1 THEN jsonb_build_object('put_time', MIN(x.iso), 'preemptive', false)"
    " ELSE jsonb_build_object('messages', jsonb_agg(jsonb_build_object("
    "'msg_id', x.msg_id, 'put_time', x.iso, 'preemptive', false)"
    " ORDER BY CASE WHEN p_priority_first THEN x.priority END DESC,"
    " CASE WHEN p_commit_ordered THEN x.commit_seq ELSE x.id END)) END, COUNT(*)"
    f" FROM (SELECT d.*, {_ISO} AS iso FROM d) x HAVING COUNT(*) > 0"
)


#: A get that matches an id: the queue's order and committed puts, whatever the order.
_MATCHED = f"CASE WHEN p_commit_ordered THEN commit_seq IS NOT NULL ELSE {_PUT_COMMITTED} END"
_MATCHED_ORDER = (
    "CASE WHEN p_priority_first THEN priority END DESC, CASE WHEN p_commit_ordered THEN commit_seq ELSE id END"
)


def _choose(where: str, order: str) -> str:
    return (
        f"v_ctids := ARRAY(SELECT ctid FROM brokers_message WHERE {_FREE} AND {where}"
        f" ORDER BY {order} LIMIT p_limit FOR UPDATE SKIP LOCKED);"
    )


GET = f"""
CREATE FUNCTION baton_get_v1(p_version bigint, p_queue_id integer, p_broker text, p_queue text, p_txn text,
                             p_begun text, p_deadline timestamptz, p_user_id integer, p_begun_user integer,
                             p_now timestamptz, p_limit integer, p_priority_first boolean, p_commit_ordered boolean,
                             p_msg_id text, p_correl_id text, p_group_id text, p_stripe integer, p_reports boolean,
                             p_channel text)
RETURNS SETOF brokers_message
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r transactions_transaction;
    v_queue record;
    v_overdue text;
    v_ctids tid[];
    v_taker text := COALESCE(p_txn, p_begun);
BEGIN
    IF (SELECT version FROM brokers_definitionsversion WHERE id = 1) IS DISTINCT FROM p_version THEN
        RAISE EXCEPTION USING ERRCODE = 'BT106', MESSAGE = 'The definitions changed.';
    END IF;
    IF p_txn IS NOT NULL THEN
        SELECT * INTO r FROM transactions_transaction WHERE id = p_txn FOR UPDATE;
        IF NOT FOUND OR (p_user_id IS NOT NULL AND r.user_id IS DISTINCT FROM p_user_id
                         AND NOT EXISTS (SELECT 1 FROM brokers_grant g WHERE g.user_id = p_user_id
                                          AND g.broker = r.broker AND g.queue = '' AND g.may_admin)) THEN
            RAISE EXCEPTION USING ERRCODE = 'BT101', MESSAGE = 'No transaction ' || p_txn || '.';
        END IF;
        IF r.state = 'rolled_back' THEN
            RAISE EXCEPTION USING ERRCODE = 'BT102', MESSAGE = 'Transaction ' || p_txn || ' was rolled back.',
                DETAIL = r.reason;
        END IF;
        IF r.state <> 'active' THEN
            RAISE EXCEPTION USING ERRCODE = 'BT105',
                MESSAGE = 'Transaction ' || p_txn || ' is ' || r.state || '; no more work can be added to it.',
                DETAIL = r.state;
        END IF;
        IF r.broker <> p_broker THEN
            RAISE EXCEPTION USING ERRCODE = 'BT105',
                MESSAGE = 'Transaction ' || p_txn || ' belongs to broker ' || r.broker || ', not ' || p_broker || '.';
        END IF;
        IF r.deadline_at IS NOT NULL AND r.deadline_at <= p_now THEN
            RAISE EXCEPTION USING ERRCODE = 'BT103', MESSAGE = 'Transaction ' || p_txn || ' is past its deadline.';
        END IF;
    END IF;
    SELECT exclusive_holder, exclusive_until INTO v_queue FROM brokers_queue WHERE id = p_queue_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'BT106', MESSAGE = 'The definitions changed.';
    END IF;
    IF v_queue.exclusive_holder <> '' AND v_queue.exclusive_until IS NOT NULL AND v_queue.exclusive_until > p_now THEN
        RAISE EXCEPTION USING ERRCODE = 'BT108', MESSAGE = 'The queue is open for exclusive input.',
            DETAIL = jsonb_build_object('broker', p_broker, 'queue', p_queue)::text;
    END IF;
    -- what the get must settle first, read without locks through the open-deadline and
    -- lock-expiry indexes (only units of work and locks already run out are read)
    SELECT o.id INTO v_overdue FROM transactions_transaction o
     WHERE o.state IN ('active', 'commit_held') AND o.deadline_at <= p_now
       AND (EXISTS (SELECT 1 FROM brokers_message m WHERE m.get_transaction_id = o.id AND m.queue_id = p_queue_id)
            OR EXISTS (SELECT 1 FROM brokers_message m WHERE m.put_transaction_id = o.id AND m.queue_id = p_queue_id))
     LIMIT 1;
    IF v_overdue IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'BT109', MESSAGE = 'A unit of work past its deadline holds the queue.',
            DETAIL = v_overdue;
    END IF;
    IF EXISTS (SELECT 1 FROM brokers_message m WHERE m.lock_token IS NOT NULL AND m.locked_until <= p_now
                AND +m.queue_id = p_queue_id AND COALESCE(m.get_transaction_id, '') = '') THEN
        RAISE EXCEPTION USING ERRCODE = 'BT110', MESSAGE = 'A peek-lock on the queue ran out.';
    END IF;
    IF p_msg_id IS NOT NULL THEN  -- a get that matches: through the match's index, then sorted
        {
    _choose(
        _MATCHED + " AND msg_id = p_msg_id AND (p_correl_id IS NULL OR correl_id = p_correl_id)"
        " AND (p_group_id IS NULL OR group_id = p_group_id)",
        _MATCHED_ORDER,
    )
}
    ELSIF p_correl_id IS NOT NULL THEN
        {
    _choose(_MATCHED + " AND correl_id = p_correl_id AND (p_group_id IS NULL OR group_id = p_group_id)", _MATCHED_ORDER)
}
    ELSIF p_group_id IS NOT NULL THEN
        {_choose(_MATCHED + " AND group_id = p_group_id", _MATCHED_ORDER)}
    ELSIF p_priority_first AND p_commit_ordered THEN
        {_choose("commit_seq IS NOT NULL", "priority DESC, commit_seq")}
    ELSIF p_priority_first THEN
        {_choose(_PUT_COMMITTED, "priority DESC, id")}
    ELSIF p_commit_ordered THEN
        {_choose("commit_seq IS NOT NULL", "commit_seq")}
    ELSE
        {_choose(_PUT_COMMITTED, "id")}
    END IF;
    IF NOT p_reports
       AND EXISTS (SELECT 1 FROM brokers_message WHERE ctid = ANY(v_ctids) AND report <> '[]'::jsonb) THEN
        RAISE EXCEPTION USING ERRCODE = 'BT111', MESSAGE = 'A message chosen asks for reports.';
    END IF;
    IF v_taker IS NULL THEN  -- a final get: the rows gone, their room given back
        RETURN QUERY
        WITH d AS (DELETE FROM brokers_message m WHERE m.ctid = ANY(v_ctids) RETURNING m.*),
        r AS (INSERT INTO brokers_queuerelease (queue_id, stripe, released)
              SELECT p_queue_id, p_stripe, COUNT(*) FROM d HAVING COUNT(*) > 0
              ON CONFLICT (queue_id, stripe) DO UPDATE SET released = brokers_queuerelease.released + excluded.released),
        j AS (INSERT INTO transactions_journalevent (at, kind, broker, queue, transaction_id, msg_id, detail, count)
              {_EVENT.format(taker="''")})
        SELECT * FROM d;
        IF FOUND AND p_channel IS NOT NULL THEN  -- delivered at commit
            PERFORM pg_notify(p_channel, 'queue:' || p_queue_id);
        END IF;
    ELSE  -- under a unit of work: the rows marked gotten; the unit of work begun, if asked
        RETURN QUERY
        WITH d AS (UPDATE brokers_message m SET get_transaction_id = v_taker, delivery_count = m.delivery_count + 1
                    WHERE m.ctid = ANY(v_ctids) RETURNING m.*),
        u AS (INSERT INTO transactions_transaction (id, broker, state, reason, owner, marks, created_at, deadline_at,
                                                    user_id)
              SELECT p_begun, p_broker, 'active', '', '', '[]'::jsonb, p_now, p_deadline, p_begun_user
               WHERE p_begun IS NOT NULL AND EXISTS (SELECT 1 FROM d)),
        j AS (INSERT INTO transactions_journalevent (at, kind, broker, queue, transaction_id, msg_id, detail, count)
              SELECT at, kind, broker, queue, transaction_id, msg_id, detail, count FROM (
                  SELECT 1 AS o, p_now AS at, 'begin' AS kind, p_broker AS broker, '' AS queue,
                         p_begun AS transaction_id, '' AS msg_id, '{{}}'::jsonb AS detail, 1 AS count
                   WHERE p_begun IS NOT NULL AND EXISTS (SELECT 1 FROM d)
                  UNION ALL
                  SELECT 2, * FROM ({_EVENT.format(taker="v_taker")}) g) e
              ORDER BY o)
        SELECT * FROM d;
    END IF;
END
$$
"""

FUNCTIONS = (
    (
        "baton_get_v1(bigint, integer, text, text, text, text, timestamptz, integer, integer, timestamptz, integer,"
        " boolean, boolean, text, text, text, integer, boolean, text)",
        GET,
    ),
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
    dependencies = [("brokers", "0022_engine_put_v1")]

    operations = [migrations.RunPython(forwards, backwards)]
