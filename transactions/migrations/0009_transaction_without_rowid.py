"""SQLite: the units of work's table becomes a ``WITHOUT ROWID`` table, kept in its primary
key's order. A rowid table with a text primary key is two b-trees, the rows and an automatic
index from id to rowid: every begin wrote both, and every look-up of a unit of work by id
walked both. Now one b-tree holds the rows by id: a begin writes one page fewer to the WAL,
and a look-up by id is one walk. The same columns, rows and indexes; foreign keys to it
(messages, links, causes) name the same column. PostgreSQL: no change.

Django rebuilds a SQLite table whenever a migration alters one of its columns, and its
rebuild would make a rowid table again: ``tests/transactions/test_migrations_upgrade.py``
checks that the table is ``WITHOUT ROWID`` after every migration, so a later one that
alters ``Transaction`` must say ``WITHOUT ROWID`` again (``rebuilt`` below)."""

from django.db import migrations

TABLE = "transactions_transaction"


def rebuilt(schema_editor, *, without_rowid: bool) -> None:
    """Rebuild the table with or without rowid: the same columns (its own ``CREATE TABLE``
    text), rows and indexes. Django's schema editor has foreign key checks off while it runs
    and checks every foreign key when it ends."""
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as c:
        c.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = %s", [TABLE])
        create = c.fetchone()[0].rstrip()
        c.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = %s AND sql IS NOT NULL", [TABLE])
        indexes = [row[0] for row in c.fetchall()]
        suffix = " WITHOUT ROWID"
        if create.upper().endswith(suffix):
            create = create[: -len(suffix)]
        if without_rowid:
            create += suffix
        c.execute(create.replace(f'CREATE TABLE "{TABLE}"', f'CREATE TABLE "{TABLE}__rebuilt"', 1))
        c.execute(f'INSERT INTO "{TABLE}__rebuilt" SELECT * FROM "{TABLE}"')
        c.execute(f'DROP TABLE "{TABLE}"')
        c.execute(f'ALTER TABLE "{TABLE}__rebuilt" RENAME TO "{TABLE}"')
        for index in indexes:
            c.execute(index)


def forwards(apps, schema_editor):
    rebuilt(schema_editor, without_rowid=True)


def backwards(apps, schema_editor):
    rebuilt(schema_editor, without_rowid=False)


class Migration(migrations.Migration):
    dependencies = [("transactions", "0008_link_rowid_lean")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
