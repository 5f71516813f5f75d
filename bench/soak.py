"""The soak benchmark's measurements: resident memory and open file descriptors of each
process, sampled from /proc (Linux), their growth per hour, and the report.

Growth is the least-squares slope over the samples after the warm-up (the first tenth of
the run, at least one sample kept). A process *grows* when its memory slope exceeds
``RSS_GROWTH_MIB_PER_H`` and ``RSS_GROWTH_SHARE_PER_H`` of its mean, or its descriptor
slope exceeds ``FD_GROWTH_PER_H``; both thresholds are well above the noise of a shared
machine over half an hour and well below any leak that matters in a day.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

RSS_GROWTH_MIB_PER_H = 16.0
RSS_GROWTH_SHARE_PER_H = 0.10
FD_GROWTH_PER_H = 20.0
WARMUP_SHARE = 0.10


def process_sample(pid: int) -> tuple[float, int] | None:
    """(resident memory in MiB, open file descriptors) of ``pid``, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss_kib = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError, PermissionError, StopIteration):
        return None
    return rss_kib / 1024, fds


def slope_per_hour(times_s: list[float], values: list[float]) -> float:
    """Least-squares slope of ``values`` over ``times_s``, per hour (0 for fewer than 2 points)."""
    n = len(times_s)
    if n < 2:
        return 0.0
    mean_t, mean_v = sum(times_s) / n, sum(values) / n
    var = sum((t - mean_t) ** 2 for t in times_s)
    if var == 0:
        return 0.0
    cov = sum((t - mean_t) * (v - mean_v) for t, v in zip(times_s, values, strict=True))
    return cov / var * 3600


@dataclass
class Series:
    """One process's samples."""

    name: str
    pid: int
    #: False for the load generator: it keeps a record of every body it put for the
    #: checker, so it grows with the run by design; its figures are shown, not judged.
    judged: bool = True
    times_s: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)
    fds: list[int] = field(default_factory=list)

    def add(self, t: float) -> None:
        sample = process_sample(self.pid)
        if sample is not None:
            self.times_s.append(t)
            self.rss_mib.append(sample[0])
            self.fds.append(sample[1])

    def summary(self) -> dict:
        if not self.times_s:
            return {"process": self.name, "pid": self.pid, "samples": 0, "verdict": "no samples"}
        start = self.times_s[0] + (self.times_s[-1] - self.times_s[0]) * WARMUP_SHARE
        keep = [i for i, t in enumerate(self.times_s) if t >= start] or [len(self.times_s) - 1]
        times = [self.times_s[i] for i in keep]
        rss = [self.rss_mib[i] for i in keep]
        fds = [float(self.fds[i]) for i in keep]
        rss_slope, fd_slope = slope_per_hour(times, rss), slope_per_hour(times, fds)
        mean_rss = sum(rss) / len(rss)
        grows = rss_slope > max(RSS_GROWTH_MIB_PER_H, RSS_GROWTH_SHARE_PER_H * mean_rss) or fd_slope > FD_GROWTH_PER_H
        return {
            "process": self.name,
            "pid": self.pid,
            "samples": len(self.times_s),
            "rss_mib_first": round(self.rss_mib[0], 1),
            "rss_mib_last": round(self.rss_mib[-1], 1),
            "rss_mib_max": round(max(self.rss_mib), 1),
            "rss_mib_per_h": round(rss_slope, 1),
            "fds_first": self.fds[0],
            "fds_last": self.fds[-1],
            "fds_max": max(self.fds),
            "fds_per_h": round(fd_slope, 1),
            "verdict": ("growth" if grows else "no growth") if self.judged else "not judged",
        }


def samples_table(series: list[Series], *, rows: int = 30) -> str:
    """Memory and descriptors over time, at most ``rows`` rows (evenly spaced samples)."""
    if not series or not series[0].times_s:
        return ""
    head = f"{'t (s)':>7}  " + "  ".join(f"{s.name + ' MiB':>11} {'fds':>4}" for s in series)
    lines = [head, "-" * len(head)]
    count = min(len(s.times_s) for s in series)
    step = max(1, -(-count // rows))
    picks = list(range(0, count, step))
    if picks[-1] != count - 1:
        picks.append(count - 1)
    for i in picks:
        cells = "  ".join(f"{s.rss_mib[i]:>11.1f} {s.fds[i]:>4}" for s in series)
        lines.append(f"{series[0].times_s[i]:>7.0f}  {cells}")
    return "\n".join(lines)


def summary_table(summaries: list[dict]) -> str:
    head = (
        f"{'process':<8} {'pid':>7} {'samples':>7} {'RSS MiB first':>13} {'last':>7} {'max':>7} {'MiB/h':>7} "
        f"{'fds first':>9} {'last':>5} {'max':>5} {'fds/h':>7}  verdict"
    )
    lines = [head, "-" * len(head)]
    for s in summaries:
        if not s.get("samples"):
            lines.append(f"{s['process']:<8} {s['pid']:>7} {0:>7}  {s['verdict']}")
            continue
        lines.append(
            f"{s['process']:<8} {s['pid']:>7} {s['samples']:>7} {s['rss_mib_first']:>13.1f} {s['rss_mib_last']:>7.1f} "
            f"{s['rss_mib_max']:>7.1f} {s['rss_mib_per_h']:>7.1f} {s['fds_first']:>9} {s['fds_last']:>5} "
            f"{s['fds_max']:>5} {s['fds_per_h']:>7.1f}  {s['verdict']}"
        )
    return "\n".join(lines)


#: Lines of allocation growth shown per process in the report (``--tracemalloc``).
MEMTRACE_TOP = 8


def memtrace_summary(directory, series: list[Series]) -> list[dict]:
    """What each process's tracemalloc dumps (config/memtrace.py) say over the run: its
    resident memory, the bytes Python's allocations hold and glibc's bytes in use and free,
    first and last dump and their slopes per hour, and the lines that grew most since the
    first dump. Processes without dumps are left out."""
    import json
    from pathlib import Path

    found = []
    for s in series:
        path = Path(directory) / f"memtrace-{s.pid}.jsonl"
        if not path.exists():
            continue
        dumps = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not dumps:
            continue
        times = [d["t_s"] for d in dumps]
        entry: dict = {"process": s.name, "pid": s.pid, "dumps": len(dumps), "seconds": times[-1] - times[0]}
        for key in ("rss", "traced", "malloc_in_use", "malloc_free", "blocks"):
            values = [d.get(key) for d in dumps]
            if any(v is None for v in values):
                continue
            scale = 1 if key == "blocks" else 2**20
            entry[key] = {
                "first": round(values[0] / scale, 1),
                "last": round(values[-1] / scale, 1),
                "per_h": round(slope_per_hour(times, [v / scale for v in values]), 1),
            }
        entry["top"] = dumps[-1].get("top", [])[:MEMTRACE_TOP]
        found.append(entry)
    return found


def memtrace_table(entries: list[dict]) -> str:
    """The tracemalloc summary as text: one line per process, then its top growers."""
    if not entries:
        return ""

    def cell(entry: dict, key: str) -> str:
        v = entry.get(key)
        return f"{v['first']:>7.1f} {v['last']:>7.1f} {v['per_h']:>+7.1f}" if v else f"{'-':>7} {'-':>7} {'-':>7}"

    head = (
        f"{'process':<8} {'dumps':>5}  {'RSS MiB':>7} {'last':>7} {'/h':>7}  {'traced':>7} {'last':>7} {'/h':>7}  "
        f"{'malloc used':>11} {'last':>7} {'/h':>7}  {'free':>7} {'last':>7} {'/h':>7}"
    )
    lines = ["tracemalloc (first dump, last dump, slope per hour):", head, "-" * len(head)]
    for e in entries:
        lines.append(
            f"{e['process']:<8} {e['dumps']:>5}  {cell(e, 'rss')}  {cell(e, 'traced')}  "
            f"{cell(e, 'malloc_in_use'):>27}  {cell(e, 'malloc_free')}"
        )
    for e in entries:
        if e["top"]:
            lines.append(f"{e['process']}: growth since its first dump, by line")
            lines += [
                f"  {t['size_diff'] / 1024:+9.1f} KiB {t['count_diff']:+8d} blocks  {t['where']}" for t in e["top"]
            ]
    return "\n".join(lines)
