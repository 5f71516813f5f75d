"""``/metrics``: the platform's figures in the Prometheus exposition format, written by
``prometheus_client`` from a collector that reads them from the database at each scrape
(``selectors.platform_figures``), so every web process reports the same. Metric names and
labels: docs/monitoring.md."""

from __future__ import annotations

from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from .selectors import platform_figures


class PlatformCollector(Collector):
    """The figures of ``brokers`` (None: every broker and the platform's own)."""

    def __init__(self, *, brokers: frozenset[str] | None):
        self.brokers = brokers

    def collect(self):
        figures = platform_figures(brokers=self.brokers)
        queue_labels = ["broker", "queue"]
        depth = GaugeMetricFamily("baton_queue_depth", "Committed messages on the queue.", labels=queue_labels)
        max_depth = GaugeMetricFamily("baton_queue_max_depth", "The queue's max_depth.", labels=queue_labels)
        oldest = GaugeMetricFamily(
            "baton_queue_oldest_message_age_seconds",
            "Age of the oldest committed message on the queue (0: none).",
            labels=queue_labels,
        )
        uncommitted = GaugeMetricFamily(
            "baton_queue_uncommitted_puts", "Messages put under units of work still open.", labels=queue_labels
        )
        puts = CounterMetricFamily("baton_messages_put", "Messages put on the queue.", labels=queue_labels)
        gets = CounterMetricFamily("baton_messages_got", "Messages gotten from the queue.", labels=queue_labels)
        for q in figures.queues:
            labels = [q.broker, q.queue]
            depth.add_metric(labels, q.depth)
            max_depth.add_metric(labels, q.max_depth)
            oldest.add_metric(labels, q.oldest_age_s)
            uncommitted.add_metric(labels, q.uncommitted_puts)
            puts.add_metric(labels, q.puts)
            gets.add_metric(labels, q.gets)
        yield from (depth, max_depth, oldest, uncommitted, puts, gets)

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


def metrics_exposition(*, brokers: frozenset[str] | None, accept: str) -> tuple[bytes, str]:
    """The exposition of ``brokers``' figures in the format ``accept`` asks for (the text
    format unless it asks for OpenMetrics), and its content type."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PlatformCollector(brokers=brokers))
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type
