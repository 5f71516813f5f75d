// Keeping a server-rendered list in step with pushed data: rows appear (cloned from a
// <template>) and go as objects are defined and deleted, in the order the data gives.

// A dashboard path from names that may hold '/' (the routes take them as they are).
export function pagePath(...parts) {
  return `/${parts.map((p) => encodeURIComponent(p).replace(/%2F/g, "/")).join("/")}/`;
}

// Make `container`'s children keyed by `data-<key>` match `items` (each with a `name`):
// missing ones cloned from `template` and passed to `made(el, item)`, gone ones removed;
// every kept or new one passed to `fill(el, item)`. Children without the key (a "none"
// row) stay last; `none`, if given, is shown only when there are no items.
export function syncKeyed(container, items, { key, template, made = () => {}, fill = () => {}, none = null }) {
  const existing = new Map();
  for (const el of container.querySelectorAll(`:scope > [data-${key}]`)) existing.set(el.dataset[key], el);
  const wanted = new Set(items.map((item) => item.name));
  for (const [name, el] of existing) if (!wanted.has(name)) el.remove();
  items.forEach((item, i) => {
    let el = existing.get(item.name);
    if (!el) {
      el = template.content.firstElementChild.cloneNode(true);
      el.dataset[key] = item.name;
      made(el, item);
    }
    if (container.children[i] !== el) container.insertBefore(el, container.children[i] || null);
    fill(el, item);
  });
  if (none) none.hidden = items.length > 0;
}

// The element inside `root` marked data-c="name".
export const part = (root, name) => root.querySelector(`[data-c="${name}"]`);
