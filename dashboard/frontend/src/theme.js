// Light or dark: the stored choice, else the system's. Runs in <head> so there is no flash.
const KEY = "baton-theme";
const root = document.documentElement;
const stored = localStorage.getItem(KEY);
const system = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
root.dataset.theme = stored || system;

document.addEventListener("DOMContentLoaded", () => {
  const button = document.getElementById("theme-toggle");
  if (!button) return;
  const show = () => {
    const dark = root.dataset.theme === "dark";
    button.setAttribute("aria-pressed", String(dark));
    button.textContent = dark ? "Light mode" : "Dark mode";
  };
  show();
  button.addEventListener("click", () => {
    root.dataset.theme = root.dataset.theme === "dark" ? "light" : "dark";
    localStorage.setItem(KEY, root.dataset.theme);
    show();
    document.dispatchEvent(new CustomEvent("baton:theme"));
  });
});
