"""PostgreSQL: ``baton_require(ok, what)``, the guard a step sends among its other
statements when it acts before it has read what decides whether it may: a commit sent whole
in one round trip (``transactions.queries.commit_at_once``), as brokers' puts and begins do.
It raises an error with its own SQLSTATE (``transactions.queries.GUARD_SQLSTATE``) when
``ok`` is not true, so the statements after it, the ``COMMIT`` among them, do not run.

Brokers migration 0010 installs the same function; this one makes the transaction manager's
use of it its own (``CREATE OR REPLACE``, the same text). Undoing this migration leaves the
function in place, since brokers' puts use it too (brokers 0010's own undo drops it)."""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION baton_require(ok boolean, what text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION USING ERRCODE = 'BT001', MESSAGE = 'baton: ' || what;
    END IF;
END
$$
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


class Migration(migrations.Migration):
    dependencies = [("transactions", "0006_journal_step_rows")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
