"""Room given back on a queue goes to striped release rows (``QueueRelease``), not to the
queue's row, which only puts take now (docs/concurrency.md). A new table: the queue's own
table is not rebuilt (its definitions-version triggers stay), and every queue starts with
no releases, so ``reserved_depth`` keeps its meaning on an existing database."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("brokers", "0010_baton_require"),
    ]

    operations = [
        migrations.AlterField(
            model_name="queue",
            name="reserved_depth",
            field=models.PositiveIntegerField(
                default=0,
                help_text="Room taken by puts (uncommitted included) since it was last folded; less the queue's releases, the messages on it.",
            ),
        ),
        migrations.CreateModel(
            name="QueueRelease",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("stripe", models.PositiveSmallIntegerField()),
                ("released", models.BigIntegerField(default=0)),
                (
                    "queue",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="brokers.queue",
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("queue", "stripe"), name="queue_release_stripe")],
            },
        ),
    ]
