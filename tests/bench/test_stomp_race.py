"""bench/stomp_race.py: how rounds become the report's rows."""

from __future__ import annotations

from bench.stomp_race import StompResult, medians


def _round(peer: str, scenario: str, seconds: float) -> StompResult:
    return StompResult(peer, scenario, 1, 100, seconds, [100 / seconds])


def test_each_peer_and_scenario_is_its_round_of_median_rate_with_every_rounds_rate_in_order():
    rows = medians(
        [
            _round("Baton", "send+receipt", 1.0),  # 100/s
            _round("RabbitMQ", "send+receipt", 0.5),  # 200/s
            _round("Baton", "send+receipt", 0.25),  # 400/s
            _round("RabbitMQ", "send+receipt", 0.4),  # 250/s
            _round("Baton", "send+receipt", 0.5),  # 200/s
            _round("RabbitMQ", "send+receipt", 1.0),  # 100/s
        ]
    )
    assert [(r.peer, r.rate, r.rounds) for r in rows] == [
        ("Baton", 200.0, [100.0, 400.0, 200.0]),
        ("RabbitMQ", 200.0, [200.0, 250.0, 100.0]),
    ]


def test_an_even_count_of_rounds_reports_the_lower_middle():
    (row,) = medians([_round("engine", "transaction/100", s) for s in (1.0, 0.5, 0.25, 0.2)])
    assert row.rate == 200.0  # of 100, 200, 400 and 500 per second
    assert row.as_dict()["rounds"] == [100.0, 200.0, 400.0, 500.0]
