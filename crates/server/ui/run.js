// One run of a query (a context, side A or B): its summary, the planner's notes, the
// timings, the text the LLM receives, and a card per piece.

import { el, label, num } from './dom.js';

/** Whether piece `p` shares characters with a piece of `others` in the same document. */
export function overlaps(p, others) {
  return others.some((q) => q.doc_id === p.doc_id && q.start < p.end && p.start < q.end);
}

/** The query's options as the API takes them (`POST /v1/query`). */
export function spec(state, side) {
  const s = { query: state.q, timings: true };
  const strategy = side === 'b' ? state.bStrategy : state.strategy;
  const budget = side === 'b' ? state.bBudget : state.budget;
  if (strategy) s.strategy = strategy;
  if (budget) s.budget = Number(budget);
  if (state.mode) s.mode = state.mode;
  const filter = {};
  if (state.docIds.length) filter.doc_ids = state.docIds;
  if (state.prefixes.length) filter.prefixes = state.prefixes;
  if (state.where.length) filter.where = state.where;
  if (Object.keys(filter).length) s.filter = filter;
  return s;
}

/** `1 piece`, `2 pieces`. */
export const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

function pages(p) {
  if (p.page_start == null) return null;
  return p.page_end != null && p.page_end !== p.page_start ? `p. ${p.page_start}–${p.page_end}` : `p. ${p.page_start}`;
}

function card(run, p, i, other, onOpen) {
  const side = run.side.toUpperCase();
  let badge = null;
  if (other) {
    badge = overlaps(p, other.ctx.pieces)
      ? el('span', { class: 'badge both', text: 'in both' })
      : el('span', { class: `badge only-${run.side}`, text: `only ${side}` });
  }
  const meta = el('p', { class: 'piece-meta' },
    el('code', { class: 'doc-id' }, label(p.doc_id)),
    p.section ? [' · ', label(p.section, 'section')] : null,
    pages(p) ? [' · ', pages(p)] : null,
    ` · chars ${p.start}–${p.end}`,
    ` · relevance ${num(p.relevance)}`,
    ` · ${p.tokens} tokens`,
  );
  return el('li', { class: `piece side-${run.side}`, data: { side: run.side, index: String(i) } },
    el('div', { class: 'piece-head' },
      el('span', { class: 'ord', text: `${side}${i + 1}` }),
      el('button', {
        type: 'button', class: 'open', title: 'Show in its document',
        onclick: () => onOpen(run.side, i),
      }, label(p.title || p.doc_id)),
      badge,
    ),
    meta,
    el('p', { class: 'piece-text', text: p.text }),
  );
}

/** The panel of one run; `other` is the run beside it when comparing. */
export function runPanel(run, other, onOpen) {
  const { ctx } = run;
  const t = ctx.timings;
  const summary = el('p', { class: 'summary' },
    el('strong', {}, label(ctx.strategy)),
    ` · ${ctx.tokens} of ${ctx.budget} tokens · ${plural(ctx.pieces.length, 'piece')} · ${ctx.order} order`,
    t ? ` · ${num(t.total_ms, 1)} ms` : null,
  );
  let alone = null;
  if (other) {
    const n = ctx.pieces.filter((p) => !overlaps(p, other.ctx.pieces)).length;
    alone = el('p', { class: 'alone', text: `${n} of ${plural(ctx.pieces.length, 'piece')} only in ${run.side.toUpperCase()}` });
  }
  const notes = ctx.notes?.length
    ? el('div', { class: 'notes' }, el('h3', { text: 'Planner notes' }),
      el('ul', {}, ctx.notes.map((n) => el('li', {}, label(n)))))
    : null;
  const warnings = ctx.warnings?.length
    ? el('div', { class: 'warnings' }, el('h3', { text: 'Warnings' }),
      el('ul', {}, ctx.warnings.map((n) => el('li', {}, label(n)))))
    : null;
  const timings = t
    ? el('details', { class: 'timings' }, el('summary', { text: 'Timings' }),
      el('table', {}, el('tbody', {}, Object.entries(t).map(([k, v]) =>
        el('tr', {}, el('th', { scope: 'row', text: k.replace(/_ms$/, '') }), el('td', { text: `${num(v, 2)} ms` }))))))
    : null;
  const rendered = el('details', { class: 'rendered' },
    el('summary', { text: `Context as the LLM receives it (${ctx.tokens} tokens)` }),
    el('pre', { class: 'rendered-text', text: run.rendered }));
  return el('div', { class: `run side-${run.side}`, data: { side: run.side } },
    el('h2', {}, el('span', { class: `tag side-${run.side}`, text: run.side.toUpperCase() }), ' ', label(run.label)),
    summary, alone, notes, warnings, timings, rendered,
    ctx.pieces.length
      ? el('ol', { class: 'pieces' }, ctx.pieces.map((p, i) => card(run, p, i, other, onOpen)))
      : el('p', { class: 'empty', text: 'No pieces: nothing in the index matched within the filters.' }),
  );
}
