"""The waiting side of the wake-up benchmark and tests, as its own process:
``python -m tests.support.wakeup_waiter BROKER QUEUE COUNT WAIT_S`` (DATABASE_URL and the
wake-up settings from the environment).

It starts listening and prints ``listening <bus> <yes|no>``, then COUNT times prints
``ready <n>``, makes a get that waits up to WAIT_S seconds, and prints one JSON line:
``{"n", "body", "returned_ns", "heard_ns"}`` (``returned_ns``: ``time.monotonic_ns()`` as
the get returned, a clock all processes of the machine share; ``heard_ns``: when the
process's wake-up listener last heard a notification, 0 if never; ``body`` null when the
get timed out).
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    broker, queue, count, wait_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from brokers.services.messages import message_get
    from transactions.wakeup_bus import heard_ns, wakeup_bus

    bus = wakeup_bus()
    bus.listen()
    print(f"listening {bus.name} {'yes' if bus.listening else 'no'}", flush=True)
    for n in range(count):
        print(f"ready {n}", flush=True)
        result = message_get(broker=broker, queue=queue, wait=wait_s)
        returned_ns = time.monotonic_ns()
        body = bytes(result.messages[0].body).decode() if result.messages else None
        print(json.dumps({"n": n, "body": body, "returned_ns": returned_ns, "heard_ns": heard_ns[0]}), flush=True)


if __name__ == "__main__":
    main()
