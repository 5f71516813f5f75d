"""A step's put, get or lock of several messages is one journal row (``count`` of them,
their ids in ``detail["messages"]``), not one row per message: a column ``count``, 1 for
every row written before. Added with ``ALTER TABLE ... ADD COLUMN ... DEFAULT 1`` on both
dialects: SQLite would otherwise copy the whole journal into a new table (Django remakes a
table to add a column that is not null), and PostgreSQL stores the default once."""

from django.db import migrations, models

TABLE = "transactions_journalevent"


def forwards(apps, schema_editor):
    kind = "integer" if schema_editor.connection.vendor == "postgresql" else "integer unsigned"
    schema_editor.execute(f'ALTER TABLE "{TABLE}" ADD COLUMN "count" {kind} NOT NULL DEFAULT 1 CHECK ("count" >= 0)')


def backwards(apps, schema_editor):
    schema_editor.execute(f'ALTER TABLE "{TABLE}" DROP COLUMN "count"')


class Migration(migrations.Migration):
    dependencies = [("transactions", "0005_journal_at_unindexed")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="journalevent",
                    name="count",
                    field=models.PositiveIntegerField(
                        default=1,
                        help_text="How many events of its kind the row stands for: a step's put, get or lock's messages.",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
