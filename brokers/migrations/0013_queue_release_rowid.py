"""A queue's release rows keep their ids as the table's rowid on SQLite (``RowIdField``):
the upsert a get's commit makes on them then writes no ``sqlite_sequence`` page (one page
of the WAL at every such commit). Nothing refers to a release row's id. PostgreSQL: no
change. On SQLite the table is rebuilt with its rows."""

import transactions.models
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("brokers", "0012_message_put_transaction_names_its_unit"),
    ]

    operations = [
        migrations.AlterField(
            model_name="queuerelease",
            name="id",
            field=transactions.models.RowIdField(primary_key=True, serialize=False),
        ),
    ]
