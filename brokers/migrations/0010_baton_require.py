"""PostgreSQL: ``baton_require(ok, what)``, the guard a step sends among its other
statements when it acts before it has read what decides whether it may (a put that trusts
the definitions cache, ``brokers.queries.put_guard``). It raises an error with its own
SQLSTATE (``brokers.queries.GUARD_SQLSTATE``) when ``ok`` is not true, so the statements
after it in the same round trip, the ``COMMIT`` among them, do not run and the step is
undone; the caller then runs the operation the careful way, which says why. SQLite has no
use for it (its statements are not sent in groups)."""

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
DROP = "DROP FUNCTION IF EXISTS baton_require(boolean, text)"


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("brokers", "0009_get_indexes_without_put_transaction")]

    operations = [migrations.RunPython(forwards, backwards)]
