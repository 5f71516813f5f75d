// Channels: brokers and channels drawn as a graph (edges labelled with messages sent and
// the state), the table kept live from /ws/overview/, and a chart of the messages per
// second they send (summed; between two pushes, since the page opened).
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
    { selector: "edge", style: { label: "data(label)", "font-size": 10, color: cssVar("--fg"), "curve-style": "bezier",
      width: 2, "line-color": "data(colour)", "target-arrow-color": "data(colour)", "target-arrow-shape": "triangle",
      "text-background-color": cssVar("--bg"), "text-background-opacity": 0.85 } },
  ],
});

const seen = new Map(); // channel -> {sent, at, rate}: messages per second between two pushes

function rateOf(c) {
  const now = Date.now() / 1000, last = seen.get(c.name);
  let rate = last ? last.rate : 0;
  if (last && now - last.at >= 1) rate = Math.max(0, (c.messages_sent - last.sent) / (now - last.at));
  if (!last || now - last.at >= 1) seen.set(c.name, { sent: c.messages_sent, at: now, rate });
  return rate;
}

function edgeData(c) {
  return { id: `ch:${c.name}`, source: c.source_broker, target: c.target_broker,
    label: `${c.name}: ${rateOf(c).toFixed(1)} msg/s, ${c.messages_sent} sent, ${c.state}`, colour: cssVar(STATE_COLOUR[c.state] || "--muted") };
}

function draw() {
  const names = new Set(brokers.map((b) => b.name));
  channels.forEach((c) => { names.add(c.source_broker); names.add(c.target_broker); });
  cy.add([...names].map((id) => ({ group: "nodes", data: { id } })));
  cy.add(channels.map((c) => ({ group: "edges", data: edgeData(c) })));
  cy.layout({ name: "dagre", rankDir: "LR", rankSep: 160, fit: true, padding: 30 }).run();
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
window.batonChannels = { edgeLabel: (name) => cy.getElementById(`ch:${name}`).data("label") };
follow("/ws/overview/", { onMessage: (msg) => { if (msg.type === "overview") update(msg.data.channels); } });
