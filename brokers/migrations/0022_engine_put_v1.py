"""PostgreSQL: the put's checks and reservation as one server-side function, version 1
(docs/design.md, "The engine on PostgreSQL"). It replaces the put's guard (``baton_require``)
and its "careful way": a put on PostgreSQL always calls it, deferred, so that it travels with
the put's rows, its journal events and its ``COMMIT`` in one round trip unless the put needs
its answer first (commit sequences, the unit of work's marks). Errors are raised with the
engine's own SQLSTATEs (``transactions.dialects.postgresql.ENGINE_ERRORS``).

* ``baton_put_v1(version, txn, broker, user_id, now, queue_id, count, commit_count)``:
  the definitions version must still be ``version`` (BT106: the caller's cache is stale;
  it reads them again and puts again); the named unit of work (``txn``, if any) locked and
  checked as ``transactions.manager.transaction_for_operation`` and
  ``brokers.permissions.require_transaction_owner`` check it (BT101 not found, or someone
  else's for ``user_id`` without admin on its broker; BT102 rolled back; BT105 not active or
  of another broker; BT103 past its deadline); then, when ``count`` > 0, room for ``count``
  messages and ``commit_count`` commit sequences reserved on the queue (BT107: full).
  Answers the first commit sequence handed out and the unit of work's row.

Lock order (docs/concurrency.md): transaction row → queue row."""

from django.db import migrations

PUT = """
CREATE FUNCTION baton_put_v1(p_version bigint, p_txn text, p_broker text, p_user_id integer, p_now timestamptz,
                             p_queue_id integer, p_count integer, p_commit_count integer)
RETURNS TABLE (base bigint, t transactions_transaction)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r transactions_transaction;
    v_base bigint;
    v_queue record;
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
    IF p_count > 0 THEN
        UPDATE brokers_queue SET reserved_depth = reserved_depth + p_count, next_commit_seq = next_commit_seq + p_commit_count
         WHERE id = p_queue_id
           AND reserved_depth + p_count
               - (SELECT COALESCE(SUM(released), 0) FROM brokers_queuerelease WHERE queue_id = p_queue_id) <= max_depth
        RETURNING next_commit_seq - p_commit_count INTO v_base;
        IF NOT FOUND THEN
            SELECT q.name, b.name AS broker, q.max_depth INTO v_queue
              FROM brokers_queue q JOIN brokers_broker b ON b.id = q.broker_id WHERE q.id = p_queue_id;
            RAISE EXCEPTION USING ERRCODE = 'BT107', MESSAGE = 'Queue is full.',
                DETAIL = jsonb_build_object('broker', v_queue.broker, 'queue', v_queue.name,
                                            'max_depth', v_queue.max_depth)::text;
        END IF;
    END IF;
    RETURN QUERY SELECT v_base, r;
END
$$
"""

FUNCTIONS = (("baton_put_v1(bigint, text, text, integer, timestamptz, integer, integer, integer)", PUT),)


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for _, create in FUNCTIONS:
            schema_editor.execute(create)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for signature, _ in reversed(FUNCTIONS):
            schema_editor.execute(f"DROP FUNCTION IF EXISTS {signature}")


class Migration(migrations.Migration):
    dependencies = [("brokers", "0021_engine_functions_v1")]

    operations = [migrations.RunPython(forwards, backwards)]
