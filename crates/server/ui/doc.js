// One document's text with the pieces of the runs shown highlighted in place, its
// section outline beside it. Offsets are in characters (Unicode scalar values), as the
// API counts them, so the text is cut by code points, never by UTF-16 units.

import { pageImage } from './api.js';
import { append, clear, el, label, num } from './dom.js';

/**
 * The text cut into segments at every piece boundary and section start: runs of
 * characters covered by the same pieces. `ranges` are `{side, index, start, end}`.
 */
export function segments(chars, ranges, sectionStarts) {
  const n = chars.length;
  const cuts = new Set([0, n]);
  for (const r of ranges) {
    cuts.add(Math.min(Math.max(r.start, 0), n));
    cuts.add(Math.min(Math.max(r.end, 0), n));
  }
  for (const s of sectionStarts) if (s >= 0 && s <= n) cuts.add(s);
  const points = [...cuts].sort((a, b) => a - b);
  const out = [];
  for (let j = 0; j + 1 < points.length; j++) {
    const [x, y] = [points[j], points[j + 1]];
    out.push({ start: x, end: y, in: ranges.filter((r) => r.start <= x && y <= r.end) });
  }
  return out;
}

/**
 * Shows document `doc` (the answer of `GET /v1/documents/{id}`) in `view`, with the
 * pieces of `runs` (`[{side, label, pieces}]`) that are in it highlighted, and scrolls to
 * piece `focus` (`{side, index}`) if given. `onPiece(side, index)` is called when a
 * highlight is clicked.
 */
export function showDocument(view, doc, runs, focus, onPiece) {
  const head = view.querySelector('#doc-head');
  const outline = view.querySelector('#outline');
  const body = view.querySelector('#doc-text');
  clear(head);
  clear(outline);
  clear(body);
  const chars = Array.from(doc.text ?? '');
  const ranges = [];
  for (const r of runs) {
    r.pieces.forEach((p, index) => {
      if (p.doc_id === doc.id) ranges.push({ side: r.side, index, start: p.start, end: p.end });
    });
  }
  const sides = [...new Set(ranges.map((r) => r.side))];
  append(head, [
    el('h2', {}, label(doc.title || doc.id)),
    el('p', { class: 'doc-meta' },
      el('code', { class: 'doc-id' }, label(doc.id)),
      ` · ${doc.chars} characters · ${doc.chunks} chunks · ${doc.sections.length} sections`,
      doc.source ? [' · ', label(doc.source)] : null),
    runs.length
      ? el('p', { class: 'legend' }, runs.map((r) => {
        const n = ranges.filter((x) => x.side === r.side).length;
        return el('span', { class: `key in-${r.side}` }, `${r.side.toUpperCase()}: `, label(r.label), ` (${n} here)`);
      }), runs.length > 1 ? el('span', { class: 'key in-ab', text: 'both' }) : null)
      : null,
  ]);

  // The outline: each section with how many pieces start in it.
  const list = el('ol', {});
  doc.sections.forEach((s, k) => {
    const n = ranges.filter((r) => r.start >= s.start && r.start < s.end).length;
    list.append(el('li', { class: `lvl-${Math.min(s.level, 6)}` },
      el('button', {
        type: 'button', class: n ? 'sec has' : 'sec', title: s.path,
        onclick: () => view.querySelector(`#sec-${k}`)?.scrollIntoView({ block: 'start' }),
      }, label(s.heading || '(untitled)'), n ? el('span', { class: 'count', text: String(n) }) : null)));
  });
  outline.append(doc.sections.length ? list : el('p', { class: 'empty', text: 'No sections.' }));

  const starts = new Map();
  doc.sections.forEach((s, k) => {
    if (!starts.has(s.start)) starts.set(s.start, []);
    starts.get(s.start).push(k);
  });
  const frag = document.createDocumentFragment();
  // The first highlight of each piece is a stop of the Tab key: Enter or Space on it
  // selects its piece, as a click does.
  const reached = new Set();
  for (const seg of segments(chars, ranges, starts.keys())) {
    for (const k of starts.get(seg.start) ?? []) frag.append(el('span', { class: 'anchor', id: `sec-${k}` }));
    const text = chars.slice(seg.start, seg.end).join('');
    if (!seg.in.length) {
      frag.append(text);
      continue;
    }
    const which = new Set(seg.in.map((r) => r.side));
    const m = el('mark', {
      class: `hl ${which.size > 1 ? 'in-ab' : `in-${[...which][0]}`}`,
      data: { pieces: seg.in.map((r) => `${r.side}${r.index}`).join(' ') },
      title: seg.in.map((r) => `${r.side.toUpperCase()}${r.index + 1}`).join(', '),
      onclick: () => onPiece?.(seg.in[0].side, seg.in[0].index),
    });
    for (const r of seg.in) m.classList.add(`p-${r.side}-${r.index}`);
    const first = seg.in.find((r) => !reached.has(`${r.side}${r.index}`));
    if (onPiece && first) {
      for (const r of seg.in) reached.add(`${r.side}${r.index}`);
      m.tabIndex = 0;
      m.setAttribute('role', 'button');
      m.setAttribute('aria-label', `Piece ${seg.in.map((r) => `${r.side.toUpperCase()}${r.index + 1}`).join(', ')}`);
      m.addEventListener('keydown', (ev) => {
        if (ev.key !== 'Enter' && ev.key !== ' ') return;
        ev.preventDefault();
        onPiece(first.side, first.index);
      });
    }
    m.textContent = text;
    frag.append(m);
  }
  body.append(frag);
  body.scrollTop = 0;
  pageOf.set(view, { doc, ranges });
  const fig = view.querySelector('#doc-page');
  if (fig) {
    fig.hidden = true;
    delete fig.dataset.key;
  }
  focusPiece(view, focus);
  return { sides, pieces: ranges.length };
}

/** The document shown in each view and its highlighted ranges, for its page images. */
const pageOf = new WeakMap();

/** The page (from 1) of `doc` that character `at` is on, or 0. */
export function pageAt(doc, at) {
  const k = (doc.pages ?? []).findIndex((p) => p.start <= at && at < p.end);
  return k + 1;
}

/**
 * Shows page `page` of the view's document as an image, the pieces on it outlined
 * (drawn by the server: `GET /v1/pages/{page}/{id}?highlight=`), fetched with the
 * token and shown from a `blob:` URL. A document without pages hides it; a server
 * that cannot render the page says why in its place.
 */
async function showPage(view, page) {
  const fig = view.querySelector('#doc-page');
  const shown = pageOf.get(view);
  if (!fig || !shown) return;
  const { doc, ranges } = shown;
  const p = doc.pages?.[page - 1];
  if (!p) {
    fig.hidden = true;
    return;
  }
  const key = `${doc.id}\n${page}`;
  if (fig.dataset.key === key) return;
  fig.dataset.key = key;
  const on = [...new Set(ranges
    .filter((r) => r.start < p.end && r.end > p.start)
    .map((r) => `${r.start}-${r.end}`))];
  // Made here, not in the page: no image is on the page until a PDF's page is shown.
  let img = fig.querySelector('img');
  if (!img) {
    img = el('img', { alt: '' });
    img.hidden = true;
    fig.prepend(img);
  }
  const caption = fig.querySelector('figcaption');
  const what = `Page ${page} of ${doc.pages.length}`;
  caption.textContent = `${what} · loading…`;
  fig.classList.remove('failed');
  fig.hidden = false;
  try {
    const got = await pageImage(doc.id, page, on.join(','));
    if (fig.dataset.key !== key) return;
    const url = URL.createObjectURL(got.blob);
    const old = img.src;
    img.src = url;
    if (old.startsWith('blob:')) URL.revokeObjectURL(old);
    const boxes = got.boxes.reduce((a, b) => a + b, 0);
    const outlined = on.length ? ` · ${on.length === 1 ? '1 piece' : `${on.length} pieces`} outlined` : '';
    img.alt = `${what} of ${doc.title || doc.id}${outlined}`;
    img.hidden = false;
    caption.textContent = `${what}${outlined}${on.length && !boxes ? ' (their characters could not be placed on the page)' : ''}`;
  } catch (e) {
    if (fig.dataset.key !== key) return;
    img.hidden = true;
    fig.classList.add('failed');
    caption.textContent = `${what}: the page image cannot be shown (${e.message})`;
  }
}

/** Marks piece `focus` as the current one and scrolls it into view. */
export function focusPiece(view, focus) {
  for (const m of view.querySelectorAll('mark.current')) m.classList.remove('current');
  if (!focus) return;
  // A PDF's page: that of the piece's start.
  const shown = pageOf.get(view);
  const hit = shown?.ranges.find((x) => x.side === focus.side && x.index === focus.index);
  if (hit && shown.doc.pages?.length) showPage(view, pageAt(shown.doc, hit.start));
  const marks = view.querySelectorAll(`mark.p-${focus.side}-${focus.index}`);
  for (const m of marks) m.classList.add('current');
  const first = marks[0];
  if (!first) return;
  // Scroll the text, not the page, so the pieces beside it stay where they are; on a
  // narrow screen, where the document is below the pieces, bring the document up too.
  const box = view.querySelector('#doc-text');
  const offset = first.getBoundingClientRect().top - box.getBoundingClientRect().top;
  box.scrollTop += offset - box.clientHeight / 3;
  if (!window.matchMedia('(min-width: 1100px)').matches) view.scrollIntoView({ block: 'start' });
  const r = first.getBoundingClientRect();
  if (r.bottom < 0 || r.top > window.innerHeight) first.scrollIntoView({ block: 'center' });
}

/** A short summary line of a document for lists. */
export function docSummary(d) {
  return `${num(d.chars)} characters · ${d.chunks} chunks · ${d.sections} sections`;
}
