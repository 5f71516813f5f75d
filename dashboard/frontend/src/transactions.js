// The live transaction graph of one broker: a cytoscape drawing (each connected component
// laid out on its own by dagre and tiled; an update re-lays out only the components it
// changed), a table with the same units of work, filters and a detail panel with a rollback.
// It opens on the live part (docs/dashboard.md): open units of work, what is linked to them
// and recent cascades; a resolved unit of work related to none of those goes a minute after
// it resolved.
import cytoscape from "cytoscape";
import dagre from "cytoscape-dagre";
import { cssVar, follow } from "./live.js";
import { span, when } from "./when.js";

cytoscape.use(dagre);

const GLYPH = { active: "●", commit_held: "◆", committed: "✔", rolled_back: "✖" };
const COLOUR = { active: "--active", commit_held: "--held", committed: "--committed", rolled_back: "--rolled_back" };
const LABEL = { active: "active", commit_held: "commit held", committed: "committed", rolled_back: "rolled back" };
const OPEN = new Set(["active", "commit_held"]);
let rowWidth = 1200;
const GAP = 40;
const KEEP_RESOLVED_MS = 60_000; // a resolved unit of work unrelated to the live part stays this long

const root = document.getElementById("graph-root");
const tbody = document.querySelector("#transaction-table tbody");
const rowTemplate = document.getElementById("row-template");
const filters = document.getElementById("filters");
const counts = document.getElementById("graph-counts");

const nodes = new Map(); // id -> {id, broker, state, reason, created_at, resolved_at}
const edges = new Map(); // key -> {upstream, downstream, resource}
const incident = new Map(); // id -> Set of edge keys
const caused = new Map(); // id of a unit of work whose rollback cascaded -> Set of the ids it backed out
const rows = new Map(); // id -> <tr>
let selected = decodeURIComponent(location.hash.slice(1)) || null;
let tile = { x: 0, y: 0, rowHeight: 0 };
const timings = { firstRenderMs: null, updatesMs: [] };
window.batonGraph = { timings, nodes, edges, caused };

const short = (id) => id.slice(0, 8);
// message ids begin with their time: the part after it tells neighbours apart
const shortMessage = (ref) => (/^[0-9a-f]{48}$/.test(ref) ? `msg …${ref.slice(8, 14)}` : ref.slice(0, 12));
const edgeKey = (e) => `${e.upstream}>${e.downstream}>${e.resource}`;

function style() {
  const c = (state) => cssVar(COLOUR[state] || "--muted");
  return [
    { selector: "node", style: {
      label: "data(label)", "font-size": 10, color: cssVar("--fg"), "text-valign": "bottom", "text-margin-y": 3,
      "background-color": (n) => c(n.data("state")), width: 22, height: 22, "min-zoomed-font-size": 7,
      "border-width": 2, "border-color": cssVar("--bg") } },
    { selector: 'node[state = "commit_held"]', style: { shape: "diamond", width: 26, height: 26 } },
    { selector: 'node[state = "committed"]', style: { shape: "round-rectangle" } },
    { selector: 'node[state = "rolled_back"]', style: { shape: "octagon", "border-style": "dashed", "border-color": c("rolled_back"), "background-opacity": 0.6 } },
    { selector: "node:selected, node.selected", style: { "border-color": cssVar("--focus"), "border-width": 4, "border-style": "solid" } },
    { selector: "edge", style: {
      width: 1.5, "line-color": cssVar("--muted"), "target-arrow-color": cssVar("--muted"), "target-arrow-shape": "triangle",
      "curve-style": "bezier", label: "data(label)", "font-size": 8, color: cssVar("--muted"), "min-zoomed-font-size": 8,
      "text-background-color": cssVar("--bg"), "text-background-opacity": 0.8 } },
    { selector: "edge.past-cascade", style: {
      "line-style": "dashed", "line-color": c("rolled_back"), "target-arrow-color": c("rolled_back"), color: c("rolled_back") } },
    { selector: ".cascade", style: { "line-color": c("rolled_back"), "target-arrow-color": c("rolled_back"), "border-color": c("rolled_back"), "border-width": 3 } },
    { selector: ".filtered", style: { display: "none" } },
  ];
}

const cy = cytoscape({
  container: document.getElementById("graph"), style: style(), wheelSensitivity: 0.3,
  minZoom: 0.05, maxZoom: 3, boxSelectionEnabled: false,
});
window.batonGraph.cy = cy;
document.addEventListener("baton:theme", () => cy.style(style()));

// --- the model ----------------------------------------------------------------------------

function nodeData(n) {
  return { id: n.id, state: n.state, label: `${GLYPH[n.state] || "?"} ${short(n.id)}` };
}

function upstreamOf(id) {
  return [...(incident.get(id) || [])].map((k) => edges.get(k)).filter((e) => e.downstream === id).map((e) => e.upstream);
}
function downstreamOf(id) {
  return [...(incident.get(id) || [])].map((k) => edges.get(k)).filter((e) => e.upstream === id).map((e) => e.downstream);
}

function addEdge(e, dirty) {
  const key = edgeKey(e);
  if (edges.has(key)) return;
  edges.set(key, e);
  for (const id of [e.upstream, e.downstream]) {
    if (!incident.has(id)) incident.set(id, new Set());
    incident.get(id).add(key);
    dirty.add(id);
  }
  if (cy.getElementById(e.upstream).nonempty() && cy.getElementById(e.downstream).nonempty()) {
    cy.add({ group: "edges", data: { id: key, source: e.upstream, target: e.downstream, label: shortMessage(e.resource), resource: e.resource } });
  }
}

// A past cascade: the links it went along are gone; each backed-out unit of work names the
// one whose rollback cascaded to it (its cause), drawn as a dashed edge from the cause.
function addCause(n, dirty) {
  if (!n.cause) return;
  if (!caused.has(n.cause)) caused.set(n.cause, new Set());
  caused.get(n.cause).add(n.id);
  dirty.add(n.id);
  dirty.add(n.cause);
  drawCause(n.cause, n.id);
}

function drawCause(cause, id) {
  const key = `cascade:${id}`;
  if (cy.getElementById(key).empty() && cy.getElementById(cause).nonempty() && cy.getElementById(id).nonempty()) {
    cy.add({ group: "edges", classes: "past-cascade", data: { id: key, source: cause, target: id, label: "cascade" } });
  }
}

function removeEdge(key) {
  const e = edges.get(key);
  edges.delete(key);
  for (const id of [e.upstream, e.downstream]) incident.get(id)?.delete(key);
  cy.getElementById(key).remove();
}

let snapshotAt = 0; // when the server took the snapshot the page shows (ms since the epoch)

// A delta's news of a unit of work the snapshot left out as resolved and unrelated: it
// resolved before the snapshot was taken and no edge of the delta touches it.
function stale(n, es) {
  if (nodes.has(n.id) || !n.resolved_at || Date.parse(n.resolved_at) >= snapshotAt) return false;
  return !es.some((e) => e.upstream === n.id || e.downstream === n.id);
}

// Apply nodes and edges; returns the ids whose components must be laid out again.
function apply({ nodes: ns = [], edges: es = [], touched = null }) {
  const dirty = new Set();
  const changed = new Set();
  for (const n of ns) {
    if (stale(n, es)) continue;
    const known = nodes.get(n.id);
    // queues: a delta names those seen in its events; what is known already stays
    n.queues = known ? [...new Set([...known.queues, ...(n.queues || [])])].sort() : (n.queues || []);
    nodes.set(n.id, n);
    changed.add(n.id);
    if (!known) {
      cy.add({ group: "nodes", data: nodeData(n) });
      dirty.add(n.id);
      for (const member of caused.get(n.id) || []) drawCause(n.id, member);
    } else if (known.state !== n.state) {
      cy.getElementById(n.id).data(nodeData(n));
    }
    if (n.cause && !(known && known.cause)) addCause(n, dirty);
  }
  if (touched) {
    const keep = new Set(es.map(edgeKey));
    for (const id of touched) {
      for (const key of [...(incident.get(id) || [])]) if (!keep.has(key)) { removeEdge(key); changed.add(id); }
    }
  }
  for (const e of es) {
    addEdge(e, dirty);
    changed.add(e.upstream);
    changed.add(e.downstream);
  }
  return { dirty, changed };
}

// --- layout: one connected component at a time, tiled ------------------------------------
// Components are found in the page's own model (not cytoscape's), positions computed into a
// Map and written to the drawing in one pass.

function neighbours(id) {
  const cause = nodes.get(id)?.cause;
  return new Set([...upstreamOf(id), ...downstreamOf(id), ...(cause ? [cause] : []), ...(caused.get(id) || [])]);
}

function componentOf(id, seen) {
  const out = [id];
  seen.add(id);
  for (let i = 0; i < out.length; i++) {
    for (const n of neighbours(out[i])) if (!seen.has(n) && nodes.has(n)) { seen.add(n); out.push(n); }
  }
  return out;
}

// A chain (each unit of work linked to at most one upstream and one downstream, the usual
// case) is laid out in a row directly; dagre runs on anything else.
function chainOrder(ids) {
  let root = null;
  for (const id of ids) {
    const up = new Set(upstreamOf(id)), down = new Set(downstreamOf(id));
    if (up.size > 1 || down.size > 1 || nodes.get(id)?.cause || caused.has(id)) return null;
    if (up.size === 0) { if (root) return null; root = id; }
  }
  const order = [];
  for (let id = root; id; id = [...new Set(downstreamOf(id))][0]) {
    order.push(id);
    if (order.length > ids.length) return null;
  }
  return order.length === ids.length ? order : null;
}

function relativePositions(ids) {
  const at = new Map();
  if (ids.length === 1) { at.set(ids[0], { x: 0, y: 0 }); return at; }
  const chain = chainOrder(ids);
  if (chain) { chain.forEach((id, i) => at.set(id, { x: i * 110, y: 0 })); return at; }
  const part = cy.collection(ids.map((id) => cy.getElementById(id)));
  part.union(part.connectedEdges()).layout({ name: "dagre", rankDir: "LR", nodeSep: 18, rankSep: 70, fit: false, animate: false }).run();
  part.forEach((n) => at.set(n.id(), { ...n.position() }));
  return at;
}

function tiled(ids, into) {
  const at = relativePositions(ids);
  let x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
  for (const p of at.values()) { x1 = Math.min(x1, p.x); y1 = Math.min(y1, p.y); x2 = Math.max(x2, p.x); y2 = Math.max(y2, p.y); }
  const w = x2 - x1 + 60, h = y2 - y1 + 50;
  if (tile.x > 0 && tile.x + w > rowWidth) tile = { x: 0, y: tile.y + tile.rowHeight + GAP, rowHeight: 0 };
  for (const [id, p] of at) into.set(id, { x: p.x - x1 + 30 + tile.x, y: p.y - y1 + 20 + tile.y });
  tile.x += w + GAP;
  tile.rowHeight = Math.max(tile.rowHeight, h);
}

function layoutAll() {
  tile = { x: 0, y: 0, rowHeight: 0 };
  const seen = new Set(), components = [];
  for (const id of nodes.keys()) if (!seen.has(id)) components.push(componentOf(id, seen));
  components.sort((a, b) => b.length - a.length);
  // rows about as wide as makes the tiling match the drawing area's shape
  const area = components.reduce((sum, c) => sum + (c.length * 110 + GAP) * 70, 0);
  const box = cy.container().getBoundingClientRect();
  rowWidth = Math.max(400, Math.sqrt(area * (box.width / Math.max(box.height, 1))));
  const at = new Map();
  for (const c of components) tiled(c, at);
  cy.batch(() => cy.nodes().positions((n) => at.get(n.id()) || { x: 0, y: 0 }));
  cy.fit(undefined, 30);
}

function layoutDirty(dirty) {
  const seen = new Set(), at = new Map();
  for (const id of dirty) if (nodes.has(id) && !seen.has(id)) tiled(componentOf(id, seen), at);
  if (!at.size) return;
  cy.batch(() => cy.collection([...at.keys()].map((id) => cy.getElementById(id))).positions((n) => at.get(n.id())));
}

// --- the table and the detail panel -------------------------------------------------------

function heldOn(id) {
  return upstreamOf(id).filter((u) => nodes.get(u)?.state !== "committed");
}

function cascadeOf(id) {
  const out = [], seen = new Set([id]), todo = [id];
  while (todo.length) {
    for (const d of downstreamOf(todo.pop())) {
      if (seen.has(d)) continue;
      seen.add(d);
      todo.push(d);
      if (OPEN.has(nodes.get(d)?.state)) out.push(d);
    }
  }
  return out;
}

function ownerText(n) {
  const agent = n.agent || "";
  const channel = agent.match(/^channel:([^:]+)(?::(.+))?$/);
  const by = channel ? `channel ${channel[1]}${channel[2] ? ` (${channel[2]})` : ""}` : agent ? `connection ${agent}` : "";
  if (n.owner && by) return `${n.owner}, ${by}`;
  return n.owner || by || "—";
}

function ageText(n) {
  const began = Date.parse(n.created_at);
  if (!n.resolved_at) return `${span((Date.now() - began) / 1000)}, open`;
  return `lasted ${span((Date.parse(n.resolved_at) - began) / 1000)}; resolved ${span((Date.now() - Date.parse(n.resolved_at)) / 1000)} ago`;
}

function reasonText(n) {
  if (n.state === "commit_held") return `held on ${heldOn(n.id).map(short).join(", ") || "(resolving)"}`;
  return n.reason || "";
}

function showRow(id) {
  const n = nodes.get(id);
  let tr = rows.get(id);
  if (!tr) {
    tr = rowTemplate.content.firstElementChild.cloneNode(true);
    tr.dataset.transactionId = id;
    tr.querySelector('[data-c="id"]').textContent = short(id);
    tr.querySelector('[data-c="id"]').title = id;
    tr.querySelector('[data-c="created"]').textContent = when(n.created_at);
    rows.set(id, tr);
    (rowSink || tbody).append(tr);
  }
  tr.dataset.state = n.state;
  const state = tr.querySelector('[data-c="state"]');
  state.textContent = `${GLYPH[n.state] || ""} ${LABEL[n.state] || n.state}`;
  state.className = `state state-${n.state}`;
  tr.querySelector('[data-c="reason"]').textContent = reasonText(n);
  tr.querySelector('[data-c="owner"]').textContent = ownerText(n);
  tr.querySelector('[data-c="queues"]').textContent = n.queues.join(" ");
  tr.dataset.queues = n.queues.join(" ");
  const up = upstreamOf(id), down = downstreamOf(id);
  tr.querySelector('[data-c="upstream"]').textContent = up.map(short).join(" ");
  tr.querySelector('[data-c="downstream"]').textContent = down.map(short).join(" ");
  tr.dataset.upstream = up.join(" ");
  tr.dataset.downstream = down.join(" ");
}

function showDetail() {
  const body = document.getElementById("detail-body");
  const n = selected && nodes.get(selected);
  document.getElementById("detail-empty").hidden = Boolean(n);
  body.hidden = !n;
  cy.elements(".cascade").removeClass("cascade");
  for (const tr of tbody.querySelectorAll("tr.selected")) tr.classList.remove("selected");
  if (!n) return;
  rows.get(n.id)?.classList.add("selected");
  const set = (f, text) => { body.querySelector(`[data-f="${f}"]`).textContent = text; };
  set("id", n.id);
  set("state", `${GLYPH[n.state] || ""} ${LABEL[n.state] || n.state}`);
  set("broker", n.broker);
  set("owner", ownerText(n));
  set("age", ageText(n));
  set("cause", n.cause || "—");
  set("created_at", when(n.created_at));
  set("resolved_at", n.resolved_at ? when(n.resolved_at) : "—");
  set("reason", n.reason || "—");
  set("queues", n.queues.join(", ") || "—");
  const held = heldOn(n.id);
  set("held", n.state === "commit_held"
    ? `its commit waits for ${held.map((u) => `${short(u)} (${LABEL[nodes.get(u)?.state] || "unknown"})`).join(", ")} to commit`
    : "—");
  set("upstream", upstreamOf(n.id).join("\n") || "—");
  set("downstream", downstreamOf(n.id).join("\n") || "—");
  const cascade = OPEN.has(n.state) ? cascadeOf(n.id) : [];
  set("cascade", !OPEN.has(n.state) ? "It is resolved; nothing would cascade."
    : cascade.length ? `${cascade.length} open unit${cascade.length > 1 ? "s" : ""} of work would be backed out with it: ${cascade.map(short).join(", ")}`
    : "No open unit of work downstream: nothing would cascade.");
  for (const id of cascade) cy.getElementById(id).addClass("cascade");
  cy.getElementById(n.id).connectedEdges().filter((e) => cascade.includes(e.target().id())).addClass("cascade");
  showRollback(n, cascade);
}

// --- rolling back: the REST operation, run by the page's view as the signed-in user -------

const rollbackForm = document.getElementById("rollback");
const rollbackConfirm = document.getElementById("rollback-confirm");
const rollbackResult = document.getElementById("rollback-result");
let rollbackShownFor = null;

function showRollback(n, cascade) {
  const may = OPEN.has(n.state) && n.yours;
  rollbackForm.hidden = !may;
  if (n.id !== rollbackShownFor) {
    rollbackShownFor = n.id;
    rollbackConfirm.hidden = true;
    rollbackAsk.hidden = false;
    rollbackResult.hidden = true;
  }
  if (!may) { rollbackConfirm.hidden = true; return; }
  rollbackForm.action = root.dataset.rollbackUrl.replace("TRANSACTION", encodeURIComponent(n.id));
  rollbackForm.querySelector('[data-f="rollback-what"]').textContent = cascade.length
    ? `Roll back ${short(n.id)} and the ${cascade.length} open unit${cascade.length > 1 ? "s" : ""} of work downstream of it?`
    : `Roll back ${short(n.id)}? Nothing is downstream of it.`;
}

const rollbackAsk = document.getElementById("rollback-ask");
rollbackAsk.addEventListener("click", () => { rollbackConfirm.hidden = false; rollbackAsk.hidden = true; });
document.getElementById("rollback-cancel").addEventListener("click", () => { rollbackConfirm.hidden = true; rollbackAsk.hidden = false; });
rollbackForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const id = rollbackShownFor;
  rollbackConfirm.hidden = true;
  rollbackAsk.hidden = false;
  rollbackResult.hidden = false;
  rollbackResult.className = "";
  rollbackResult.textContent = `Rolling back ${short(id)}…`;
  try {
    const response = await fetch(rollbackForm.action, {
      method: "POST", body: new FormData(rollbackForm), headers: { Accept: "application/json" }, credentials: "same-origin",
    });
    const body = await response.json();
    if (!response.ok) throw new Error(body.message || `HTTP ${response.status}`);
    rollbackResult.textContent = body.cascaded.length
      ? `Rolled back ${short(id)}; backed out with it: ${body.cascaded.map(short).join(", ")}.`
      : `Rolled back ${short(id)}.`;
  } catch (error) {
    rollbackResult.className = "error";
    rollbackResult.textContent = `Not rolled back: ${error.message}`;
  }
});

// Pan to a node only when it is out of sight: centring a visible one would push the
// drawing's edge out of the frame that layoutAll fitted.
function reveal(node) {
  const box = node.renderedBoundingBox({ includeLabels: true });
  if (box.x1 < 0 || box.y1 < 0 || box.x2 > cy.width() || box.y2 > cy.height()) cy.center(node);
}

function select(id, { center = false } = {}) {
  selected = id;
  history.replaceState(null, "", `#${id}`);
  cy.nodes(".selected").removeClass("selected");
  const node = cy.getElementById(id);
  node.addClass("selected");
  if (center && node.nonempty()) reveal(node);
  showDetail();
}

cy.on("tap", "node", (event) => select(event.target.id()));
tbody.addEventListener("click", (event) => {
  const tr = event.target.closest("tr");
  if (tr) select(tr.dataset.transactionId, { center: true });
});
tbody.addEventListener("keydown", (event) => {
  const tr = event.target.closest("tr");
  if (!tr) return;
  if (event.key === "Enter" || event.key === " ") { event.preventDefault(); select(tr.dataset.transactionId, { center: true }); }
  if (event.key === "ArrowDown") tr.nextElementSibling?.focus();
  if (event.key === "ArrowUp") tr.previousElementSibling?.focus();
});

// --- filters ------------------------------------------------------------------------------

function filterOut() {
  const form = new FormData(filters);
  const states = new Set(form.getAll("state"));
  const age = Number(form.get("age")) * 1000;
  const search = String(form.get("search") || "").trim().toLowerCase();
  const queue = String(form.get("queue") || "");
  const now = Date.now();
  return (n) => !states.has(n.state) || (age && now - Date.parse(n.created_at) < age) || (search && !n.id.includes(search))
    || (queue && !n.queues.includes(queue));
}

function applyFilters(ids = nodes.keys()) {
  const isOut = filterOut();
  cy.batch(() => {
    for (const id of ids) {
      const n = nodes.get(id);
      if (!n) continue;
      const out = Boolean(isOut(n));
      cy.getElementById(id).toggleClass("filtered", out);
      if (rows.get(id)) rows.get(id).hidden = out;
    }
  });
  const shown = [...rows.values()].filter((r) => !r.hidden).length;
  counts.textContent = `${shown} of ${nodes.size} units of work shown`;
}
filters.addEventListener("input", () => applyFilters());
filters.addEventListener("submit", (event) => event.preventDefault());

// --- pruning: the graph stays on the live part ------------------------------------------

function related(id) {
  const n = nodes.get(id);
  if (!n || OPEN.has(n.state) || id === selected || n.cause || caused.has(id)) return true;
  if (!n.resolved_at || Date.now() - Date.parse(n.resolved_at) < KEEP_RESOLVED_MS) return true;
  return [...neighbours(id)].some((other) => OPEN.has(nodes.get(other)?.state));
}

function prune() {
  const gone = [...nodes.keys()].filter((id) => !related(id));
  if (!gone.length) return;
  cy.batch(() => {
    for (const id of gone) {
      for (const key of [...(incident.get(id) || [])]) removeEdge(key);
      incident.delete(id);
      nodes.delete(id);
      cy.getElementById(id).remove();
      rows.get(id)?.remove();
      rows.delete(id);
    }
  });
  applyFilters([]);
}
setInterval(() => {
  prune();
  if (selected && nodes.has(selected)) document.querySelector('#detail [data-f="age"]').textContent = ageText(nodes.get(selected));
}, 5000);

// --- the socket ---------------------------------------------------------------------------

let rowSink = null; // a fragment while the snapshot builds the table
let pending = [];
let scheduled = false;

function flush() {
  scheduled = false;
  const batch = pending;
  pending = [];
  const started = performance.now();
  const dirty = new Set(), changed = new Set();
  cy.batch(() => {
    for (const delta of batch) {
      const result = apply(delta);
      result.dirty.forEach((id) => dirty.add(id));
      result.changed.forEach((id) => changed.add(id));
    }
  });
  layoutDirty(dirty);
  for (const id of changed) if (nodes.has(id)) showRow(id);
  applyFilters(changed);
  if (selected && changed.has(selected)) showDetail();
  timings.updatesMs.push(performance.now() - started);
  root.dataset.updates = String(Number(root.dataset.updates || 0) + 1);
}

function snapshot(graph) {
  const started = performance.now();
  const phases = {};
  const mark = (name, since) => { phases[name] = Math.round(performance.now() - since); return performance.now(); };
  let t = started;
  cy.elements().remove();
  nodes.clear(); edges.clear(); incident.clear(); rows.clear(); caused.clear();
  tbody.replaceChildren();
  snapshotAt = 0;
  cy.batch(() => apply({ nodes: graph.nodes, edges: graph.edges }));
  snapshotAt = Date.parse(graph.taken_at) || 0;
  t = mark("model", t);
  layoutAll();
  t = mark("layout", t);
  rowSink = document.createDocumentFragment();
  for (const id of nodes.keys()) showRow(id);
  tbody.append(rowSink);
  rowSink = null;
  t = mark("table", t);
  applyFilters();
  if (selected && nodes.has(selected)) select(selected, { center: true });
  t = mark("filters", t);
  requestAnimationFrame(() => {
    mark("paint", t);
    timings.firstRenderMs = performance.now() - started;
    timings.phases = phases;
    root.dataset.ready = "true";
  });
}

follow(root.dataset.socket, {
  onMessage: (msg) => {
    if (msg.type === "graph") snapshot(msg);
    if (msg.type === "delta") {
      pending.push(msg);
      if (!scheduled) { scheduled = true; requestAnimationFrame(flush); }
    }
  },
});
