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
