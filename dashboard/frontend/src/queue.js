// Queue page: its counts follow /ws/overview/ (the queue's part of each push, as the broker
// page's rows do); the message list below stays as loaded and says when it is behind.
import { follow } from "./live.js";

const FIELDS = ["available", "uncommitted_puts", "in_flight", "locked", "depth"];
const box = document.getElementById("queue-counts");
const { broker, queue } = box.dataset;
const behind = document.getElementById("list-behind");
const total = (q) => q.depth + q.uncommitted_puts;
let loaded = null;

function show(data) {
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
}

follow(box.dataset.socket, { onMessage: (msg) => { if (msg.type === "overview") show(msg.data); } });
