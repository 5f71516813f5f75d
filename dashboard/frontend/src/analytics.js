// Analytics: per broker, committed puts and gets per minute and the total depth, from the
// latest run's results (json_script "analytics-throughput").
import uPlot from "uplot";
import { cssVar } from "./live.js";

const byBroker = JSON.parse(document.getElementById("analytics-throughput").textContent);

function series(rows) {
  const minutes = new Map(); // minute (s) -> {puts, gets, depth per queue}
  for (const row of rows) {
    const t = Date.parse(row.minute) / 1000;
    const point = minutes.get(t) || { puts: 0, gets: 0, depth: new Map() };
    point.puts += row.puts;
    point.gets += row.gets;
    point.depth.set(row.queue, row.depth);
    minutes.set(t, point);
  }
  const xs = [...minutes.keys()].sort((a, b) => a - b);
  const last = new Map(); // each queue's depth carries forward to minutes without its events
  const depth = xs.map((t) => { minutes.get(t).depth.forEach((d, q) => last.set(q, d)); return [...last.values()].reduce((a, b) => a + b, 0); });
  return [xs, xs.map((t) => minutes.get(t).puts), xs.map((t) => minutes.get(t).gets), depth];
}

document.querySelectorAll("[data-chart]").forEach((el) => {
  const data = series(byBroker[el.dataset.chart] || []);
  if (!data[0].length) return;
  new uPlot({
    width: el.clientWidth || 600, height: 200,
    axes: [{ stroke: cssVar("--muted") }, { stroke: cssVar("--muted") }],
    scales: { x: { time: true } },
    series: [{}, { label: "puts/min", stroke: cssVar("--active"), width: 2 },
      { label: "gets/min", stroke: cssVar("--committed"), width: 2 }, { label: "depth", stroke: cssVar("--held"), width: 2 }],
  }, data, el);
});
