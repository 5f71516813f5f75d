"""The unit-of-work table writes fewer index entries per unit of work (docs/performance.md,
"Counting what a unit of work writes"): no index entry for units of work without a cause
(the cause index is partial) or for their user (no index: a user's deletion reads the
table once), and on PostgreSQL none of the ``varchar_pattern_ops`` copies Django adds
beside indexes of text columns, which only ``LIKE`` would use, for the id, the broker, the
cause and the two ends of a link. Only indexes change; rows and columns stay as they are,
so the migration is the same on a fresh database and on one made by earlier versions."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

#: Dropped on both databases (Django's names for the former foreign-key indexes).
DROPPED = ("transactions_transaction_cause_id_270b1dae", "transactions_transaction_user_id_b9ecc248")
#: Dropped on PostgreSQL: the LIKE-only copies.
DROPPED_POSTGRES = (
    "transactions_transaction_id_2a7499fd_like",
    "transactions_transaction_broker_6c2af26f_like",
    "transactions_transaction_cause_id_270b1dae_like",
    "transactions_link_downstream_id_432f591d_like",
    "transactions_link_upstream_id_f251b587_like",
)
CAUSE = 'CREATE INDEX "txn_cause" ON "transactions_transaction" ("cause_id") WHERE "cause_id" IS NOT NULL'


def forwards(apps, schema_editor):
    names = DROPPED + (DROPPED_POSTGRES if schema_editor.connection.vendor == "postgresql" else ())
    for name in names:
        schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')
    schema_editor.execute(CAUSE)


def backwards(apps, schema_editor):
    schema_editor.execute('DROP INDEX IF EXISTS "txn_cause"')
    schema_editor.execute(
        'CREATE INDEX "transactions_transaction_cause_id_270b1dae" ON "transactions_transaction" ("cause_id")'
    )
    schema_editor.execute(
        'CREATE INDEX "transactions_transaction_user_id_b9ecc248" ON "transactions_transaction" ("user_id")'
    )


class Migration(migrations.Migration):
    dependencies = [
        ("transactions", "0002_transaction_user"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="transaction",
                    name="cause",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        help_text="The upstream transaction whose rollback cascaded to this one.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="transactions.transaction",
                    ),
                ),
                migrations.AlterField(
                    model_name="transaction",
                    name="user",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        help_text="The user who began it, who alone (with superusers and the broker's admins) may act "
                        "on it; empty for units of work begun by channel agents and other system code.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AddIndex(
                    model_name="transaction",
                    index=models.Index(
                        condition=models.Q(("cause__isnull", False)), fields=["cause"], name="txn_cause"
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
