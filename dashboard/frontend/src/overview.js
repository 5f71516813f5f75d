// Overview: brokers and queues with live counts (rows come and go as they are defined and
// deleted) and two charts (event rates from the journal, depth from the beat task's
// samples), fed by /ws/overview/ and, for history, /rates/?window=.
import { showAlerts } from "./alerts.js";
import { cssVar, follow } from "./live.js";
import { pagePath, part, syncKeyed } from "./rows.js";
import { fitToParent, timeChart } from "./timechart.js";
import { span, when } from "./when.js";

const KINDS = ["put", "get", "commit", "rollback"];
const PARTS = ["available", "uncommitted_puts", "in_flight", "locked"];
const windowSelect = document.getElementById("window");
let windowS = Number(windowSelect.value);
let bucket = 1;
let rates = new Map(); // bucket start (s) -> {put, get, commit, rollback}
let depth = [[], [], [], [], []]; // time, then one array per part

const ratesEl = document.getElementById("rates-chart");
const depthEl = document.getElementById("depth-chart");
const drawRatesChart = timeChart(ratesEl, {
  lines: [["puts/s", "--active"], ["gets/s", "--committed"], ["commits/s", "--held"], ["rollbacks/s", "--rolled_back"]]
    .map(([label, colour]) => ({ label, colour: cssVar(colour), zeroFilled: true })),
  range: () => ({ windowS }),
});
const drawDepthChart = timeChart(depthEl, {
  lines: [["available", "--committed"], ["uncommitted", "--held"], ["in flight", "--active"], ["locked", "--rolled_back"]]
    .map(([label, colour]) => ({ label, colour: cssVar(colour) })),
  range: () => ({ windowS }),
});

// Every bucket of the window, zero where nothing happened; empty when nothing did.
function drawRates() {
  const now = Math.floor(Date.now() / 1000);
  const start = Math.floor((now - windowS) / bucket) * bucket;
  const xs = [], ys = KINDS.map(() => []);
  let any = false;
  for (let t = start; t <= now; t += bucket) {
    const point = rates.get(t);
    xs.push(t);
    KINDS.forEach((k, i) => ys[i].push(point ? point[k] / bucket : 0));
    any = any || Boolean(point && KINDS.some((k) => point[k]));
  }
  drawRatesChart([xs, ...ys], { isEmpty: !any });
}

// A /rates/ answer: rates per bucket and depth history.
function showRates(data) {
  bucket = data.bucket;
  rates = new Map(data.points.map((p) => [p.t, p]));
  seedDepth(data.depth || []);
  drawRates();
}

async function loadRates() {
  const response = await fetch(`/rates/?window=${windowS}`, { headers: { Accept: "application/json" } });
  if (response.ok) showRates(await response.json());
}

// History from the samples, then the live points taken since the last sample.
function seedDepth(points) {
  const last = points.length ? points[points.length - 1].t : -Infinity;
  const live = depth[0].map((t, i) => i).filter((i) => depth[0][i] > last);
  const seeded = [points.map((p) => p.t), ...PARTS.map((part) => points.map((p) => p[part]))];
  seeded.forEach((values, k) => { depth[k] = [...values, ...live.map((i) => depth[k][i])]; });
  drawDepthChart(depth);
}

function addCounts(counts) {
  const t = Math.floor(Date.now() / 1000 / bucket) * bucket;
  const point = rates.get(t) || { t, put: 0, get: 0, commit: 0, rollback: 0 };
  for (const perKind of Object.values(counts)) for (const k of KINDS) point[k] += perKind[k] || 0;
  rates.set(t, point);
}

const brokersEl = document.getElementById("brokers");
const brokerTemplate = document.getElementById("broker-template");
const queueTemplate = document.getElementById("queue-template");

function fillQueue(row, q) {
  for (const p of PARTS) row.querySelector(`[data-field="${p}"]`).textContent = q[p];
  const sum = PARTS.reduce((s, p) => s + q[p], 0) || 1;
  const bars = row.querySelectorAll(".bar span");
  PARTS.forEach((p, i) => { bars[i].style.width = `${(100 * q[p]) / sum}%`; });
}

// The brokers and queues the push names, with their counts; a depth point of their sums.
function showCounts(data) {
  syncKeyed(brokersEl, data.brokers, {
    key: "broker", template: brokerTemplate, none: document.getElementById("no-brokers"),
    made: (section, b) => {
      const link = part(section, "broker-link");
      link.href = pagePath("brokers", b.name);
      link.textContent = b.name;
      part(section, "graph-link").href = `${pagePath("brokers", b.name)}transactions/`;
    },
    fill: (section, b) => syncKeyed(section.querySelector("tbody"), b.queues, {
      key: "queue", template: queueTemplate, none: section.querySelector("tr.none"), fill: fillQueue,
      made: (row, q) => {
        const link = part(row, "queue-link");
        link.href = pagePath("brokers", b.name, "queues", q.name);
        link.textContent = q.name;
        part(row, "kind").textContent = q.usage === "transmission" ? `${q.kind} (xmit)` : q.kind;
      },
    }),
  });
  const totals = Object.fromEntries(PARTS.map((p) => [p, 0]));
  for (const b of data.brokers) for (const q of b.queues) PARTS.forEach((p) => { totals[p] += q[p]; });
  depth[0].push(Date.now() / 1000);
  PARTS.forEach((p, i) => depth[i + 1].push(totals[p]));
  const cut = depth[0].findIndex((t) => t >= Date.now() / 1000 - windowS);
  if (cut > 0) depth.forEach((a) => a.splice(0, cut));
  drawDepthChart(depth);
}

const stompTable = document.getElementById("stomp-table");
const stompRow = document.getElementById("stomp-template");
const stompSubscription = document.getElementById("stomp-subscription");
const stompCloseForm = document.getElementById("stomp-close-form");

// Close for the rows the user may close: its own connections, and every one on the brokers
// it administers ("*": a superuser's, all of them); the console's close form, back here.
function stompCloseCell(cell, c) {
  const { closeUsername, closeBrokers = "" } = stompTable.dataset;
  const brokers = closeBrokers.split(" ");
  if (c.closing) {
    cell.replaceChildren(Object.assign(document.createElement("span"), { className: "muted", textContent: "closing…" }));
  } else if (c.username === closeUsername || brokers.includes("*") || brokers.includes(c.broker)) {
    const form = stompCloseForm.content.firstElementChild.cloneNode(true);
    form.action = pagePath("brokers", c.broker, "stomp", c.name, "close");
    cell.replaceChildren(form);
  } else {
    cell.replaceChildren(Object.assign(document.createElement("span"), { className: "muted", textContent: "—" }));
  }
}

function showStomp(list) {
  if (!stompTable || !list) return;
  syncKeyed(stompTable.tBodies[0], list, {
    key: "session", template: stompRow, none: stompTable.querySelector("tr.none"),
    fill: (row, c) => {
      for (const f of ["broker", "username", "peer", "transport", "version", "open_transactions"]) {
        row.querySelector(`[data-field="${f}"]`).textContent = String(c[f]);
      }
      row.querySelector('[data-field="connected_at"]').textContent = when(c.connected_at);
      const subscriptions = c.subscriptions.map((s) => {
        const el = stompSubscription.content.firstElementChild.cloneNode(true);
        part(el, "destination").textContent = s.destination;
        part(el, "detail").textContent = `(${s.ack}, ${s.unacknowledged} unacknowledged)`;
        return el;
      });
      const cell = row.querySelector('[data-field="subscriptions"]');
      if (subscriptions.length) cell.replaceChildren(...subscriptions);
      else cell.replaceChildren(Object.assign(document.createElement("span"), { className: "muted", textContent: "none" }));
      stompCloseCell(row.querySelector('[data-field="close"]'), c);
    },
  });
}

// Process health: each row's status from its last heartbeat's age, judged every second (a
// process that stopped sends nothing, so the page's clock tells).
const processTable = document.getElementById("process-table");
const processRow = document.getElementById("process-template");

function showProcesses(list) {
  if (!processTable || !list) return;
  syncKeyed(processTable.tBodies[0], list.map((p) => ({ ...p, process: p.name, name: p.key })), {
    key: "key", template: processRow, none: processTable.querySelector("tr.none"),
    fill: (row, p) => {
      row.dataset.kind = p.kind;
      row.dataset.seen = p.seen_at;
      row.dataset.interval = p.interval_s;
      row.querySelector('[data-field="kind"]').textContent = p.kind;
      row.querySelector('[data-field="name"]').textContent = p.process;
      row.querySelector('[data-field="seen_at"]').textContent = when(p.seen_at);
      row.querySelector('[data-field="started_at"]').textContent = when(p.started_at);
    },
  });
  judgeProcesses();
}

function judgeProcesses() {
  if (!processTable) return;
  const best = {};
  for (const row of processTable.tBodies[0].querySelectorAll("tr[data-seen]")) {
    const age = (Date.now() - Date.parse(row.dataset.seen)) / 1000;
    const alive = age < 3 * Number(row.dataset.interval);
    row.dataset.alive = String(alive);
    const cell = row.querySelector('[data-field="status"]');
    cell.textContent = alive ? `● alive (${span(age)} ago)` : `✖ silent for ${span(age)}`;
    cell.className = alive ? "state-committed" : "state-rolled_back";
    const kind = row.dataset.kind;
    if (best[kind] === undefined || age < best[kind]) best[kind] = age;
  }
  for (const badge of document.querySelectorAll("#process-summary [data-kind]")) {
    const age = best[badge.dataset.kind];
    const row = processTable.querySelector(`tr[data-kind="${badge.dataset.kind}"]`);
    const alive = age !== undefined && age < 3 * Number(row.dataset.interval);
    badge.dataset.alive = String(alive);
    badge.classList.toggle("live", alive);
    badge.classList.toggle("stale", !alive);
    part(badge, "status").textContent = age === undefined ? "no heartbeat yet"
      : alive ? `alive, last heartbeat ${span(age)} ago` : `silent for ${span(age)}`;
  }
}
judgeProcesses();
setInterval(judgeProcesses, 1000);

follow(brokersEl.dataset.socket, {
  onOpen: loadRates,
  onMessage: (msg) => {
    if (msg.type !== "overview") return;
    addCounts(msg.counts || {});
    showCounts(msg.data);
    showStomp(msg.data.stomp);
    showProcesses(msg.data.processes);
    showAlerts(msg.alerts);
    drawRates();
  },
});
windowSelect.addEventListener("change", () => { windowS = Number(windowSelect.value); loadRates(); });
// For tests: the charts' data, and drawing a /rates/ answer (rates and depth history) as if fetched.
ratesEl.batonDraw = depthEl.batonDraw = (data) => { depth = [[], [], [], [], []]; showRates(data); };
window.batonOverview = { rates: () => ratesEl.uplot.data, depth: () => depthEl.uplot.data, windowS: () => windowS };
setInterval(() => { drawRates(); drawDepthChart(depth); }, 1000); // slide the window along with the clock
window.addEventListener("resize", () => { fitToParent(ratesEl.uplot); fitToParent(depthEl.uplot); });
