"""Every time chart of the console (overview rates and depth, channels, analytics) drawn in a
real browser with 0, 1, 2 and 100 samples, through the page's own drawing code: the x axis
(read from uPlot's scale, not from pixels) spans the chosen window, or ten minutes around
points that span less, and the points' own span when they span more; a chart with
nothing to draw says so."""

from __future__ import annotations

from datetime import UTC, datetime

from playwright.sync_api import expect

from tests.integration.servers import manage

SAMPLES = (0, 1, 2, 100)
TEN_MINUTES = 600

# Draw `data` on the chart `selector` (its batonDraw: input as the page receives it), then
# read the x scale uPlot settled on. uPlot commits in a microtask: awaiting a few more reads
# the scale before any pushed frame (a task) could draw again.
DRAWN = """async ([selector, data]) => {
  const el = document.querySelector(selector);
  el.batonDraw(data);
  for (let i = 0; i < 5; i++) await Promise.resolve();
  const x = el.uplot.scales.x;
  return {min: x.min, max: x.max, xs: el.uplot.data[0].length, empty: el.dataset.empty === "true",
          emptyShown: !el.parentElement.querySelector(".chart-empty").hidden};
}"""


def page_now(page) -> float:
    return page.evaluate("Date.now() / 1000")


def live_span_checked(drawn: dict, *, now: float, window: int, n: int, bucket: int = 0) -> None:
    """A live chart: the window ending now (and the bucket it starts in), whatever the
    number of samples."""
    assert drawn["max"] - drawn["min"] >= window
    assert drawn["max"] - drawn["min"] <= window + bucket + 5, drawn
    assert now - 1 <= drawn["max"] <= now + 5, drawn
    assert drawn["empty"] is drawn["emptyShown"] is (n == 0), drawn


def test_overview_charts_span_their_window(admin_page, site):
    page = admin_page
    page.goto(f"{site.url}/")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    for window, label in ((600, "10 minutes"), (86400, "24 hours")):
        with page.expect_response(lambda r, w=window: r.url.endswith(f"/rates/?window={w}")):
            page.select_option("#window", label=label)
        bucket = 1 if window <= 600 else 60
        for n in SAMPLES:
            now = page_now(page)
            # n samples, the last this bucket, spread over at most the window
            times = [int((now - k * (window // 200)) // bucket * bucket) for k in range(n)][::-1]
            rates = {
                "window": window,
                "bucket": bucket,
                "points": [{"t": t, "put": 2, "get": 1, "commit": 1, "rollback": 0} for t in times],
                "depth": [{"t": t, "available": 3, "uncommitted_puts": 1, "in_flight": 0, "locked": 0} for t in times],
            }
            for chart in ("#rates-chart", "#depth-chart"):
                drawn = page.evaluate(DRAWN, [chart, rates])
                live_span_checked(drawn, now=now, window=window, n=n, bucket=bucket)
                if chart == "#depth-chart":
                    assert drawn["xs"] == n
    assert page.console.errors == []


def test_channels_chart_spans_ten_minutes(admin_page, site):
    page = admin_page
    page.goto(f"{site.url}/channels/")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    for n in SAMPLES:
        now = page_now(page)
        points = [{"t": now - k * 5, "rate": 4.0} for k in range(n)][::-1]
        drawn = page.evaluate(DRAWN, ["#sent-chart", points])
        live_span_checked(drawn, now=now, window=TEN_MINUTES, n=n)
        assert drawn["xs"] == n
    assert page.console.errors == []


def throughput(n: int, *, start: int = 1_795_000_000) -> list[dict]:
    """n minutes of results (the Spark job's throughput rows), one a minute from `start`."""

    def minute(k: int) -> str:
        return datetime.fromtimestamp(start + 60 * k, tz=UTC).isoformat().replace("+00:00", "Z")

    return [{"queue": "Q1", "minute": minute(k), "puts": 5 + k % 3, "gets": 4, "depth": k % 7} for k in range(n)]


def test_analytics_chart_spans_its_minutes(admin_page, site, fresh_broker):
    results = {"broker": {"committed": 1}, "queues": [], "throughput": throughput(1), "chains": []}
    manage(
        site.env,
        "shell",
        "-c",
        (
            "from django.utils import timezone; from analytics.models import AnalyticsRun, BrokerAnalytics, RunState; "
            "run = AnalyticsRun.objects.create(state=RunState.SUCCEEDED); "
            f"BrokerAnalytics.objects.create(broker={fresh_broker!r}, run=run, computed_at=timezone.now(), "
            f"results={results!r})"
        ),
    )
    page = admin_page
    page.goto(f"{site.url}/analytics/")
    chart = f'[data-chart="{fresh_broker}"]'
    first = page.evaluate("s => { const x = document.querySelector(s).uplot.scales.x; return [x.min, x.max]; }", chart)
    assert first[1] - first[0] == TEN_MINUTES  # as rendered: one minute of results, not years
    for n in SAMPLES:
        rows = throughput(n)
        drawn = page.evaluate(DRAWN, [chart, rows])
        span = drawn["max"] - drawn["min"]
        assert drawn["empty"] is drawn["emptyShown"] is (n == 0)
        assert drawn["xs"] == n
        if n == 0:
            assert span == TEN_MINUTES
            continue
        xs = [1_795_000_000 + 60 * k for k in range(n)]
        assert drawn["min"] < xs[0] and xs[-1] < drawn["max"]  # every bar inside, none on an edge
        assert span == max(TEN_MINUTES, xs[-1] - xs[0] + 120), drawn  # a minute's margin either side
    assert page.console.errors == []
