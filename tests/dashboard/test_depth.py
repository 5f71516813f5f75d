"""Depth samples: taken for every broker, summed for what the user sees, kept 24 hours."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from brokers.services.access import grant_actions
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_put
from dashboard.access import visibility
from dashboard.models import DepthSample
from dashboard.selectors import depth_history, queue_rates
from dashboard.services.depth import depth_sample_take

from .conftest import make_user


def test_samples_per_broker_summed_for_what_the_user_sees(two_brokers):
    message_put(broker="SEEN", queue="Q1", messages=[MessageInput(body=b"a")] * 2)
    message_put(broker="SEEN", queue="Q2", messages=[MessageInput(body=b"b")], syncpoint="yes")
    message_put(broker="HIDDEN", queue="Q1", messages=[MessageInput(body=b"c")] * 5)
    DepthSample.objects.create(
        at=timezone.now() - timedelta(hours=25), broker="SEEN", available=9, uncommitted_puts=0, in_flight=0, locked=0
    )
    assert depth_sample_take() == 2
    assert not DepthSample.objects.filter(available=9).exists()  # older than 24 hours: gone
    root = make_user("root", superuser=True)
    [point] = depth_history(window_s=60, seen=visibility(root))
    assert (point["available"], point["uncommitted_puts"]) == (7, 1)
    viewer = make_user("viewer")
    grant_actions(username="viewer", broker="SEEN", actions=["browse"])
    grant_actions(username="viewer", broker="HIDDEN", queue="Q2", actions=["browse"])  # queue by queue: no history
    [point] = depth_history(window_s=60, seen=visibility(viewer))
    assert (point["available"], point["uncommitted_puts"]) == (2, 1)


def test_rates_answer_carries_the_depth_history(admin_client, two_brokers):
    depth_sample_take()
    rates = admin_client.get("/rates/?window=3600").json()
    assert [(p["available"], p["in_flight"]) for p in rates["depth"]] == [(0, 0)]


def test_rates_count_each_message_of_a_step(admin_client, two_brokers):
    """A put of three and a get of two are one journal row each: the rates count the
    messages they stand for."""
    from brokers.services.messages import message_get

    message_put(broker="SEEN", queue="Q1", messages=[MessageInput(body=b"a")] * 3)
    message_put(broker="SEEN", queue="Q1", messages=[MessageInput(body=b"b")])
    assert len(message_get(broker="SEEN", queue="Q1", batch=2).messages) == 2
    points = admin_client.get("/rates/?window=3600").json()["points"]
    assert (sum(p["put"] for p in points), sum(p["get"] for p in points)) == (4, 2)


def test_queue_rates_from_the_metrics_counters_and_depth_from_queue_samples(queue, admin_client):
    """The queue page's rates are the differences of the samples' put and get totals, which
    are /metrics' counters: the page and a scrape agree."""
    from brokers.operating.selectors import platform_figures
    from brokers.operating.traffic import traffic_fold
    from brokers.services.message_input import MessageInput
    from brokers.services.messages import message_get, message_put
    from dashboard.models import QueueDepthSample
    from dashboard.services.depth import depth_sample_take

    depth_sample_take()  # before any traffic: no row for the queue (empty, totals 0)
    assert QueueDepthSample.objects.count() == 0
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"m")] * 3)
    message_get(broker="QM1", queue="Q1")
    depth_sample_take()
    [sample] = QueueDepthSample.objects.all()
    [figures] = [q for q in platform_figures(brokers=None).queues if q.queue == "Q1"]
    assert (sample.puts, sample.gets) == (figures.puts, figures.gets) == (3, 1)
    message_get(broker="QM1", queue="Q1", batch=2)
    traffic_fold()  # folded or not, the totals are the same
    depth_sample_take()  # empty now, but with puts and gets counted: a row with its totals
    assert [(s.available, s.puts, s.gets) for s in QueueDepthSample.objects.order_by("at")] == [(2, 3, 1), (0, 3, 3)]
    data = queue_rates(broker="QM1", queue="Q1", window_s=600)
    assert sum(p["put"] for p in data["points"]) == 3 and sum(p["get"] for p in data["points"]) == 3
    assert [(d["available"], d["in_flight"]) for d in data["depth"]] == [(0, 0), (2, 0), (0, 0)]
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"n")] * 2)  # after the last sample
    data = queue_rates(broker="QM1", queue="Q1", window_s=600)
    assert sum(p["put"] for p in data["points"]) == 5  # the totals now close the history
    answer = admin_client.get("/brokers/QM1/queues/Q1/rates/?window=3600")
    assert answer.status_code == 200 and answer.json()["bucket"] == 60
    bad = admin_client.get("/brokers/QM1/queues/Q1/rates/?window=5")
    assert bad.status_code == 400 and "window" in bad.json()["message"]
