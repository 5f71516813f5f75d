"""A link is one write fewer twice over: its id is the table's rowid on SQLite (no
``sqlite_sequence`` write at each pre-emptive get: ``RowIdField``; nothing refers to a link's
id), and ``upstream`` loses its own index, since ``link_unique`` (upstream, downstream,
resource) leads with it and serves every look-up by upstream. PostgreSQL keeps its identity
column; only the index goes. On SQLite the table is rebuilt with its rows."""

import django.db.models.deletion
import transactions.models
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("transactions", "0007_baton_require"),
    ]

    operations = [
        migrations.AlterField(
            model_name="link",
            name="id",
            field=transactions.models.RowIdField(primary_key=True, serialize=False),
        ),
        migrations.AlterField(
            model_name="link",
            name="upstream",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="downstream_links",
                to="transactions.transaction",
            ),
        ),
    ]
