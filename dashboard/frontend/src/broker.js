// Broker page: its queues with live counts; rows come and go as queues are defined and
// deleted, fed by /ws/overview/ (the broker's part of each push).
import { follow } from "./live.js";
import { pagePath, part, syncKeyed } from "./rows.js";

const FIELDS = ["kind", "usage", "available", "uncommitted_puts", "in_flight", "locked"];
const table = document.getElementById("queue-table");
const broker = table.dataset.broker;
const template = document.getElementById("queue-template");
const onOff = (enabled) => (enabled ? "enabled" : "inhibited");

function show(data) {
  const b = data.brokers.find((x) => x.name === broker);
  document.getElementById("broker-gone").hidden = Boolean(b);
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

follow(table.dataset.socket, { onMessage: (msg) => { if (msg.type === "overview") show(msg.data); } });
