// Overview: live queue counts and two charts (event rates from the journal, depth from the
// beat task's samples), fed by /ws/overview/ and, for history, /rates/?window=.
import uPlot from "uplot";
import { cssVar, follow } from "./live.js";

const KINDS = ["put", "get", "commit", "rollback"];
const PARTS = ["available", "uncommitted_puts", "in_flight", "locked"];
const windowSelect = document.getElementById("window");
let windowS = Number(windowSelect.value);
let bucket = 1;
let rates = new Map(); // bucket start (s) -> {put, get, commit, rollback}
let depth = [[], [], [], [], []]; // time, then one array per part

function chart(el, labels, colours) {
  const opts = {
    width: el.clientWidth || 400, height: 200,
    axes: [{ stroke: cssVar("--muted") }, { stroke: cssVar("--muted") }],
    scales: { x: { time: true, range: () => { const now = Date.now() / 1000; return [now - windowS, now]; } },
              y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
    series: [{}, ...labels.map((label, i) => ({ label, stroke: colours[i], width: 2 }))],
  };
  return new uPlot(opts, [[], ...labels.map(() => [])], el);
}

const colours = () => [cssVar("--active"), cssVar("--committed"), cssVar("--held"), cssVar("--rolled_back")];
let ratesChart = chart(document.getElementById("rates-chart"), ["puts/s", "gets/s", "commits/s", "rollbacks/s"], colours());
let depthChart = chart(document.getElementById("depth-chart"), ["available", "uncommitted", "in flight", "locked"],
  [cssVar("--committed"), cssVar("--held"), cssVar("--active"), cssVar("--rolled_back")]);

function drawRates() {
  const now = Math.floor(Date.now() / 1000);
  const start = Math.floor((now - windowS) / bucket) * bucket;
  const xs = [], ys = KINDS.map(() => []);
  for (let t = start; t <= now; t += bucket) {
    const point = rates.get(t);
    xs.push(t);
    KINDS.forEach((k, i) => ys[i].push(point ? point[k] / bucket : 0));
  }
  ratesChart.setData([xs, ...ys]);
}

async function loadRates() {
  const response = await fetch(`/rates/?window=${windowS}`, { headers: { Accept: "application/json" } });
  if (!response.ok) return;
  const data = await response.json();
  bucket = data.bucket;
  rates = new Map(data.points.map((p) => [p.t, p]));
  seedDepth(data.depth || []);
  drawRates();
}

// History from the samples, then the live points taken since the last sample.
function seedDepth(points) {
  const last = points.length ? points[points.length - 1].t : -Infinity;
  const live = depth[0].map((t, i) => i).filter((i) => depth[0][i] > last);
  const seeded = [points.map((p) => p.t), ...PARTS.map((part) => points.map((p) => p[part]))];
  seeded.forEach((values, k) => { depth[k] = [...values, ...live.map((i) => depth[k][i])]; });
  depthChart.setData(depth);
}

function addCounts(counts) {
  const t = Math.floor(Date.now() / 1000 / bucket) * bucket;
  const point = rates.get(t) || { t, put: 0, get: 0, commit: 0, rollback: 0 };
  for (const perKind of Object.values(counts)) for (const k of KINDS) point[k] += perKind[k] || 0;
  rates.set(t, point);
}

function showCounts(data) {
  const totals = Object.fromEntries(PARTS.map((p) => [p, 0]));
  for (const broker of data.brokers) {
    const section = document.querySelector(`section.broker[data-broker="${CSS.escape(broker.name)}"]`);
    for (const q of broker.queues) {
      PARTS.forEach((p) => { totals[p] += q[p]; });
      const row = section && section.querySelector(`tr[data-queue="${CSS.escape(q.name)}"]`);
      if (!row) continue;
      for (const p of PARTS) row.querySelector(`[data-field="${p}"]`).textContent = q[p];
      const sum = PARTS.reduce((s, p) => s + q[p], 0) || 1;
      const bars = row.querySelectorAll(".bar span");
      PARTS.forEach((p, i) => { bars[i].style.width = `${(100 * q[p]) / sum}%`; });
    }
  }
  depth[0].push(Date.now() / 1000);
  PARTS.forEach((p, i) => depth[i + 1].push(totals[p]));
  const cut = depth[0].findIndex((t) => t >= Date.now() / 1000 - windowS);
  if (cut > 0) depth.forEach((a) => a.splice(0, cut));
  depthChart.setData(depth);
}

follow(document.getElementById("brokers").dataset.socket, {
  onOpen: loadRates,
  onMessage: (msg) => {
    if (msg.type !== "overview") return;
    addCounts(msg.counts || {});
    showCounts(msg.data);
    drawRates();
  },
});
windowSelect.addEventListener("change", () => { windowS = Number(windowSelect.value); loadRates(); });
window.batonOverview = { rates: () => ratesChart.data, depth: () => depthChart.data, windowS: () => windowS };
setInterval(drawRates, 1000); // slide the window along with the clock
window.addEventListener("resize", () => {
  for (const c of [ratesChart, depthChart]) c.setSize({ width: c.root.parentElement.clientWidth - 20, height: 200 });
});
