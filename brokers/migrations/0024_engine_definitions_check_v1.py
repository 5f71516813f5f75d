"""PostgreSQL: ``baton_definitions_check_v1(version)``, the check a begin sends with its
writes (``brokers.dialects.postgresql.definitions_check``): it raises the engine's BT106
(``transactions.dialects.postgresql.ENGINE_ERRORS``) unless the definitions version is still
``version``, so the step is undone and the caller reads its cache again and begins again.
Takes no lock.

It replaces ``baton_require`` (transactions migration 0007, brokers migration 0010), the
guard of the put, the get and the begin, which no statement calls any more: dropped here
(put back when this migration is undone)."""

from django.db import migrations

CHECK = """
CREATE FUNCTION baton_definitions_check_v1(p_version bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT version FROM brokers_definitionsversion WHERE id = 1) IS DISTINCT FROM p_version THEN
        RAISE EXCEPTION USING ERRCODE = 'BT106', MESSAGE = 'The definitions changed.';
    END IF;
END
$$
"""

#: As transactions migration 0007 and brokers migration 0010 made it.
REQUIRE = """
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
        schema_editor.execute(CHECK)
        schema_editor.execute("DROP FUNCTION IF EXISTS baton_require(boolean, text)")


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(REQUIRE)
        schema_editor.execute("DROP FUNCTION IF EXISTS baton_definitions_check_v1(bigint)")


class Migration(migrations.Migration):
    dependencies = [("brokers", "0023_engine_get_v1"), ("transactions", "0007_baton_require")]

    operations = [migrations.RunPython(forwards, backwards)]
