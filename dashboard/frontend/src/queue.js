// Queue page: its counts follow /ws/overview/ (the queue's part of each push, as the broker
// page's rows do); the message list below stays as loaded and says when it is behind. Two
// charts: puts and gets per second (history from …/rates/: the change of /metrics' put and
// get totals between samples; then the pushes' per-queue counts of the puts and gets those
// totals count) and depth (the samples' history, then each push's counts).
import { cssVar, follow } from "./live.js";
import { fitToParent, timeChart } from "./timechart.js";

const FIELDS = ["available", "uncommitted_puts", "in_flight", "locked", "depth"];
const box = document.getElementById("queue-counts");
const { broker, queue } = box.dataset;
const behind = document.getElementById("list-behind");
const total = (q) => q.depth + q.uncommitted_puts;
let loaded = null;

const DEPTH_PARTS = ["available", "uncommitted_puts", "in_flight", "locked"];
const activity = document.getElementById("queue-activity");
const windowSelect = document.getElementById("queue-window");
const ratesEl = document.getElementById("queue-rates-chart");
const depthEl = document.getElementById("queue-depth-chart");
let windowS = Number(windowSelect.value);
let bucket = 10;
let rates = new Map(); // bucket start (s) -> {put, get}
let depth = [[], [], [], [], []];
const drawRatesChart = timeChart(ratesEl, {
  lines: [["puts/s", "--active"], ["gets/s", "--committed"]].map(([label, colour]) => ({ label, colour: cssVar(colour), zeroFilled: true })),
  range: () => ({ windowS }),
});
const drawDepthChart = timeChart(depthEl, {
  lines: [["available", "--committed"], ["uncommitted", "--held"], ["in flight", "--active"], ["locked", "--rolled_back"]]
    .map(([label, colour]) => ({ label, colour: cssVar(colour) })),
  range: () => ({ windowS }),
});

function drawRates() {
  const now = Math.floor(Date.now() / 1000);
  const start = Math.floor((now - windowS) / bucket) * bucket;
  const xs = [], puts = [], gets = [];
  let any = false;
  for (let t = start; t <= now; t += bucket) {
    const p = rates.get(t);
    xs.push(t);
    puts.push(p ? p.put / bucket : 0);
    gets.push(p ? p.get / bucket : 0);
    any = any || Boolean(p && (p.put || p.get));
  }
  drawRatesChart([xs, puts, gets], { isEmpty: !any });
  let put = 0, get = 0;
  for (const [t, p] of rates) if (t >= now - 60) { put += p.put; get += p.get; }
  document.getElementById("queue-rate-now").textContent = `last minute: ${(put / 60).toFixed(2)} puts/s, ${(get / 60).toFixed(2)} gets/s`;
}

function showHistory(data) {
  bucket = data.bucket;
  rates = new Map(data.points.map((p) => [p.t, { put: p.put, get: p.get }]));
  const last = data.depth.length ? data.depth[data.depth.length - 1].t : -Infinity;
  const live = depth[0].map((t, i) => i).filter((i) => depth[0][i] > last);
  const seeded = [data.depth.map((p) => p.t), ...DEPTH_PARTS.map((part) => data.depth.map((p) => p[part]))];
  seeded.forEach((values, k) => { depth[k] = [...values, ...live.map((i) => depth[k][i])]; });
  drawRates();
  drawDepthChart(depth);
}

async function loadHistory() {
  const response = await fetch(`${activity.dataset.rates}?window=${windowS}`, { headers: { Accept: "application/json" } });
  if (response.ok) showHistory(await response.json());
}

function addLive(q, counts) {
  const now = Date.now() / 1000;
  if (counts) {
    const t = Math.floor(now / bucket) * bucket;
    const p = rates.get(t) || { put: 0, get: 0 };
    p.put += counts.put || 0;
    p.get += counts.get || 0;
    rates.set(t, p);
  }
  depth[0].push(now);
  DEPTH_PARTS.forEach((part, i) => depth[i + 1].push(q[part]));
  const cut = depth[0].findIndex((t) => t >= now - windowS);
  if (cut > 0) depth.forEach((a) => a.splice(0, cut));
  drawRates();
  drawDepthChart(depth);
}

function show(data, queues = {}) {
  const b = data.brokers.find((x) => x.name === broker);
  const q = b ? b.queues.find((x) => x.name === queue) : undefined;
  document.getElementById("queue-gone").hidden = Boolean(q);
  if (!q) return;
  for (const f of FIELDS) {
    const el = box.querySelector(`[data-field="${f}"]`);
    if (el) el.textContent = String(q[f]);
  }
  if (loaded === null) loaded = Number(box.dataset.total);
  if (behind) behind.hidden = total(q) === loaded;
  addLive(q, queues[broker]?.[queue]);
}

follow(box.dataset.socket, {
  onOpen: loadHistory,
  onMessage: (msg) => { if (msg.type === "overview") show(msg.data, msg.queues || {}); },
});
windowSelect.addEventListener("change", () => { windowS = Number(windowSelect.value); loadHistory(); });
setInterval(() => { drawRates(); drawDepthChart(depth); }, 1000); // slide the window along with the clock
window.addEventListener("resize", () => { fitToParent(ratesEl.uplot); fitToParent(depthEl.uplot); });
window.batonQueue = { rates: () => ratesEl.uplot.data, depth: () => depthEl.uplot.data };
