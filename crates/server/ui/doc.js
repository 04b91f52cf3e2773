// One document's text with the pieces of the runs shown highlighted in place, its
// section outline beside it. Offsets are in characters (Unicode scalar values), as the
// API counts them, so the text is cut by code points, never by UTF-16 units.

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
  focusPiece(view, focus);
  return { sides, pieces: ranges.length };
}

/** Marks piece `focus` as the current one and scrolls it into view. */
export function focusPiece(view, focus) {
  for (const m of view.querySelectorAll('mark.current')) m.classList.remove('current');
  if (!focus) return;
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
