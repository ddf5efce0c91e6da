// DOM helpers: elements built with text nodes only (nothing from a server or a player is ever
// parsed as HTML).
type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | ((ev: Event) => void) | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: (Child | Child[])[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Replaces the content of `el`. */
export function mount(el: Element, ...children: (Child | Child[])[]) {
  el.replaceChildren();
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) el.append(child instanceof Node ? child : String(child));
}

export const errorLine = (text: string) => h('p', { class: 'error', role: 'alert' }, text);

/** A table of rows (each cell text or a node). */
export function grid(headers: string[], rows: (Child | Child[])[][], attrs: Attrs = {}) {
  return h('table', { class: 'grid', ...attrs },
    h('thead', {}, h('tr', {}, headers.map((t) => h('th', {}, t)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))));
}

export const when = (ms: number | string | null | undefined) => (ms === null || ms === undefined ? '—' : new Date(ms).toLocaleTimeString());
