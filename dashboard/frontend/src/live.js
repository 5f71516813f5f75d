// One WebSocket to the dashboard, with a "live"/"stale" badge and reconnection.
// onMessage gets each JSON frame; onOpen runs after every (re)connection.
export function follow(path, { onMessage, onOpen } = {}) {
  const badge = document.getElementById("live-status");
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  let delay = 500;
  const mark = (live, text) => {
    if (!badge) return;
    badge.textContent = text;
    badge.className = `badge ${live ? "live" : "stale"}`;
    badge.dataset.live = live ? "true" : "false";
  };
  const open = () => {
    const socket = new WebSocket(`${scheme}://${location.host}${path}`);
    socket.addEventListener("open", () => {
      delay = 500;
      mark(true, "live");
      if (onOpen) onOpen();
    });
    socket.addEventListener("message", (event) => onMessage(JSON.parse(event.data)));
    socket.addEventListener("close", () => {
      mark(false, "stale — reconnecting");
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 8000);
    });
  };
  mark(false, "connecting…");
  open();
}

export function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}
