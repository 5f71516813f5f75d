"""The SQLite trigger statements of 0002 ("the definitions version"), for migrations that must
create them again after rebuilding a watched table (a module name may not start with a digit)."""

import importlib

_initial = importlib.import_module("brokers.migrations.0002_engine_definitions_version_and_indexes")


def sqlite_triggers():
    return _initial._sqlite_triggers()
