// Building the page from data without ever parsing data as HTML: every string a server
// sends (titles, ids, section paths, text) becomes a text node, never markup.

/** An element with attributes (`class`, `text`, `on…` listeners, `data`) and children. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = String(v);
    else if (k === 'data') Object.assign(e.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, children);
  return e;
}

/** Appends children: nodes as they are, strings and numbers as text. */
export function append(parent, children) {
  for (const c of [children].flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    parent.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return parent;
}

/** Removes every child of `e`. */
export function clear(e) {
  while (e.firstChild) e.firstChild.remove();
  return e;
}

// Bidirectional overrides and isolates, marks, and C0 controls but tab and newline.
const CONTROLS = /[\u0000-\u0008\u000B-\u001F\u007F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/**
 * A label from the server (a title, an id, a section path) as text in its own
 * bidirectional isolate, with each control character shown as a visible `⟨U+202E⟩`
 * rather than obeyed, so that a title cannot reorder the text around it or pass
 * itself off as another.
 */
export function label(s, cls) {
  const text = String(s ?? '');
  const out = el('bdi', { class: cls });
  let last = 0;
  for (const m of text.matchAll(CONTROLS)) {
    if (m.index > last) out.append(text.slice(last, m.index));
    const code = 'U+' + m[0].codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
    out.append(el('span', { class: 'ctl', title: `control character ${code}`, text: `⟨${code}⟩` }));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.append(text.slice(last));
  return out;
}

/** A number with at most `digits` decimals. */
export function num(x, digits = 3) {
  if (typeof x !== 'number' || !Number.isFinite(x)) return String(x ?? '–');
  return Number.isInteger(x) ? String(x) : x.toFixed(digits).replace(/\.?0+$/, '');
}
