"""The total-queue checker, in the spirit of Jepsen's: given what the clients were told
(a ``workload.History``) and what the queues hold once everything has settled, find every
message lost, duplicated, or visible although it was never committed.

The pipeline has two stages, each checked as a queue of its own, by message body (unique
per put):

- **work**: producers put on WORK; consumers take from WORK under units of work.
- **down**: a consumer's committed unit of work forwards what it took (same body) through
  the channel to IN, where peek-lock consumers complete it.

Invariants, per body:

- *lost*: an acknowledged put is neither still queued (WORK, or the stage's dead-letter
  queue) nor taken by a consumer whose commit was acknowledged or may have happened; a
  body taken by an acknowledged commit is neither queued downstream (XQ, IN, dead-letter
  queue) nor completed (acknowledged or maybe).
- *duplicated*: on a stage, queued copies plus acknowledged takings exceed one (taken by
  two committed consumers, completed twice, or completed and still queued).
- *uncommitted visible*: a body whose put never committed (refused, rolled back, or in a
  unit of work never asked to commit) is queued, taken by a committed consumer, or seen by
  a get that is not pre-emptive; downstream, a body is queued, completed or seen although
  no consumer's commit of it was acknowledged or may have happened. And in time: a get
  that is not pre-emptive returned a body before its producer asked to commit it (or, for
  a put outside a unit of work, sent it), or returned it downstream before the consumer
  that forwarded it asked to commit — no commit can precede its request.
- *unknown*: a body no client ever put.

Indeterminate outcomes (a reply that never came) may go either way, never both: an
unknown put may be absent; an unknown completion may have removed its message.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Verdict:
    acknowledged: int = 0
    failed: int = 0
    indeterminate_puts: int = 0
    consumed: int = 0
    delivered: int = 0
    indeterminate_deliveries: int = 0
    queued: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    uncommitted_visible: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.uncommitted_visible or self.unknown)

    def numbers(self) -> dict[str, int]:
        return {
            "acknowledged": self.acknowledged,
            "failed": self.failed,
            "indeterminate_puts": self.indeterminate_puts,
            "consumed": self.consumed,
            "delivered": self.delivered,
            "indeterminate_deliveries": self.indeterminate_deliveries,
            "queued": self.queued,
            "lost": len(self.lost),
            "duplicated": len(self.duplicated),
            "uncommitted_visible": len(self.uncommitted_visible),
            "unknown": len(self.unknown),
        }

    def problems(self, limit: int = 20) -> str:
        lines = []
        for name in ("lost", "duplicated", "uncommitted_visible", "unknown"):
            bodies = getattr(self, name)
            if bodies:
                lines.append(f"{name} ({len(bodies)}): {', '.join(sorted(bodies)[:limit])}")
        return "\n".join(lines)


def check(
    *,
    puts: dict[str, str],
    consumed: Counter,
    consumed_unknown: Counter,
    delivered: Counter,
    delivered_unknown: Counter,
    seen: dict[str, dict],
    queued: dict[str, Counter],
    asked: dict[str, float] | None = None,
    forward_asked: dict[str, float] | None = None,
) -> Verdict:
    """Judge one run. ``puts`` maps each body to "ack", "failed" or "unknown" ("pending"
    counts as unknown); ``queued`` maps "work" and "down" to the bodies still on their queues;
    ``seen`` maps each stage to the bodies gets that are not pre-emptive returned (with the
    time the first reply came, when ``asked`` and ``forward_asked`` give the times the
    commits were asked for)."""
    asked, forward_asked = asked or {}, forward_asked or {}
    work, down = queued.get("work", Counter()), queued.get("down", Counter())
    verdict = Verdict(
        acknowledged=sum(1 for s in puts.values() if s == "ack"),
        failed=sum(1 for s in puts.values() if s == "failed"),
        indeterminate_puts=sum(1 for s in puts.values() if s not in ("ack", "failed")),
        consumed=sum(consumed.values()),
        delivered=sum(delivered.values()),
        indeterminate_deliveries=sum(delivered_unknown.values()) + sum(consumed_unknown.values()),
        queued=sum(work.values()) + sum(down.values()),
    )
    bodies = (
        set(puts)
        | set(work)
        | set(down)
        | set(consumed)
        | set(consumed_unknown)
        | set(delivered)
        | set(delivered_unknown)
        | set(seen.get("work", ()))
        | set(seen.get("down", ()))
    )
    for body in sorted(bodies):
        status = puts.get(body)
        if status is None:
            verdict.unknown.append(body)
            continue
        taken, maybe_taken = consumed[body], consumed_unknown[body]
        done, maybe_done = delivered[body], delivered_unknown[body]
        # stage work
        if status == "ack" and work[body] + taken + maybe_taken == 0:
            verdict.lost.append(body)
        if work[body] + taken > 1:
            verdict.duplicated.append(body)
        if status == "failed" and (work[body] or taken or body in seen.get("work", ())):
            verdict.uncommitted_visible.append(body)
            continue
        if _seen_before(seen.get("work", {}), body, asked):
            verdict.uncommitted_visible.append(body)
            continue
        # stage down
        downstream = down[body] + done + maybe_done
        if taken and downstream == 0:
            verdict.lost.append(body)
        if down[body] + done > 1 and body not in verdict.duplicated:
            verdict.duplicated.append(body)
        if (downstream or body in seen.get("down", ())) and not (taken or maybe_taken):
            verdict.uncommitted_visible.append(body)
        elif _seen_before(seen.get("down", {}), body, asked) or _seen_before(seen.get("down", {}), body, forward_asked):
            verdict.uncommitted_visible.append(body)
    return verdict


def _seen_before(seen: dict, body: str, asked: dict[str, float]) -> bool:
    """Whether a get that is not pre-emptive returned ``body`` before its commit was asked for."""
    if not isinstance(seen, dict) or body not in seen or body not in asked:
        return False
    return seen[body] < asked[body]


def history_checked(history, queued: dict[str, Counter]) -> Verdict:
    """``check`` over a ``workload.History``."""
    return check(
        puts=dict(history.puts),
        consumed=history.consumed,
        consumed_unknown=history.consumed_unknown,
        delivered=history.delivered,
        delivered_unknown=history.delivered_unknown,
        seen=history.seen,
        queued=queued,
        asked=history.asked,
        forward_asked=history.forward_asked,
    )
