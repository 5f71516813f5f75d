"""``bench.cpu_split``: the CPU a command spends is counted to the command, per stretch
between the lines it writes to standard error."""

from __future__ import annotations

import io
import sys

from bench.cpu_split import GROUPS, run

SCRIPT = """
import sys, time
print("idle", file=sys.stderr, flush=True)
time.sleep(1.0)
print("busy", file=sys.stderr, flush=True)
start = time.process_time()
while time.process_time() - start < 1.0:  # a second of CPU, however long the machine takes
    pass
print("end", file=sys.stderr, flush=True)
"""


def test_a_busy_stretch_is_counted_to_the_command_and_an_idle_one_is_not():
    echoed = io.StringIO()
    stretches = {s["line"]: s for s in run([sys.executable, "-c", SCRIPT], interval=0.1, echo=echoed)}
    assert {"idle", "busy"} <= set(stretches)
    idle, busy = stretches["idle"], stretches["busy"]
    assert set(GROUPS) <= set(busy) and busy["samples"] >= 1
    assert busy["command"] > idle["command"]
    assert busy["command"] > 0
    assert [line.split(" ", 1)[1] for line in echoed.getvalue().splitlines()] == ["idle", "busy", "end"]
