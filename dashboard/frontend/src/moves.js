// The queue page of a dead-letter or backout queue: select every message of the page at
// once, and say how many are selected.
const all = document.getElementById("select-page");
const boxes = () => [...document.querySelectorAll('input[name="msg_id"][form="move-form"]')];
const said = document.getElementById("move-selected");

function count() {
  const n = boxes().filter((b) => b.checked).length;
  said.textContent = n ? `${n} selected on this page` : "";
  if (all) all.checked = n > 0 && n === boxes().length;
}

all?.addEventListener("change", () => { for (const b of boxes()) b.checked = all.checked; count(); });
document.addEventListener("change", (event) => { if (event.target.name === "msg_id") count(); });
