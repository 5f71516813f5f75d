// Broker page: its queues with live counts; rows come and go as queues are defined and
// deleted, fed by /ws/overview/ (the broker's part of each push). The list is filtered,
// sorted and paged by the server (?name=&kind=&sort=&page=).
import { showAlerts } from "./alerts.js";
import { follow } from "./live.js";
import { pagePath, part, syncKeyed } from "./rows.js";

const FIELDS = ["kind", "usage", "available", "uncommitted_puts", "in_flight", "locked"];
const table = document.getElementById("queue-table");
const broker = table.dataset.broker;
const template = document.getElementById("queue-template");
const onOff = (enabled) => (enabled ? "enabled" : "inhibited");

// A filtered, sorted or paged list keeps the rows the server chose: their counts change in
// place, a deleted one is marked; queues defined since show when the list is read again.
function fillShown(queues) {
  const byName = new Map(queues.map((q) => [q.name, q]));
  for (const row of table.tBodies[0].querySelectorAll("tr[data-queue]")) {
    const q = byName.get(row.dataset.queue);
    row.classList.toggle("gone", !q);
    if (!q) { row.querySelector('[data-field="put_get"]').textContent = "deleted"; continue; }
    for (const f of FIELDS) row.querySelector(`[data-field="${f}"]`).textContent = q[f];
    row.querySelector('[data-field="put_get"]').textContent = `${onOff(q.put_enabled)} / ${onOff(q.get_enabled)}`;
  }
}

function show(data) {
  const b = data.brokers.find((x) => x.name === broker);
  document.getElementById("broker-gone").hidden = Boolean(b);
  if (table.dataset.paged === "true") { fillShown(b ? b.queues : []); return; }
  syncKeyed(table.tBodies[0], b ? b.queues : [], {
    key: "queue", template, none: table.querySelector("tr.none"),
    made: (row, q) => {
      const link = part(row, "queue-link");
      link.href = pagePath("brokers", broker, "queues", q.name);
      link.textContent = q.name;
    },
    fill: (row, q) => {
      for (const f of FIELDS) row.querySelector(`[data-field="${f}"]`).textContent = q[f];
      row.querySelector('[data-field="put_get"]').textContent = `${onOff(q.put_enabled)} / ${onOff(q.get_enabled)}`;
    },
  });
}

follow(table.dataset.socket, {
  onMessage: (msg) => {
    if (msg.type !== "overview") return;
    show(msg.data);
    showAlerts(msg.alerts);
  },
});
