// The console's one date format, as dashboard/templatetags/baton.py's `when` writes it:
// "2026-12-06 02:27:08 (3 min ago)", in UTC.
function ago(seconds) {
  const later = seconds < 0;
  const s = Math.abs(seconds);
  if (s < 5) return "just now";
  for (const [size, unit] of [[86400, "d"], [3600, "h"], [60, "min"], [1, "s"]]) {
    if (s >= size) {
      const amount = `${Math.floor(s / size)} ${unit}`;
      return later ? `in ${amount}` : `${amount} ago`;
    }
  }
  return "just now";
}

// A length of time as the console writes durations: "12 s", "3 min", "2 h 5 min".
export function span(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ""}`;
  if (s < 86400) return `${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)} min` : ""}`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

export function stamp(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toISOString().replace("T", " ").slice(0, 19);
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${stamp(iso)} (${ago((Date.now() - d.getTime()) / 1000)})`;
}
