"""Where a benchmark's CPU goes: the command itself (its clients), the web servers, PostgreSQL
and the rest of the machine, in cores used, per progress line of the command
(docs/performance.md, "PostgreSQL: whose CPU a unit of work takes").

    python -m bench.cpu_split [--interval 0.25] [--json] -- COMMAND [ARG...]

Runs COMMAND, echoes its standard error with each line's time, and samples every
``--interval`` seconds the CPU time (user + system, from /proc) of every process: COMMAND's
own, Uvicorn's (a command line naming ``uvicorn``: the web servers a benchmark starts),
PostgreSQL's (``postgres`` processes: the backends, the WAL writer) and the others. Each line
COMMAND writes to standard error (``manage.py benchmark -v 1`` writes one as each scenario
starts) begins a stretch that runs to the next; for each stretch with whole samples it
prints the average cores each group used. On a machine with nothing else running, "other"
stays near zero and the groups add up to what the run kept busy of the machine's cores.
Asserts nothing; ``--json`` prints one JSON object per stretch.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

GROUPS = ("command", "web", "postgres", "other")


def _cpu_by_group(command_pid: int) -> dict[str, float]:
    """CPU seconds so far of every process, summed by group."""
    tick = os.sysconf("SC_CLK_TCK")
    totals = dict.fromkeys(GROUPS, 0.0)
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat, open(f"/proc/{name}/cmdline", "rb") as cmdline:
                fields, argv = stat.read().rsplit(")", 1)[1].split(), cmdline.read().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        pid, seconds = int(name), (int(fields[11]) + int(fields[12])) / tick
        words = b" ".join(argv)
        if pid == command_pid:
            group = "command"
        elif b"uvicorn" in words:
            group = "web"
        elif argv[0].startswith(b"postgres") or b"/postgres" in argv[0]:
            group = "postgres"
        else:
            group = "other"
        totals[group] += seconds
    return totals


def run(command: list[str], *, interval: float, echo=sys.stderr) -> list[dict]:
    """Run ``command``; return one dict per stretch: its ``line``, ``seconds``, ``samples``
    and the cores each group used on average."""
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, bufsize=1)
    lines: list[tuple[float, str]] = []

    def read() -> None:
        for line in proc.stderr:
            lines.append((time.monotonic(), line.rstrip("\n")))
            echo.write(f"{time.strftime('%H:%M:%S')} {line}")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    samples: list[tuple[float, dict[str, float]]] = []
    before, at = _cpu_by_group(proc.pid), time.monotonic()
    while proc.poll() is None:
        time.sleep(interval)
        now, totals = time.monotonic(), _cpu_by_group(proc.pid)
        # a process that ended since the last sample takes its time with it: never below zero
        samples.append((now, {g: max(0.0, totals[g] - before[g]) / (now - at) for g in GROUPS}))
        before, at = totals, now
    reader.join()
    stretches = []
    for i, (start, line) in enumerate(lines):
        end = lines[i + 1][0] if i + 1 < len(lines) else at
        inside = [cores for t, cores in samples if start + interval <= t <= end]
        if not inside:
            continue
        average = {g: round(sum(c[g] for c in inside) / len(inside), 2) for g in GROUPS}
        stretches.append({"line": line, "seconds": round(end - start, 2), "samples": len(inside), **average})
    if proc.returncode:
        raise SystemExit(f"the command exited with {proc.returncode}")
    return stretches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interval", type=float, default=0.25, help="seconds between samples (0.25)")
    parser.add_argument("--json", action="store_true", help="one JSON object per stretch")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("name the command to run after --")
    stretches = run(command, interval=args.interval)
    for s in stretches:
        if args.json:
            print(json.dumps(s))
        else:
            cores = "  ".join(f"{g} {s[g]:.2f}" for g in GROUPS)
            print(f"{s['line'][:70]:70s} {s['seconds']:6.2f} s  {cores}  total {sum(s[g] for g in GROUPS):.2f}")


if __name__ == "__main__":
    main()
