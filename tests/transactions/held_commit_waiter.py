"""A process that waits on a transaction for the cross-process wake-up tests:
``python -m tests.transactions.held_commit_waiter commit|check TXN`` (DATABASE_URL set).
Prints ``listening``, then waits (up to 60 s) in a held commit or a ready-check and prints
the outcome: the transaction's state, or the check's result."""

from __future__ import annotations

import os
import sys


def main() -> None:
    mode, txn = sys.argv[1], sys.argv[2]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from transactions.manager import transaction_check, transaction_commit
    from transactions.wakeup_bus import wakeup_bus

    bus = wakeup_bus()
    bus.listen()
    print("listening", flush=True)
    if mode == "commit":
        print(transaction_commit(transaction_id=txn, wait=60).state, flush=True)
    else:
        print(transaction_check(transaction_id=txn, wait=60).result, flush=True)


if __name__ == "__main__":
    main()
