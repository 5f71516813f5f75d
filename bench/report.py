"""Benchmark results and the table they print as."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from tests.support.errors import BenchmarkError

BODY_BYTES = 1024
#: The batch sizes measured: one message per unit of work, and this many.
BATCHES = (1, 100)
#: Concurrent HTTP clients measured on the REST path.
REST_CLIENTS = (1, 8)

HEADER = ("scenario", "clients", "batch", "messages", "seconds", "msgs/s")
_SCENARIO = (
    r"(?:in-process|REST|session) (?:begin\+)?(?:put|get)\+commit|(?:in-process|REST|session) put\+get"
    r"|plain (?:SQLite|PostgreSQL) insert\+commit|plain PostgreSQL queue insert\+delete|RabbitMQ publish\+ack"
)
ROW = re.compile(
    rf"^(?P<scenario>{_SCENARIO})\s+(?P<clients>\d+)\s+(?P<batch>\d+)\s+"
    r"(?P<messages>\d+)\s+(?P<seconds>[\d.]+)\s+(?P<rate>[\d.]+)\s*$"
)
#: The second table: Baton's in-process rates over the plain rate at the same batch size.
RATIO_TITLE = "Baton / plain"
RATIO_HEADER = ("scenario", "batch", "msgs/s", "plain msgs/s", "Baton/plain")
RATIO_ROW = re.compile(
    r"^(?P<scenario>in-process (?:begin\+)?(?:put|get)\+commit)\s+(?P<batch>\d+)\s+(?P<rate>[\d.]+)\s+"
    r"(?P<plain>[\d.]+)\s+(?P<ratio>[\d.]+)x\s*$"
)


WARMUP_QUEUE = "BENCH.WARMUP"


def body_text() -> str:
    """A 1 KiB ASCII body (the same on both paths)."""
    pattern = "Baton benchmark message body. "
    return (pattern * (BODY_BYTES // len(pattern) + 1))[:BODY_BYTES]


def queue_name(path: str, clients: int, batch: int) -> str:
    return f"BENCH.{path.upper()}.C{clients}.B{batch}"


@dataclass
class Result:
    #: "in-process" | "REST" | "session" | "plain SQLite" | "plain PostgreSQL" (the baselines)
    #: | "plain PostgreSQL queue" | "RabbitMQ" (the peers)
    path: str
    #: "put+commit" | "get+commit" (units of work begun by their put or get) |
    #: "begin+put+commit" | "begin+get+commit" (begun by a call of their own) |
    #: "put+get" (the queue scenarios, :mod:`.flows`)
    #: | "insert+commit" (plain) | "insert+delete" (the PostgreSQL queue) | "publish+ack" (RabbitMQ)
    operation: str
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

    @property
    def plain(self) -> bool:
        """A plain-database baseline or a peer, not Baton."""
        return self.path.startswith("plain ") or self.path == "RabbitMQ"

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


def ratios(results: list[Result]) -> list[tuple[Result, Result, float]]:
    """Each in-process Baton result with the plain baseline of the same batch size, and
    Baton's rate over the plain rate. (REST is left out: its clients are another process
    and several threads, the plain baseline one connection in process.)"""
    plain = {r.batch: r for r in results if r.plain and r.clients == 1 and r.operation == "insert+commit"}
    return [
        (r, plain[r.batch], r.rate / plain[r.batch].rate)
        for r in results
        if r.path == "in-process" and r.operation.endswith("+commit") and r.batch in plain and plain[r.batch].rate > 0
    ]


def json_rows(results: list[Result]) -> list[dict]:
    """One object per result (``--json``): the table's columns with full precision, and for
    an in-process row that has a plain baseline, ``ratio_to_plain`` and the baseline's
    scenario."""
    by_result = {id(r): (p, ratio) for r, p, ratio in ratios(results)}
    rows = []
    for r in results:
        row = {
            "kind": "result",
            "scenario": r.scenario,
            "path": r.path,
            "operation": r.operation,
            "clients": r.clients,
            "batch": r.batch,
            "messages": r.messages,
            "seconds": round(r.seconds, 6),
            "msgs_per_s": round(r.rate, 3),
        }
        if id(r) in by_result:
            p, ratio = by_result[id(r)]
            row["plain_scenario"] = p.scenario
            row["ratio_to_plain"] = round(ratio, 4)
        rows.append(row)
    return rows


def table(results: list[Result]) -> str:
    """The results, then (when there is a plain baseline to compare with) the "Baton /
    plain" table."""
    rows = [HEADER] + [
        (r.scenario, str(r.clients), str(r.batch), str(r.messages), f"{r.seconds:.3f}", f"{r.rate:.1f}")
        for r in results
    ]
    text = grid(rows)
    compared = ratios(results)
    if compared:
        plain_names = sorted({p.scenario for _, p, _ in compared})
        text += f"\n\n{RATIO_TITLE}: in-process rate over {' / '.join(plain_names)} at the same batch size\n" + grid(
            [RATIO_HEADER]
            + [
                (r.scenario, str(r.batch), f"{r.rate:.1f}", f"{p.rate:.1f}", f"{ratio:.3f}x")
                for r, p, ratio in compared
            ]
        )
    return text


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
            rows.append(
                {
                    "scenario": m["scenario"],
                    "clients": int(m["clients"]),
                    "batch": int(m["batch"]),
                    "messages": int(m["messages"]),
                    "seconds": float(m["seconds"]),
                    "rate": float(m["rate"]),
                }
            )
    return rows


def ratio_parse(text: str) -> list[dict]:
    """The rows of a printed "Baton / plain" table."""
    rows = []
    for line in text.splitlines():
        m = RATIO_ROW.match(line.strip())
        if m:
            rows.append(
                {
                    "scenario": m["scenario"],
                    "batch": int(m["batch"]),
                    "rate": float(m["rate"]),
                    "plain": float(m["plain"]),
                    "ratio": float(m["ratio"]),
                }
            )
    return rows


def raced(workers: list[Callable[[Callable[[], None]], None]], *, what: str) -> float:
    """Run each worker on a thread of its own; each calls the function it is given once it is
    ready (connected, subscribed), and the clock starts when all are. Returns the seconds
    from then until the last worker ends; the first failure is raised as BenchmarkError
    (workers not yet past the start line then stop there)."""
    start_line = threading.Barrier(len(workers) + 1)
    errors: list[BaseException] = []

    def run(work: Callable[[Callable[[], None]], None]) -> None:
        try:
            work(start_line.wait)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            start_line.abort()

    threads = [threading.Thread(target=run, args=(work,), daemon=True) for work in workers]
    for thread in threads:
        thread.start()
    try:
        start_line.wait()
    except threading.BrokenBarrierError:
        pass
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    if errors:
        raise BenchmarkError(f"{what}: {errors[0]!r}")
    return seconds
