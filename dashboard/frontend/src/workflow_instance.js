// One workflow instance live: its steps as a cytoscape graph laid out once by dagre (each
// step a node coloured by its state, arrows from a step to the next, dashed arrows for a
// step's unit of work held on another's), the compensation path, the steps' table and the
// history. The page renders them; the dashboard's socket (/ws/workflow-instances/<id>/)
// pushes the instance's view whenever it changes, and only what changed is touched (text
// set, history rows cloned from a <template>).
import cytoscape from "cytoscape";
import dagre from "cytoscape-dagre";
import { cssVar, follow } from "./live.js";
import { when } from "./when.js";

cytoscape.use(dagre);

const COLOUR = {
  pending: "--muted", in_flight: "--active", held: "--held", committed: "--committed",
  backed_out: "--rolled_back", compensating: "--held", compensated: "--muted",
};
const GLYPH = {
  pending: "○", in_flight: "●", held: "◆", committed: "✔", backed_out: "✖", compensating: "↺", compensated: "⟲",
};
const root = document.getElementById("wf-root");
let current = JSON.parse(document.getElementById("wf-initial").textContent);
window.batonWorkflow = { get instance() { return current; }, updates: 0 };
const historyRow = document.getElementById("wf-history-row");

function style() {
  return [
    { selector: "node", style: {
      label: "data(label)", "font-size": 11, color: cssVar("--fg"), "text-valign": "bottom", "text-margin-y": 4,
      "background-color": (n) => cssVar(COLOUR[n.data("state")] || "--muted"), width: 26, height: 26,
      "border-width": 2, "border-color": cssVar("--bg") } },
    { selector: 'node[state = "held"]', style: { shape: "diamond", width: 30, height: 30 } },
    { selector: 'node[state = "committed"]', style: { shape: "round-rectangle" } },
    { selector: 'node[state = "backed_out"]', style: { shape: "octagon", "border-style": "dashed" } },
    { selector: "node.next-compensation", style: { "border-color": cssVar("--focus"), "border-width": 4 } },
    { selector: "edge", style: {
      width: 1.5, "line-color": cssVar("--muted"), "target-arrow-color": cssVar("--muted"),
      "target-arrow-shape": "triangle", "curve-style": "bezier" } },
    { selector: "edge.held", style: {
      "line-style": "dashed", "line-color": cssVar("--held"), "target-arrow-color": cssVar("--held"),
      label: "held", "font-size": 9, color: cssVar("--held") } },
  ];
}

const cy = cytoscape({
  container: document.getElementById("wf-graph"), style: style(), wheelSensitivity: 0.3, minZoom: 0.2, maxZoom: 3,
  boxSelectionEnabled: false,
});
window.batonWorkflow.cy = cy;
document.addEventListener("baton:theme", () => cy.style(style()));

const label = (s) => `${GLYPH[s.state] || "?"} ${s.name}`;

function first(instance) {
  cy.add(instance.steps.map((s) => ({ group: "nodes", data: { id: `s:${s.name}`, state: s.state, label: label(s) } })));
  for (const s of instance.steps) {
    for (const n of s.next) {
      cy.add({ group: "edges", data: { id: `e:${s.name}>${n}`, source: `s:${s.name}`, target: `s:${n}` } });
    }
  }
  cy.layout({ name: "dagre", rankDir: "LR", nodeSep: 30, rankSep: 70 }).run();
  cy.fit(undefined, 30);
}

function held(instance) {
  cy.edges(".held").remove();
  for (const h of instance.held) {
    if (!h.upstream || !h.open) continue;
    cy.add({ group: "edges", classes: "held",
      data: { id: `h:${h.upstream}>${h.downstream}`, source: `s:${h.upstream}`, target: `s:${h.downstream}` } });
  }
}

function text(el, value) {
  const v = value ?? "";
  if (el && el.textContent !== String(v)) el.textContent = v;
}

function render(instance) {
  cy.batch(() => {
    for (const s of instance.steps) {
      const node = cy.getElementById(`s:${s.name}`);
      if (node.data("state") !== s.state) node.data({ state: s.state, label: label(s) });
    }
    cy.nodes().removeClass("next-compensation");
    if (instance.state === "compensating" && instance.compensation_path.length) {
      const out = instance.steps.find((s) => s.state === "compensating");
      if (out) cy.getElementById(`s:${out.name}`).addClass("next-compensation");
    }
    held(instance);
  });
  const state = document.getElementById("wf-state");
  text(state, instance.state);
  state.dataset.state = instance.state;
  text(document.getElementById("wf-reason"), instance.reason);
  // the actions the page was rendered with, while they still apply
  const abort = document.getElementById("wf-abort");
  if (abort) abort.closest("form").hidden = instance.state !== "running";
  const resubmit = document.getElementById("wf-resubmit");
  if (resubmit) resubmit.closest("form").hidden = instance.state !== "compensation_failed";
  for (const s of instance.steps) {
    const row = document.querySelector(`#step-table tr[data-step="${CSS.escape(s.name)}"]`);
    if (!row) continue;
    row.dataset.state = s.state;
    text(row.querySelector('[data-c="state"]'), s.state);
    text(row.querySelector('[data-c="transaction"]'), s.transaction);
    text(row.querySelector('[data-c="committed_at"]'), when(s.committed_at));
    text(row.querySelector('[data-c="compensated_at"]'), when(s.compensated_at));
  }
  const path = document.getElementById("wf-path");
  if ([...path.children].map((li) => li.textContent).join() !== instance.compensation_path.join()) {
    path.replaceChildren(...instance.compensation_path.map((n) => Object.assign(document.createElement("li"), { textContent: n })));
  }
  const tbody = document.querySelector("#history-table tbody");
  for (const h of instance.history.slice(tbody.children.length)) {
    const tr = historyRow.content.firstElementChild.cloneNode(true);
    for (const key of ["at", "event", "step", "transaction", "detail"]) {
      text(tr.querySelector(`[data-c="${key}"]`), key === "at" ? when(h.at) : h[key]);
    }
    tbody.appendChild(tr);
  }
}

first(current);
render(current);
follow(root.dataset.socket, {
  onMessage: (msg) => {
    if (msg.type !== "instance") return;
    if (msg.instance === null) {  // deleted with its workflow
      const state = document.getElementById("wf-state");
      text(state, "deleted");
      state.dataset.state = "deleted";
      return;
    }
    current = msg.instance;
    render(current);
    window.batonWorkflow.updates += 1;
  },
});
