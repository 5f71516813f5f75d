"""What one message costs Baton's STOMP server, from ``/proc``: CPU (user and kernel) and
context switches (voluntary and not, over all its threads) per message moved, with the
rate, for the scenarios of ``benchmark_stomp`` (bench/stomp_race.py). The server runs as
``./platform/up`` runs it (``manage.py stomp_serve`` on a scratch SQLite database). Figures a
busy machine moves less than a rate: the rate waits on other processes, the server's work
per message does not.

    python -m bench.stomp_cost [MESSAGES] [ROUNDS]      (2000 and 3 by default)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import django


def counters(pid: int) -> dict:
    """The process's CPU seconds (user, kernel) and its threads' context switches so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    out = {"user_s": int(fields[11]) / tick, "kernel_s": int(fields[12]) / tick, "voluntary": 0, "involuntary": 0}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            lines = open(f"/proc/{pid}/task/{task}/status").read().splitlines()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        for line in lines:
            if line.startswith("voluntary_ctxt_switches:"):
                out["voluntary"] += int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches:"):
                out["involuntary"] += int(line.split()[1])
    return out


def _spied(pid: int, scenario: str) -> subprocess.Popen | None:
    """With ``STOMP_COST_SPY=DIR``: py-spy (``STOMP_COST_PY_SPY``, else on the path) records the
    server's stacks through the round (``DIR/<scenario>.txt``, collapsed; for a flame graph)."""
    where = os.environ.get("STOMP_COST_SPY")
    if not where:
        return None
    out = os.path.join(where, scenario.replace("/", "_") + ".txt")
    spy = os.environ.get("STOMP_COST_PY_SPY", "py-spy")
    return subprocess.Popen(
        [spy, "record", "--pid", str(pid), "--format", "raw", "--threads", "--gil", "--nonblocking", "-r", "250"]
        + ["-o", out],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def measure(messages: int, rounds: int) -> list[dict]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from tests.support.scratch import Scratch

    from .stomp_race import SCENARIOS, _flow, baton_stomp

    rows = []
    with Scratch() as scratch, baton_stomp(scratch) as target:
        _flow(target, total=200, batch=1)  # warm-up
        for _ in range(rounds):
            for scenario, batch in SCENARIOS:
                total = max(batch, messages // batch * batch)
                spy = _spied(target.pid, scenario)
                before = counters(target.pid)
                seconds = _flow(target, total=total, batch=batch)
                if spy is not None:
                    spy.send_signal(signal.SIGINT)
                    spy.wait()
                after = counters(target.pid)
                cost = {k: (after[k] - before[k]) / total for k in before}
                rows.append(
                    {
                        "scenario": scenario,
                        "messages": total,
                        "rate": round(total / seconds, 1),
                        "cpu_ms": round((cost["user_s"] + cost["kernel_s"]) * 1000, 3),
                        "kernel_ms": round(cost["kernel_s"] * 1000, 3),
                        "voluntary": round(cost["voluntary"], 1),
                        "involuntary": round(cost["involuntary"], 1),
                        "load": round(os.getloadavg()[0], 2),
                    }
                )
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    print(json.dumps(measure(*(args + [2000, 3][len(args) :])), indent=2))
