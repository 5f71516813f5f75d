// A broker's workflows page: each workflow's instance counts by state follow
// /ws/brokers/<broker>/workflows/ (pushed when one changes). The instance list below stays
// as found by its filters.
import { follow } from "./live.js";

const table = document.getElementById("workflow-table");

function show(rows) {
  for (const w of rows) {
    const row = table.querySelector(`tr[data-workflow="${CSS.escape(w.name)}"]`);
    if (!row) continue;
    const version = row.querySelector('[data-field="version"]');
    if (version) version.textContent = String(w.version);
    for (const [state, n] of Object.entries(w.instances)) {
      const link = row.querySelector(`td[data-state="${CSS.escape(state)}"] a`);
      if (link) link.textContent = String(n);
    }
  }
}

follow(table.dataset.socket, { onMessage: (msg) => { if (msg.type === "workflows") show(msg.workflows); } });
