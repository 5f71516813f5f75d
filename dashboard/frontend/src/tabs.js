// Tabs of the message page: buttons with role=tab show one panel; arrow keys move between them.
const tabs = [...document.querySelectorAll('[role="tab"]')];
const choose = (tab) => {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute("aria-selected", String(on));
    document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
  }
  tab.focus();
};
tabs.forEach((tab, i) => {
  tab.addEventListener("click", () => choose(tab));
  tab.addEventListener("keydown", (event) => {
    if (event.key === "ArrowRight") choose(tabs[(i + 1) % tabs.length]);
    if (event.key === "ArrowLeft") choose(tabs[(i - 1 + tabs.length) % tabs.length]);
  });
});
