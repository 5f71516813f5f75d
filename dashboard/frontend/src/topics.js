// A broker's topics page: topic objects and retained publications follow
// /ws/brokers/<broker>/topics/ (pushed when either changes); rows come and go in order.
import { follow } from "./live.js";
import { pagePath, part, syncKeyed } from "./rows.js";
import { when } from "./when.js";

const topicTable = document.getElementById("topic-table");
const retainedTable = document.getElementById("retained-table");
const broker = topicTable.dataset.broker;
const set = (row, field, text) => { row.querySelector(`[data-field="${field}"]`).textContent = text; };

function show({ topics, retained }) {
  syncKeyed(topicTable.tBodies[0], topics, {
    key: "topic", template: document.getElementById("topic-template"), none: topicTable.querySelector("tr.none"),
    made: (row, t) => {
      if (topicTable.dataset.admin !== "true") return;
      part(row, "alter").href = `${pagePath("brokers", broker, "topics", t.name)}alter/`;
      part(row, "delete").href = `${pagePath("brokers", broker, "topics", t.name)}delete/`;
    },
    fill: (row, t) => {
      for (const f of ["name", "topic_string", "conflation", "durable", "description"]) set(row, f, t[f] ?? "");
    },
  });
  syncKeyed(retainedTable.tBodies[0], retained, {
    key: "topic", template: document.getElementById("retained-template"), none: retainedTable.querySelector("tr.none"),
    fill: (row, r) => {
      set(row, "topic", r.name);
      set(row, "published_at", when(r.published_at));
      set(row, "size", r.size);
      const body = row.querySelector('[data-field="body"]');
      body.textContent = r.body === null ? "binary" : r.body;
      body.classList.toggle("muted", r.body === null);
    },
  });
}

follow(topicTable.dataset.socket, { onMessage: (msg) => { if (msg.type === "topics") show(msg.topics); } });
