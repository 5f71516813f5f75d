// Analytics: per broker, committed puts and gets per minute (bars) and the total depth
// (line), from the latest run's results (json_script "analytics-throughput"). The time
// axis spans the minutes the results cover (at least ten minutes, centred on them).
import { cssVar } from "./live.js";
import { timeChart } from "./timechart.js";

const MINUTE = 60;
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
  const draw = timeChart(el, {
    lines: [{ label: "puts/min", colour: cssVar("--active"), bars: -1 }, { label: "gets/min", colour: cssVar("--committed"), bars: 1 },
      { label: "depth", colour: cssVar("--held") }],
    range: () => ({ bucketS: MINUTE }),
  });
  el.batonDraw = (rows) => draw(series(rows)); // also for tests: throughput rows as the results hold them
  el.batonDraw(byBroker[el.dataset.chart] || []);
});
