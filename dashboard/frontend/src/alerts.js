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

const key = (a) => `${a.event} ${a.worker || `${a.broker}/${a.queue}`}`;
let drawn = null; // what the list shows, as the frames said it

// The list is redrawn only when the alerts changed (a frame comes with every overview push):
// its items stay the same elements otherwise, a link being clicked or text selected too.
export function showAlerts(alerts) {
  if (!section || !alerts) return;
  const broker = section.dataset.broker;
  const shown = alerts.filter((a) => a.worker || !broker || a.broker === broker);
  const signature = JSON.stringify(shown.map((a) => [key(a), a.what, a.since]));
  if (signature === drawn) return;
  const list = section.querySelector("ul");
  const items = [...list.children];
  const asRendered = drawn === null && items.length === shown.length
    && shown.every((a, i) => `${items[i].dataset.alert} ${items[i].dataset.worker || items[i].dataset.queue}` === key(a)
      && items[i].textContent.includes(a.what));
  drawn = signature;
  if (asRendered) return; // the page came with these
  list.replaceChildren(...shown.map(item));
  section.hidden = shown.length === 0;
}
