"""The total-queue checker (tests/support/checker.py) on hand-made histories: it finds
every kind of violation it promises to, and accepts what indeterminate outcomes allow."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.support.checker import check
from bench.soak import Series, samples_table, slope_per_hour, summary_table

# no database of the suite's: once, in the SQLite pass
pytestmark = pytest.mark.once


def judged(
    puts,
    *,
    consumed=(),
    consumed_unknown=(),
    delivered=(),
    delivered_unknown=(),
    seen_work=(),
    seen_down=(),
    work=(),
    down=(),
):
    return check(
        puts=puts,
        consumed=Counter(consumed),
        consumed_unknown=Counter(consumed_unknown),
        delivered=Counter(delivered),
        delivered_unknown=Counter(delivered_unknown),
        seen={"work": set(seen_work), "down": set(seen_down)},
        queued={"work": Counter(work), "down": Counter(down)},
    )


def test_a_clean_run_passes_and_is_counted():
    verdict = judged(
        {"a": "ack", "b": "ack", "c": "ack", "d": "failed", "e": "unknown"},
        consumed=["a", "b"],
        delivered=["a"],
        down=["b"],
        work=["c"],
        seen_work=["a"],
        seen_down=["a"],
    )
    assert verdict.ok, verdict.problems()
    assert verdict.numbers() == {
        "acknowledged": 3,
        "failed": 1,
        "indeterminate_puts": 1,
        "consumed": 2,
        "delivered": 1,
        "indeterminate_deliveries": 0,
        "queued": 2,
        "lost": 0,
        "duplicated": 0,
        "uncommitted_visible": 0,
        "unknown": 0,
    }


def test_an_acknowledged_put_found_nowhere_is_lost():
    assert judged({"a": "ack"}).lost == ["a"]


def test_a_committed_take_that_never_arrives_downstream_is_lost():
    assert judged({"a": "ack"}, consumed=["a"]).lost == ["a"]


def test_indeterminate_outcomes_may_go_either_way():
    # a put whose reply never came may be absent or present; a consumer whose commit reply
    # never came may or may not have taken it; a completion without reply may have removed it
    assert judged({"a": "unknown", "b": "unknown"}, work=["b"]).ok
    assert judged({"a": "ack"}, consumed_unknown=["a"]).ok
    assert judged({"a": "ack"}, consumed_unknown=["a"], work=["a"]).ok
    assert judged({"a": "ack"}, consumed=["a"], delivered_unknown=["a"]).ok


def test_two_committed_takes_or_a_take_and_a_queued_copy_are_duplicates():
    assert judged({"a": "ack"}, consumed=["a", "a"], down=["a"]).duplicated == ["a"]
    assert judged({"a": "ack"}, consumed=["a"], work=["a"], down=["a"]).duplicated == ["a"]


def test_completed_twice_or_completed_and_still_queued_are_duplicates():
    assert judged({"a": "ack"}, consumed=["a"], delivered=["a", "a"]).duplicated == ["a"]
    assert judged({"a": "ack"}, consumed=["a"], delivered=["a"], down=["a"]).duplicated == ["a"]


def test_a_put_that_never_committed_must_never_be_seen():
    assert judged({"a": "failed"}, work=["a"]).uncommitted_visible == ["a"]
    assert judged({"a": "failed"}, consumed=["a"], down=["a"]).uncommitted_visible == ["a"]
    assert judged({"a": "failed"}, seen_work=["a"]).uncommitted_visible == ["a"]


def test_downstream_copies_need_a_committed_take():
    assert judged({"a": "ack"}, work=["a"], down=["a"]).uncommitted_visible == ["a"]
    assert judged({"a": "ack"}, work=["a"], seen_down=["a"]).uncommitted_visible == ["a"]
    assert judged({"a": "ack"}, work=["a"], delivered=["a"]).uncommitted_visible == ["a"]


def test_a_body_nobody_put_is_unknown():
    assert judged({}, work=["ghost"]).unknown == ["ghost"]


def test_growth_is_the_least_squares_slope_per_hour():
    assert slope_per_hour([0, 1800, 3600], [100, 110, 120]) == 20
    assert slope_per_hour([0], [1]) == 0
    flat = Series("web", 1, times_s=[float(t) for t in range(0, 1800, 5)], rss_mib=[100.0] * 360, fds=[40] * 360)
    assert flat.summary()["verdict"] == "no growth"
    leaking = Series("web", 1, times_s=flat.times_s, rss_mib=[100 + t / 60 for t in flat.times_s], fds=flat.fds)
    summary = leaking.summary()
    assert summary["verdict"] == "growth" and summary["rss_mib_per_h"] == 60.0
    fds = Series("web", 1, times_s=flat.times_s, rss_mib=flat.rss_mib, fds=[40 + int(t // 60) for t in flat.times_s])
    assert fds.summary()["verdict"] == "growth"
    load = Series("load", 1, judged=False, times_s=flat.times_s, rss_mib=leaking.rss_mib, fds=flat.fds)
    assert load.summary()["verdict"] == "not judged" and load.summary()["rss_mib_per_h"] == 60.0


def test_tables_show_every_process():
    web = Series("web", 7, times_s=[0.0, 5.0, 10.0], rss_mib=[90.0, 91.5, 92.0], fds=[30, 31, 31])
    load = Series("load", 8, times_s=[0.0, 5.0, 10.0], rss_mib=[80.0, 80.0, 80.0], fds=[9, 9, 9])
    samples = samples_table([web, load]).splitlines()
    assert "web MiB" in samples[0] and "load MiB" in samples[0] and len(samples) == 2 + 3
    assert samples[-1].split() == ["10", "92.0", "31", "80.0", "9"]
    summary = summary_table([web.summary(), load.summary()]).splitlines()
    assert summary[2].split()[0] == "web" and summary[3].split()[0] == "load" and summary[3].endswith("no growth")


def test_seen_before_its_commit_was_asked_for_is_uncommitted_visible():
    common = {
        "consumed": Counter(["a"]),
        "consumed_unknown": Counter(),
        "delivered": Counter(),
        "delivered_unknown": Counter(),
        "queued": {"work": Counter(), "down": Counter(["a"])},
    }
    in_order = check(
        puts={"a": "ack"},
        seen={"work": {"a": 2.0}, "down": {"a": 4.0}},
        asked={"a": 1.0},
        forward_asked={"a": 3.0},
        **common,
    )
    assert in_order.ok, in_order.problems()
    early = check(puts={"a": "ack"}, seen={"work": {"a": 0.5}, "down": {}}, asked={"a": 1.0}, **common)
    assert early.uncommitted_visible == ["a"]
    early_downstream = check(
        puts={"a": "ack"}, seen={"work": {}, "down": {"a": 2.5}}, asked={"a": 1.0}, forward_asked={"a": 3.0}, **common
    )
    assert early_downstream.uncommitted_visible == ["a"]
