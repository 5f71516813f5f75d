"""A producer or consumer process for the multi-process linked-transaction test.

Run as ``python -m tests.linked.pipeline_worker ROLE SEED COUNT OUT`` with DATABASE_URL set
to the test database. Writes one JSON line per unit of work to OUT.
"""

from __future__ import annotations

import json
import os
import random
import sys


def main() -> None:
    role, seed, count, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from brokers.services.message_input import MessageInput
    from brokers.services.messages import message_get, message_put
    from baton_client.errors import TransactionBackedOut
    from transactions.manager import transaction_begin, transaction_commit, transaction_rollback

    rng = random.Random(seed)
    with open(out, "w") as log:
        for i in range(count):
            txn = transaction_begin(broker="QM1", timeout_ms=120_000).id
            record: dict = {"role": role, "txn": txn}
            try:
                if role == "producer":
                    record["bodies"] = [f"{seed}-{i}-{j}" for j in range(rng.randint(1, 3))]
                    message_put(
                        broker="QM1",
                        queue="Q1",
                        transaction_id=txn,
                        messages=[MessageInput(body=b.encode()) for b in record["bodies"]],
                    )
                else:
                    got = message_get(
                        broker="QM1", queue="Q1", transaction_id=txn, preemptive=True, batch=rng.randint(1, 3), wait=0.2
                    )
                    record["bodies"] = [bytes(m.body).decode() for m in got.messages]
                if rng.random() < 0.2:
                    transaction_rollback(transaction_id=txn)
                    record["asked"] = "rollback"
                else:
                    transaction_commit(transaction_id=txn, wait=0.05)
                    record["asked"] = "commit"
            except TransactionBackedOut:
                record["asked"] = "backed_out"
            log.write(json.dumps(record) + "\n")
            log.flush()


if __name__ == "__main__":
    main()
