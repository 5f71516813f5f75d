"""On SQLite, 0005 (``auto_define_queues``) rebuilt brokers_broker, which drops the triggers
that keep the definitions version in step (0002, "the definitions version"): create them
again. Idempotent (``IF NOT EXISTS``), so a database whose triggers survived is unchanged;
PostgreSQL's triggers survive ``ADD COLUMN`` and are left alone."""

from django.db import migrations

from brokers.migrations import _definitions_triggers


def triggers_again(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for sql in _definitions_triggers.sqlite_triggers():
        schema_editor.execute(sql.replace("CREATE TRIGGER ", "CREATE TRIGGER IF NOT EXISTS ", 1))


class Migration(migrations.Migration):
    dependencies = [
        ("brokers", "0007_set_context"),
    ]

    operations = [migrations.RunPython(triggers_again, migrations.RunPython.noop)]
