// The definitions page: read a document (a file or pasted), ask the API for its plan, show
// the plan as a diff (+ create, ~ alter, - delete, ! refused), and apply it on request.
// Nothing changes until Apply; Apply sends exactly the document that was planned.

const form = document.getElementById("definitions-form");
const text = document.getElementById("definitions-text");
const file = document.getElementById("definitions-file");
const prune = document.getElementById("definitions-prune");
const force = document.getElementById("definitions-force");
const applyButton = document.getElementById("definitions-apply");
const result = document.getElementById("definitions-result");
const diff = document.getElementById("definitions-diff");
const SIGNS = { create: "+ create", alter: "~ alter", delete: "- delete" };
let planned = null;

function csrf() {
  return form.querySelector("input[name=csrfmiddlewaretoken]").value;
}

function say(message, problems = {}) {
  result.replaceChildren(document.createTextNode(message));
  const names = Object.keys(problems);
  if (names.length) {
    const list = document.createElement("ul");
    for (const name of names) {
      const item = document.createElement("li");
      item.textContent = `${name}: ${[].concat(problems[name]).join(" ")}`;
      list.append(item);
    }
    result.append(list);
  }
}

function row(cells, className) {
  const tr = document.createElement("tr");
  tr.className = className;
  cells.forEach((value, i) => {
    const td = document.createElement("td");
    td.textContent = value;
    if (i === 3) td.className = "attributes";
    tr.append(td);
  });
  return tr;
}

function where(item) {
  return item.broker && item.kind !== "broker" ? `${item.broker}/${item.name}` : item.name;
}

function show(plan) {
  const body = diff.querySelector("tbody");
  body.replaceChildren(
    ...plan.changes.map((c) => row([SIGNS[c.action], c.kind, where(c), Object.keys(c.attributes).length
      ? JSON.stringify(c.attributes, null, 1) : ""], c.action)),
    ...plan.refused.map((r) => row(["! refused", r.kind, where(r), `${r.code}: ${r.message}`], "refused")),
  );
  diff.hidden = !(plan.changes.length || plan.refused.length);
}

async function send(path, document) {
  const response = await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrf(), Accept: "application/json" },
    body: JSON.stringify({ ...document, prune: prune.checked, force: force.checked }),
  });
  return { status: response.status, body: await response.json() };
}

function parsed() {
  try {
    const value = JSON.parse(text.value);
    if (value && typeof value === "object" && !Array.isArray(value)) return value;
  } catch (error) {
    say(`Not a JSON document: ${error.message}`);
    return null;
  }
  say("Not a JSON document: it must be an object.");
  return null;
}

function forget() {
  planned = null;
  applyButton.disabled = true;
}

file.addEventListener("change", async () => {
  if (file.files.length) {
    text.value = await file.files[0].text();
    forget();
  }
});
for (const input of [text, prune, force]) input.addEventListener("input", forget);
for (const input of [prune, force]) input.addEventListener("change", forget);

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  forget();
  diff.hidden = true;
  const document = parsed();
  if (!document) return;
  const { status, body } = await send("/api/definitions/plan/", document);
  if (status !== 200) {
    say(body.message || `The plan failed (${status}).`, body.errors);
    return;
  }
  show(body);
  if (body.refused.length) {
    say(`${body.refused.length} change(s) would be refused; nothing can be applied.`);
  } else if (!body.changes.length) {
    say("No changes: the platform already matches the document.");
  } else {
    say(`${body.changes.length} change(s) planned. Apply makes all of them or none.`);
    planned = document;
    applyButton.disabled = false;
  }
});

applyButton.addEventListener("click", async () => {
  if (!planned) return;
  const document = planned;
  forget();
  const { status, body } = await send("/api/definitions/apply/", document);
  if (status === 200) {
    show(body);
    say(`Applied: ${body.changes.length} change(s) made.`);
  } else if (status === 409) {
    show({ changes: [], refused: body.refused || [] });
    say(body.message);
  } else {
    say(body.message || `The apply failed (${status}).`, body.errors);
  }
});
