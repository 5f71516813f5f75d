// The broker page's connections (sessions, STOMP connections, channel agents) and a queue
// page's consumers (STOMP subscriptions to it, channel agents reading it, units of work
// holding its messages), kept in step by /ws/brokers/<broker>/connections/ or
// /ws/brokers/<broker>/queues/<queue>/consumers/: rows come and go as the pushes say.
// Close buttons (for those who may close) post the console's close forms.
import { follow } from "./live.js";
import { pagePath, syncKeyed } from "./rows.js";
import { when } from "./when.js";

const table = document.querySelector("table[data-list]");
const { broker, queue = "", list } = table.dataset;
const mayClose = table.dataset.mayClose === "true";
const formTemplate = document.getElementById("close-form-template");
const rowTemplate = document.createElement("template");
rowTemplate.innerHTML = "<tr></tr>";

function cell(row, name, { className = "" } = {}) {
  const td = document.createElement("td");
  td.dataset.c = name;
  if (className) td.className = className;
  row.append(td);
  return td;
}

function text(parent, value, className = "") {
  const span = document.createElement("span");
  span.textContent = value;
  if (className) span.className = className;
  parent.append(span);
  return span;
}

function closeForm(action, label) {
  const form = formTemplate.content.firstElementChild.cloneNode(true);
  form.action = action;
  form.querySelector("button").textContent = label;
  if (queue) {
    const input = document.createElement("input");
    Object.assign(input, { type: "hidden", name: "queue", value: queue });
    form.prepend(input);
  }
  return form;
}

function closeCell(row, item) {
  if (!mayClose) return;
  const td = cell(row, "close");
  if (item.closing) text(td, "closing…", "muted");
  else if (item.kind === "stomp") td.append(closeForm(pagePath("brokers", broker, "stomp", item.session, "close"), queue ? "Close connection" : "Close"));
  else if (item.kind === "session") td.append(closeForm(pagePath("brokers", broker, "connections", item.conn_id, "close"), "Close"));
  else { td.className = "muted"; td.textContent = "—"; }
}

function brokerRow(row, item) {
  if (item.kind === "session") {
    text(cell(row, "kind"), "session");
    const client = cell(row, "client");
    text(client, item.client_name || item.conn_id, "mono");
    if (item.username) text(client, ` ${item.username}`, "muted");
    text(cell(row, "since"), when(item.created_at));
    const detail = cell(row, "detail");
    if (item.current_transaction_id) {
      const a = document.createElement("a");
      a.className = "mono";
      a.href = `${pagePath("brokers", broker, "transactions")}#${item.current_transaction_id}`;
      a.textContent = `${item.current_transaction_id.slice(0, 8)}…`;
      detail.append(a);
    } else detail.textContent = "—";
  } else if (item.kind === "stomp") {
    text(cell(row, "kind"), `STOMP (${item.transport})`);
    const client = cell(row, "client");
    text(client, item.username);
    text(client, ` ${item.peer}`, "muted");
    text(cell(row, "since"), when(item.connected_at));
    const detail = cell(row, "detail");
    for (const s of item.subscriptions) {
      const div = document.createElement("div");
      text(div, s.destination);
      text(div, ` (${s.ack}, ${s.unacknowledged} unacknowledged)`, "muted");
      detail.append(div);
    }
    if (!item.subscriptions.length) text(detail, "no subscriptions", "muted");
  } else {
    text(cell(row, "kind"), "channel agent");
    text(cell(row, "client"), item.own);
    text(cell(row, "since"), "—");
    text(cell(row, "detail"), `from ${item.transmission_queue} to broker ${item.target_broker}, ${item.state.replace(/_/g, " ")}`);
  }
  closeCell(row, item);
}

function queueRow(row, item) {
  const who = cell(row, "who");
  const what = cell(row, "what");
  const n = cell(row, "n", { className: "n" });
  if (item.kind === "stomp") {
    text(who, item.username);
    text(who, ` ${item.peer} (${item.transport})`, "muted");
    what.textContent = `STOMP subscription ${item.subscription}, ack ${item.ack}`;
    n.textContent = String(item.unacknowledged);
    row.dataset.session = item.session;
  } else if (item.kind === "channel") {
    who.textContent = `channel ${item.own}`;
    what.textContent = `agent sending to ${item.target_broker}, ${item.state.replace(/_/g, " ")}`;
    n.textContent = "—";
  } else {
    text(who, item.owner || "—");
    if (item.agent) text(who, ` ${item.agent}`, "muted");
    what.textContent = `${item.units} unit${item.units === 1 ? "" : "s"} of work holding gotten messages`;
    n.textContent = String(item.messages);
  }
  closeCell(row, item);
}

// Rows keyed "kind:name"; a row whose data changed is drawn again (its fingerprint differs).
function show(data) {
  const kinds = list === "queue" ? ["stomp", "channels", "units"] : ["sessions", "stomp", "channels"];
  const single = { sessions: "session", stomp: "stomp", channels: "channel", units: "units" };
  // `name` keys the row ("kind:name"); `own` keeps the object's own name
  const items = kinds.flatMap((k) => (data[k] || []).map((item) => ({ ...item, kind: single[k], own: item.name, name: `${single[k]}:${item.name}` })));
  syncKeyed(table.tBodies[0], items, {
    key: "row", template: rowTemplate, none: table.querySelector("tr.none"),
    fill: (row, item) => {
      const print = JSON.stringify(item);
      if (row.dataset.print === print) return;
      row.dataset.print = print;
      row.dataset.kind = item.kind;
      row.replaceChildren();
      (list === "queue" ? queueRow : brokerRow)(row, item);
    },
  });
}

follow(table.dataset.socket, { onMessage: (msg) => { if (msg.type === "connections") show(msg.data); } });
