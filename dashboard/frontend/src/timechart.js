// Time charts (uPlot) of the overview, channels and analytics pages. The x range comes from
// the data and the chosen window, never from uPlot's guess (which stretches one point to a
// day and a few close ones to years); points show while they are few; the chart's
// `.chart-empty` sibling (rendered by the template) shows when there is nothing to draw.
// Each chart's element keeps its uPlot instance as `el.uplot`.
import uPlot from "uplot";
import { cssVar } from "./live.js";

// The narrowest span a chart shows: points closer together are centred in this much time.
export const MIN_SPAN_S = 600;

// [min, max] in seconds. With a window (live charts): the window ending now, widened to take
// in any point outside it (the bucket the window starts in). Without (results over whatever
// time they cover): the points' span plus a bucket either side, widened to MIN_SPAN_S
// around its middle when narrower.
export function xRange(xs, { windowS = 0, bucketS = 0, now = Date.now() / 1000 } = {}) {
  const first = xs.length ? xs[0] : null, last = xs.length ? xs[xs.length - 1] : null;
  if (windowS) return [Math.min(now - windowS, first ?? Infinity), Math.max(now, last ?? -Infinity)];
  if (first === null) return [now - MIN_SPAN_S, now];
  let lo = first - bucketS, hi = last + bucketS;
  if (hi - lo < MIN_SPAN_S) {
    const mid = (lo + hi) / 2;
    [lo, hi] = [mid - MIN_SPAN_S / 2, mid + MIN_SPAN_S / 2];
  }
  return [lo, hi];
}

// Bars for counts per bucket: two bar series side by side (align -1 and 1) read as groups.
export const bars = (align) => uPlot.paths.bars({ size: [0.45, 28, 2], align });

// Up to this many points are drawn as dots (uPlot by itself hides dots closer than 12 px).
const FEW = 60;

// Points only where a zero-filled series (a rate per bucket) has something, while those are
// few: one event in a day's window is a dot, not a hairline.
function nonZeroFew(u, i) {
  const at = [];
  u.data[i].forEach((v, k) => { if (v) at.push(k); });
  return at.length && at.length <= FEW ? at : null;
}

// A chart in `el`: `lines` are [{label, colour, bars?: -1 | 1, zeroFilled?}]; `range` gives the x range
// options (xRange's) at each redraw. Returns draw(data, {isEmpty}): data as uPlot's
// [xs, ...ys]; `isEmpty` (default: no x values) shows the chart's empty-state text.
export function timeChart(el, { lines, range = () => ({}), height = 200 }) {
  const empty = el.parentElement.querySelector(".chart-empty");
  const opts = {
    width: el.clientWidth || 400, height,
    // x ticks at least 80 px apart: a tick's second line (the date, the hour) fits between them
    axes: [{ stroke: cssVar("--muted"), space: 80 }, { stroke: cssVar("--muted") }],
    scales: {
      x: { time: true, range: (u) => xRange(u.data[0], range()) },
      y: { range: (u, min, max) => [0, Math.max(1, (max || 0) * 1.1)] },
    },
    series: [{}, ...lines.map(({ label, colour, bars: align, zeroFilled }) => {
      if (align) return { label, stroke: colour, fill: `${colour}99`, width: 1, paths: bars(align), points: { show: false } };
      const points = zeroFilled ? { show: false, filter: nonZeroFew, size: 7, fill: colour }
        : { show: (u, si, i0, i1) => i1 - i0 < FEW, size: 7, fill: colour }; // even when close together
      return { label, stroke: colour, width: 2, points };
    })],
  };
  const u = new uPlot(opts, [[], ...lines.map(() => [])], el);
  el.uplot = u;
  const draw = (data, { isEmpty = !data[0].length } = {}) => {
    u.setData(data);
    // the legend shows the latest values while the pointer is elsewhere (uPlot shows "--")
    if (data[0].length && !(u.cursor.left >= 0)) u.setLegend({ idx: data[0].length - 1 });
    el.dataset.empty = String(isEmpty);
    if (empty) empty.hidden = !isEmpty;
  };
  draw(u.data);
  return draw;
}

export function fitToParent(u, height = 200) {
  u.setSize({ width: u.root.parentElement.clientWidth - 20, height });
}
