// The open alerts (dashboard/alerts.py) at the top of the overview and a broker's page,
// redrawn from each /ws/overview/ frame's "alerts": an alert comes and goes without a reload.
// On a broker's page (the section's data-broker) only that broker's queues', and workers'.
import { pagePath } from "./rows.js";
import { when } from "./when.js";

const section = document.getElementById("alerts");

function item(a) {
  const li = document.createElement("li");
  li.className = "flash warn";
  li.dataset.alert = a.event;
  const strong = document.createElement("strong");
  const since = document.createElement("span");
  since.className = "muted";
  if (a.worker) {
    li.dataset.worker = a.worker;
    strong.textContent = `worker ${a.worker}`;
    since.textContent = ` · since ${when(a.since)}`;
    li.append(strong, `: lost, ${a.what} `, since);
  } else {
    li.dataset.queue = `${a.broker}/${a.queue}`;
    const link = document.createElement("a");
    link.href = pagePath("brokers", a.broker, "queues", a.queue);
    link.textContent = a.queue;
    strong.append(`${a.broker} / `, link);
    since.textContent = ` · last evaluated ${when(a.since)}`;
    li.append(strong, `: ${a.what} `, since);
  }
  return li;
}

export function showAlerts(alerts) {
  if (!section || !alerts) return;
  const broker = section.dataset.broker;
  const shown = alerts.filter((a) => a.worker || !broker || a.broker === broker);
  section.querySelector("ul").replaceChildren(...shown.map(item));
  section.hidden = shown.length === 0;
}
