"""``/metrics``: the platform's figures in the Prometheus exposition format, written by
``prometheus_client`` from a collector that reads them from the database at each scrape
(``selectors.platform_figures``), so every web process reports the same. Metric names and
labels: docs/monitoring.md.

A scrape with 1,000 queues has 5,000 queue series, and writing them is most of its cost
(docs/monitoring.md, "Cost of a scrape": about 4 µs a series): five per queue, no more. The
collector builds each queue's label set once and shares it among that queue's samples, and
the exposition is written straight from the collector (no registry built per scrape).
``baton_queue_depth_high`` has a series only for the queues with ``depth_high_pct`` set."""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from .selectors import QueueFigures, platform_figures

#: The per-queue families: (name, type, help, the figure's attribute).
QUEUE_FAMILIES = [
    ("baton_queue_depth", "gauge", "Committed messages on the queue.", "depth"),
    (
        "baton_queue_oldest_message_age_seconds",
        "gauge",
        "Age of the oldest committed message on the queue (0: none).",
        "oldest_age_s",
    ),
    ("baton_queue_uncommitted_puts", "gauge", "Messages put under units of work still open.", "uncommitted_puts"),
    ("baton_messages_put", "counter", "Messages put on the queue.", "puts"),
    ("baton_messages_got", "counter", "Messages gotten from the queue.", "gets"),
]


def _queue_families(queues: list[QueueFigures]) -> list[Metric]:
    """The per-queue families, each sample labelled ``broker`` and ``queue`` (one label
    dictionary per queue, shared by its samples: the encoder only reads it)."""
    labels = [{"broker": q.broker, "queue": q.queue} for q in queues]
    families = []
    for name, kind, documentation, attribute in QUEUE_FAMILIES:
        family = Metric(name, documentation, kind)
        sample = f"{name}_total" if kind == "counter" else name
        family.samples = [Sample(sample, lab, getattr(q, attribute)) for lab, q in zip(labels, queues)]
        families.append(family)
    high = Metric(
        "baton_queue_depth_high", "1 while the depth is at or over the queue's depth_high_pct of max_depth.", "gauge"
    )
    high.samples = [
        Sample("baton_queue_depth_high", lab, 1 if q.depth >= q.depth_high else 0)
        for lab, q in zip(labels, queues)
        if q.depth_high is not None
    ]
    families.append(high)
    return families


class PlatformCollector(Collector):
    """The figures of ``brokers`` (None: every broker and the platform's own)."""

    def __init__(self, *, brokers: frozenset[str] | None):
        self.brokers = brokers

    def collect(self):
        figures = platform_figures(brokers=self.brokers)
        yield from _queue_families(figures.queues)

        units = GaugeMetricFamily("baton_units_of_work", "Open units of work by state.", labels=["broker", "state"])
        for (broker, state), n in sorted(figures.units_of_work.items()):
            units.add_metric([broker, state], n)
        yield units

        up = GaugeMetricFamily("baton_channel_up", "1 while the channel runs, 0 otherwise.", labels=["channel"])
        sent = CounterMetricFamily("baton_channel_messages_sent", "Messages the channel delivered.", labels=["channel"])
        for name, running, messages in figures.channels:
            up.add_metric([name], 1 if running else 0)
            sent.add_metric([name], messages)
        yield from (up, sent)

        instances = GaugeMetricFamily(
            "baton_workflow_instances", "Workflow instances by state.", labels=["broker", "workflow", "state"]
        )
        for (broker, workflow, state), n in sorted(figures.workflow_instances.items()):
            instances.add_metric([broker, workflow, state], n)
        yield instances
        yield GaugeMetricFamily("baton_stomp_connections", "Connected STOMP clients.", value=figures.stomp_connections)
        yield GaugeMetricFamily("baton_sessions", "Open application connections.", value=figures.sessions)
        if figures.processes is not None:  # the platform's own figures
            beats = GaugeMetricFamily(
                "baton_process_heartbeat_age_seconds",
                "Seconds since the process's last heartbeat (web, worker, beat).",
                labels=["kind", "name"],
            )
            for kind, name, age in figures.processes:
                beats.add_metric([kind, name], round(age, 3))
            yield beats


def metrics_exposition(*, brokers: frozenset[str] | None) -> tuple[bytes, str]:
    """The exposition of ``brokers``' figures in the Prometheus text format (0.0.4), and its
    content type, whatever format the scraper prefers: Prometheus asks for OpenMetrics
    first and takes the text format as well, and prometheus_client's OpenMetrics writer
    costs twice as much a series (it escapes each sample's name character by character)."""
    return generate_latest(PlatformCollector(brokers=brokers)), CONTENT_TYPE_PLAIN_0_0_4
