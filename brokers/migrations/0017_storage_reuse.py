"""Space freed is reused (docs/operating.md, "Storage").

- SQLite: ``auto_vacuum=INCREMENTAL``, so that housekeeping can give freed pages back with
  ``PRAGMA incremental_vacuum`` (``brokers/operating/retention.py``). An existing database
  switches only through a ``VACUUM``, which this migration runs once (outside a transaction:
  it rewrites the whole file, so on a large database ``migrate`` takes a while at this step;
  run it with the platform stopped). A database already incremental is left alone.
- PostgreSQL: autovacuum settings for the tables every message writes: vacuumed after a
  small fraction of their rows changed instead of the default fifth, so dead rows of
  gets, commits and retention are reclaimed while the tables are small; the journal
  (append-only until retention) also vacuumed after inserts, so its visibility map stays
  current. Table settings, so the migration applies them; reversing it resets them.
"""

from django.db import migrations

#: table -> autovacuum storage parameters (PostgreSQL)
AUTOVACUUM = {
    "brokers_message": "autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000, "
    "autovacuum_analyze_scale_factor = 0.02",
    # a few rows updated at every put and get: vacuumed after every 1000 dead rows whatever their size
    "brokers_queue": "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000",
    "brokers_queuerelease": "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000",
    "brokers_dedupkey": "autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_threshold = 1000",
    "transactions_transaction": "autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000, "
    "autovacuum_analyze_scale_factor = 0.02",
    "transactions_link": "autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000",
    "transactions_journalevent": "autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_insert_scale_factor = 0.05, "
    "autovacuum_analyze_scale_factor = 0.05",
}


def storage_reuse(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as c:
        if connection.vendor == "sqlite":
            c.execute("PRAGMA auto_vacuum")
            if c.fetchone()[0] != 2:  # 2: incremental
                c.execute("PRAGMA auto_vacuum = INCREMENTAL")
                c.execute("VACUUM")
        elif connection.vendor == "postgresql":
            for table, parameters in AUTOVACUUM.items():
                c.execute(f"ALTER TABLE {table} SET ({parameters})")


def storage_reuse_undone(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return  # SQLite: an incremental database stays so
    with connection.cursor() as c:
        for table, parameters in AUTOVACUUM.items():
            names = ", ".join(part.split("=")[0].strip() for part in parameters.split(","))
            c.execute(f"ALTER TABLE {table} RESET ({names})")


class Migration(migrations.Migration):
    atomic = False  # SQLite's VACUUM runs outside a transaction

    dependencies = [
        ("brokers", "0016_operating_monitor_traffic"),
        ("transactions", "0001_initial"),  # its tables; not the index of 0010, so that 0010 can be undone alone
    ]

    operations = [migrations.RunPython(storage_reuse, storage_reuse_undone)]
