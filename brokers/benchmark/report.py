"""Benchmark results and the table they print as."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

BODY_BYTES = 1024
#: The batch sizes measured: one message per unit of work, and this many.
BATCHES = (1, 100)
#: Concurrent HTTP clients measured on the REST path.
REST_CLIENTS = (1, 8)

HEADER = ("scenario", "clients", "batch", "messages", "seconds", "msgs/s")
ROW = re.compile(
    r"^(?P<scenario>(?:in-process|REST) (?:put|get)\+commit)\s+(?P<clients>\d+)\s+(?P<batch>\d+)\s+"
    r"(?P<messages>\d+)\s+(?P<seconds>[\d.]+)\s+(?P<rate>[\d.]+)\s*$"
)


WARMUP_QUEUE = "BENCH.WARMUP"


def body_text() -> str:
    """A 1 KiB ASCII body (the same on both paths)."""
    pattern = "Baton benchmark message body. "
    return (pattern * (BODY_BYTES // len(pattern) + 1))[:BODY_BYTES]


def queue_name(path: str, clients: int, batch: int) -> str:
    return f"BENCH.{path.upper()}.C{clients}.B{batch}"


class BenchmarkError(Exception):
    """The benchmark could not run (a request failed, a child process failed, ...)."""


@dataclass
class Result:
    path: str  # "in-process" | "REST"
    operation: str  # "put+commit" | "get+commit"
    clients: int
    batch: int
    messages: int
    seconds: float

    @property
    def scenario(self) -> str:
        return f"{self.path} {self.operation}"

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict:
        return asdict(self)


#: The batch scenarios move this many times ``--messages`` (they are much faster; fewer
#: messages would measure a handful of units of work).
BATCH_MESSAGES_FACTOR = 10


def scenario_messages(messages: int, *, batch: int, clients: int = 1) -> int:
    """How many messages a scenario moves: ``messages`` for one message per unit of work,
    ``BATCH_MESSAGES_FACTOR`` times that for batches, rounded up so that every client does
    the same number of whole units of work."""
    wanted = messages if batch == 1 else messages * BATCH_MESSAGES_FACTOR
    step = batch * clients
    return max(step, -(-wanted // step) * step)


def table(results: list[Result]) -> str:
    rows = [HEADER] + [
        (r.scenario, str(r.clients), str(r.batch), str(r.messages), f"{r.seconds:.2f}", f"{r.rate:.1f}")
        for r in results
    ]
    return grid(rows)


def grid(rows: list[tuple[str, ...]]) -> str:
    """Rows as aligned text columns: the first left-aligned, the rest right-aligned, a rule under the header row."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [cell.rjust(widths[i]) for i, cell in enumerate(row) if i]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def table_parse(text: str) -> list[dict]:
    """The rows of a printed table (for tests and for scripts that compare runs)."""
    rows = []
    for line in text.splitlines():
        m = ROW.match(line.strip())
        if m:
            rows.append({
                "scenario": m["scenario"], "clients": int(m["clients"]), "batch": int(m["batch"]),
                "messages": int(m["messages"]), "seconds": float(m["seconds"]), "rate": float(m["rate"]),
            })
    return rows
