// Channels: brokers and channels drawn as a graph (edges labelled with messages sent and
// the state), the table kept live from /ws/overview/, and a chart of the messages per
// second they send (summed): the journal's last ten minutes (/channels/rates/), then live
// between two pushes. Each edge says its channel's rate and backlog (transmission queue).
import cytoscape from "cytoscape";
import dagre from "cytoscape-dagre";
import { cssVar, follow } from "./live.js";
import { MIN_SPAN_S, fitToParent, timeChart } from "./timechart.js";

cytoscape.use(dagre);
const STATE_COLOUR = { running: "--committed", retrying: "--held", in_doubt: "--rolled_back", stopped: "--muted" };
const brokers = JSON.parse(document.getElementById("brokers-data").textContent);
let channels = JSON.parse(document.getElementById("channels-data").textContent);

const cy = cytoscape({
  container: document.getElementById("topology"), boxSelectionEnabled: false, wheelSensitivity: 0.3, maxZoom: 1.2,
  style: [
    { selector: "node", style: { label: "data(id)", shape: "round-rectangle", width: 80, height: 32, "text-valign": "center",
      "font-size": 11, "background-color": cssVar("--panel"), "border-width": 2, "border-color": cssVar("--accent"), color: cssVar("--fg") } },
    { selector: "edge", style: { label: "data(label)", "font-size": 10, "text-wrap": "wrap", "text-max-width": 150, color: cssVar("--fg"), "curve-style": "bezier",
      width: 2, "line-color": "data(colour)", "target-arrow-color": "data(colour)", "target-arrow-shape": "triangle",
      "text-background-color": cssVar("--bg"), "text-background-opacity": 0.85 } },
  ],
});

const seen = new Map(); // channel -> {sent, at, rate}: messages per second between two pushes
const backlog = new Map(); // channel -> messages on its transmission queue (undefined: not seen)

function rateOf(c) {
  const now = Date.now() / 1000, last = seen.get(c.name);
  let rate = last ? last.rate : 0;
  if (last && now - last.at >= 1) rate = Math.max(0, (c.messages_sent - last.sent) / (now - last.at));
  if (!last || now - last.at >= 1) seen.set(c.name, { sent: c.messages_sent, at: now, rate });
  return rate;
}

function edgeData(c) {
  return { id: `ch:${c.name}`, source: c.source_broker, target: c.target_broker,
    label: `${c.name}\n${rateOf(c).toFixed(1)} msg/s · ${c.messages_sent} sent\n${c.state.replaceAll("_", " ")}${backlog.has(c.name) ? ` · ${backlog.get(c.name)} waiting` : ""}`, colour: cssVar(STATE_COLOUR[c.state] || "--muted") };
}

function draw() {
  const names = new Set(brokers.map((b) => b.name));
  channels.forEach((c) => { names.add(c.source_broker); names.add(c.target_broker); });
  cy.add([...names].map((id) => ({ group: "nodes", data: { id } })));
  cy.add(channels.map((c) => ({ group: "edges", data: edgeData(c) })));
  cy.layout({ name: "dagre", rankDir: "LR", rankSep: 200, nodeSep: 60, fit: false }).run();
  cy.fit(undefined, 20); // labels are in the elements' bounding box: none is cut at the frame
}

const sentEl = document.getElementById("sent-chart");
const drawSent = timeChart(sentEl, { lines: [{ label: "messages/s", colour: cssVar("--active") }], range: () => ({ windowS: MIN_SPAN_S }) });
let sent = [[], []]; // time (s), messages per second since the push before
let lastTotal = null; // {at, total}: messages sent over the channels shown, at the last push

function redrawSent() {
  const cut = sent[0].findIndex((t) => t >= Date.now() / 1000 - MIN_SPAN_S);
  if (cut !== 0) sent = sent.map((a) => (cut < 0 ? [] : a.slice(cut)));
  drawSent(sent);
}

function addSent(list) {
  const at = Date.now() / 1000, total = list.reduce((s, c) => s + c.messages_sent, 0);
  if (lastTotal && total > lastTotal.total && at > lastTotal.at) {
    sent[0].push(at);
    sent[1].push((total - lastTotal.total) / (at - lastTotal.at));
  }
  lastTotal = { at, total };
  redrawSent();
}

// The transmission queues' depths from an overview push (queues the user sees only).
function backlogs(data) {
  const depth = new Map();
  for (const b of data.brokers) for (const q of b.queues) depth.set(`${b.name}\u0000${q.name}`, q.depth);
  backlog.clear();
  for (const c of data.channels) {
    const d = depth.get(`${c.source_broker}\u0000${c.transmission_queue}`);
    if (d !== undefined) backlog.set(c.name, d);
    const cell = document.querySelector(`tr[data-channel="${CSS.escape(c.name)}"] [data-field="backlog"]`);
    if (cell) cell.textContent = d === undefined ? "—" : String(d);
  }
}

// History from the journal: the chart's points before the page opened, each edge's rate.
async function loadHistory() {
  const response = await fetch("/channels/rates/", { headers: { Accept: "application/json" } });
  if (!response.ok) return;
  const data = await response.json();
  const live = sent[0].map((t, i) => i).filter((i) => sent[0][i] > (data.points.at(-1)?.t ?? -Infinity) + data.bucket);
  sent = [[...data.points.map((p) => p.t + data.bucket), ...live.map((i) => sent[0][i])],
    [...data.points.map((p) => p.rate), ...live.map((i) => sent[1][i])]];
  const now = Date.now() / 1000;
  for (const c of channels) {
    if (!seen.has(c.name)) seen.set(c.name, { sent: c.messages_sent, at: now, rate: data.channels[c.name] || 0 });
    const edge = cy.getElementById(`ch:${c.name}`);
    if (edge.nonempty()) edge.data(edgeData(c));
  }
  redrawSent();
}

function update(list) {
  addSent(list);
  for (const c of list) {
    const edge = cy.getElementById(`ch:${c.name}`);
    if (edge.nonempty()) edge.data(edgeData(c));
    const row = document.querySelector(`tr[data-channel="${CSS.escape(c.name)}"]`);
    if (!row) continue;
    for (const f of ["state", "batches_committed", "batches_backed_out", "messages_sent", "last_batch_seq", "last_error", "in_doubt_seq"]) {
      const value = c[f] ?? "";
      row.querySelector(`[data-field="${f}"]`).textContent = f === "state" ? String(value).replaceAll("_", " ") : value;
    }
  }
  channels = list;
}

draw();
// For tests: draw these samples ([{t, rate}]) as if they had been pushed.
sentEl.batonDraw = (points) => { sent = [points.map((p) => p.t), points.map((p) => p.rate)]; redrawSent(); };
setInterval(redrawSent, 1000); // slide the window along with the clock
window.addEventListener("resize", () => fitToParent(sentEl.uplot));
window.batonChannels = { edgeLabel: (name) => cy.getElementById(`ch:${name}`).data("label"), sent: () => sent, cy };
follow("/ws/overview/", {
  onOpen: loadHistory,
  onMessage: (msg) => {
    if (msg.type !== "overview") return;
    backlogs(msg.data);
    update(msg.data.channels);
  },
});
