"""Which pass of the suite this is, and what a property or state machine run in both passes
explores in each (docs/testing.md).

The SQLite pass explores a model with the full number of Hypothesis examples. The
PostgreSQL pass runs the same rules and invariants on the other database's SQL, row locks
and isolation, with fewer examples: the search over sequences of operations is the same
code whatever the database, so repeating it in full there finds nothing the first pass does
not, while each example still checks every invariant after every step."""

from __future__ import annotations

import os

#: True in the PostgreSQL pass (platform/test sets DATABASE_URL to its server).
ON_POSTGRES = os.environ.get("DATABASE_URL", "").startswith("postgres")


def examples(sqlite: int, *, postgres: int) -> int:
    """Hypothesis ``max_examples`` for this pass: ``sqlite`` in the SQLite pass, ``postgres``
    in the PostgreSQL pass."""
    return postgres if ON_POSTGRES else sqlite
