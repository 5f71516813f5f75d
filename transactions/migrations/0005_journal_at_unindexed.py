"""The journal writes no index entry for its time: one event cost an entry in the ``at``
index beside its row, about a WAL page per engine step on SQLite (docs/performance.md,
"What a unit of work writes"). The one reader by time, the dashboard's rates, bounds its
scan by id instead (``transactions.selectors.journal_first_id_since``). Only the index
goes, so the migration is the same on a fresh database and on one made by earlier
versions."""

from django.db import migrations, models

AT_INDEX = "transactions_journalevent_at_09e68393"


def forwards(apps, schema_editor):
    schema_editor.execute(f'DROP INDEX IF EXISTS "{AT_INDEX}"')


def backwards(apps, schema_editor):
    schema_editor.execute(f'CREATE INDEX "{AT_INDEX}" ON "transactions_journalevent" ("at")')


class Migration(migrations.Migration):
    dependencies = [("transactions", "0004_journal_rowid")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(model_name="journalevent", name="at", field=models.DateTimeField()),
            ],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
