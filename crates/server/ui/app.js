// The inspector's wiring: the state lives in the URL (`/?q=...&strategy=...&budget=...`
// runs that query; `b_strategy`/`b_budget` compare; `view=docs` lists documents), the
// views are drawn from API answers, and the token is asked for when the server wants one.

import * as api from './api.js';
import { clear, el } from './dom.js';
import { focusPiece, showDocument } from './doc.js';
import { PAGE, showList, showStats, upload } from './docs.js';
import { plural, runPanel, spec } from './run.js';

const $ = (id) => document.getElementById(id);
const lines = (s) => s.split('\n').map((x) => x.trim()).filter(Boolean);

/** What the URL says. */
function readUrl() {
  const p = new URLSearchParams(location.search);
  return {
    view: p.get('view') === 'docs' ? 'docs' : 'query',
    q: p.get('q') ?? '',
    strategy: p.get('strategy') ?? '',
    budget: p.get('budget') ?? '',
    mode: p.get('mode') ?? '',
    docIds: p.getAll('doc_id'),
    prefixes: p.getAll('prefix'),
    where: p.getAll('where'),
    compare: p.has('b_strategy') || p.has('b_budget'),
    bStrategy: p.get('b_strategy') ?? '',
    bBudget: p.get('b_budget') ?? '',
    listPrefix: p.get('list_prefix') ?? '',
    offset: Math.max(0, Number.parseInt(p.get('offset') ?? '0', 10) || 0),
    show: p.get('show') ?? '',
    open: /^[ab][0-9]{1,5}$/.test(p.get('open') ?? '') ? p.get('open') : '',
  };
}

/** The URL of a state: a view is a link. */
function urlOf(s) {
  const p = new URLSearchParams();
  if (s.view === 'docs') {
    p.set('view', 'docs');
    if (s.listPrefix) p.set('list_prefix', s.listPrefix);
    if (s.offset) p.set('offset', String(s.offset));
    if (s.show) p.set('show', s.show);
    return `/?${p}`;
  }
  if (s.q) p.set('q', s.q);
  if (s.strategy) p.set('strategy', s.strategy);
  if (s.budget) p.set('budget', s.budget);
  if (s.mode) p.set('mode', s.mode);
  s.docIds.forEach((x) => p.append('doc_id', x));
  s.prefixes.forEach((x) => p.append('prefix', x));
  s.where.forEach((x) => p.append('where', x));
  if (s.compare) {
    p.set('b_strategy', s.bStrategy);
    if (s.bBudget) p.set('b_budget', s.bBudget);
  }
  if (s.open) p.set('open', s.open);
  const q = p.toString();
  return q ? `/?${q}` : '/';
}

function fillForm(s) {
  $('q').value = s.q;
  $('strategy').value = s.strategy;
  $('budget').value = s.budget;
  $('mode').value = s.mode;
  $('doc-ids').value = s.docIds.join('\n');
  $('prefixes').value = s.prefixes.join('\n');
  $('where').value = s.where.join('\n');
  $('filters').open = s.docIds.length + s.prefixes.length + s.where.length > 0;
  $('compare').checked = s.compare;
  $('b-strategy').value = s.bStrategy;
  $('b-budget').value = s.bBudget;
  $('list-prefix').value = s.listPrefix;
  document.body.classList.toggle('comparing', s.compare);
}

function readForm() {
  return {
    ...readUrl(),
    view: 'query',
    q: $('q').value.trim(),
    strategy: $('strategy').value.trim(),
    budget: $('budget').value.trim(),
    mode: $('mode').value,
    docIds: lines($('doc-ids').value),
    prefixes: lines($('prefixes').value),
    where: lines($('where').value),
    compare: $('compare').checked,
    bStrategy: $('b-strategy').value.trim() || ($('compare').checked ? 'rse' : ''),
    bBudget: $('b-budget').value.trim(),
    show: '',
    open: '',
  };
}

function say(message, kind = 'info') {
  const s = $('status');
  s.textContent = message;
  s.className = `status ${kind}`;
}

function failed(e) {
  if (e instanceof api.ApiError && e.status === 401) return; // the token form says it
  if (e instanceof api.ApiError && e.code === 'read_only_token') {
    say(`${e.message}. Give the write token to change the index.`, 'error');
    return;
  }
  say(e instanceof api.ApiError ? `${e.status} ${e.code}: ${e.message}` : String(e), 'error');
}

// ---- the token ----

api.onUnauthorized((e) => {
  $('auth-message').textContent = api.token.get()
    ? `The server refused this token: ${e.message}`
    : `This server needs a token: ${e.message}`;
  $('auth').hidden = false;
  $('token').focus();
  clear($('results'));
  say('No data is shown until a token is given.', 'error');
});

$('auth').addEventListener('submit', (ev) => {
  ev.preventDefault();
  api.token.set($('token').value.trim());
  $('token').value = '';
  $('auth').hidden = true;
  say('');
  api.forgetDocuments();
  route();
  checkReport();
});
$('token-forget').addEventListener('click', () => {
  api.token.set('');
  api.forgetDocuments();
  $('auth').hidden = true;
  say('The token is forgotten.');
  checkReport();
});
$('token-button').addEventListener('click', () => {
  $('auth-message').textContent = api.token.get() ? 'A token is set for this tab.' : 'No token is set for this tab.';
  $('auth').hidden = !$('auth').hidden;
  if (!$('auth').hidden) $('token').focus();
});

// ---- the evaluation report (`excerpt serve --report`) ----

/** Shows the report's link when the server has one this tab may read. */
async function checkReport() {
  const access = await api.reportAccess();
  const link = $('report-link');
  link.hidden = access === null;
  link.dataset.access = access ?? '';
  link.title = access === 'fetch'
    ? 'Saves the report with this tab\'s token: a link cannot send it'
    : 'The report of excerpt eval --html this server was started with';
}

$('report-link').addEventListener('click', async (ev) => {
  if ($('report-link').dataset.access !== 'fetch') return; // a plain link opens it
  // A link cannot carry the token: fetch the page with it and save it as a file, which
  // opens offline like any report `excerpt eval --html` wrote.
  ev.preventDefault();
  try {
    const url = URL.createObjectURL(await api.report());
    const a = el('a', { href: url, download: 'excerpt-report.html' });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    say('The report is saved as excerpt-report.html (the server needs a token, which a link cannot send).');
  } catch (e) {
    failed(e);
  }
});

// ---- the query view ----

/** The runs on screen: `[{side, label, spec, ctx, rendered}]`. */
let runs = [];
let opened = null; // {id, focus}
let generation = 0;

function runLabel(s, side) {
  const strategy = (side === 'b' ? s.bStrategy : s.strategy) || 'auto';
  const budget = (side === 'b' ? s.bBudget : s.budget) || '2000';
  return `${strategy}, ${budget} tokens`;
}

async function runQuery(s) {
  const mine = ++generation;
  closeDocument();
  clear($('results'));
  runs = [];
  if (!s.q) {
    say('Ask a question to see its context.');
    return;
  }
  say('Running…');
  const sides = s.compare ? ['a', 'b'] : ['a'];
  const started = performance.now();
  try {
    const got = await Promise.all(sides.map(async (side) => {
      const body = spec(s, side);
      const [ctx, rendered] = await Promise.all([api.query(body), api.query({ ...body, format: 'text' })]);
      return { side, label: runLabel(s, side), spec: body, ctx, rendered: rendered.context };
    }));
    if (mine !== generation) return;
    runs = got;
    const box = $('results');
    box.classList.toggle('two', runs.length > 1);
    runs.forEach((r, k) => box.append(runPanel(r, runs[1 - k], openPiece)));
    performance.mark('cards'); // for the load-time measurement (tests/http/browser/load.rs)
    say(`${runs.map((r) => `${r.side.toUpperCase()}: ${plural(r.ctx.pieces.length, 'piece')}`).join(' · ')} in ${Math.round(performance.now() - started)} ms`);
    // A link may name the piece whose document is open (`open=a3`).
    if (s.open) openPiece(s.open[0], Number(s.open.slice(1)));
  } catch (e) {
    if (mine === generation) failed(e);
  }
}

function selectCard(side, index) {
  for (const c of document.querySelectorAll('.piece.selected')) c.classList.remove('selected');
  const c = document.querySelector(`.piece[data-side="${side}"][data-index="${index}"]`);
  if (c) {
    c.classList.add('selected');
    c.scrollIntoView({ block: 'nearest' });
  }
}

async function openPiece(side, index) {
  const run = runs.find((r) => r.side === side);
  const piece = run?.ctx.pieces[index];
  if (!piece) return;
  const focus = { side, index };
  selectCard(side, index);
  // The open piece is part of the link, without a new history entry.
  history.replaceState(null, '', urlOf({ ...readUrl(), open: `${side}${index}` }));
  if (opened?.id === piece.doc_id) {
    opened.focus = focus;
    focusPiece($('doc-view'), focus);
    return;
  }
  try {
    const doc = await api.getDocument(piece.doc_id);
    opened = { id: piece.doc_id, focus };
    $('doc-view').hidden = false;
    $('main').classList.add('doc-open');
    showDocument($('doc-view'), doc, runs.map((r) => ({ side: r.side, label: r.label, pieces: r.ctx.pieces })), focus,
      (s, i) => { selectCard(s, i); focusPiece($('doc-view'), { side: s, index: i }); });
    $('doc-text').focus({ preventScroll: true });
  } catch (e) {
    failed(e);
  }
}

/**
 * Closes the document. With `refocus`, when the focus was in the document (or nowhere),
 * it goes back to the card of the piece last shown, so a keyboard user is not sent back
 * to the top of the page.
 */
function closeDocument(refocus = false) {
  if (opened && readUrl().open) history.replaceState(null, '', urlOf({ ...readUrl(), open: '' }));
  const focus = opened?.focus;
  const active = document.activeElement;
  const inside = !active || active === document.body || $('doc-view').contains(active);
  opened = null;
  $('doc-view').hidden = true;
  $('main').classList.remove('doc-open');
  if (refocus && inside && focus) {
    document.querySelector(`.piece[data-side="${focus.side}"][data-index="${focus.index}"] button.open`)?.focus();
  }
}

// ---- the documents view ----

async function showDocs(s) {
  closeDocument();
  try {
    const [st, page] = await Promise.all([
      api.stats().catch((e) => (e.status === 404 ? null : Promise.reject(e))),
      api.listDocuments(s.listPrefix, s.offset, PAGE),
    ]);
    if (st) showStats($('stats'), st);
    else clear($('stats')).append(el('p', { text: 'No index yet: add documents below.' }));
    showList($('doc-list'), page, s.offset, {
      onOpen: (id) => go({ ...s, show: id }),
      onDelete: async (id) => {
        if (!window.confirm(`Remove ${id} from the index?`)) return;
        try {
          await api.remove(id);
          say(`Removed ${id}.`);
          showDocs({ ...s, show: '' });
        } catch (e) {
          failed(e);
        }
      },
      onPage: (offset) => go({ ...s, offset, show: '' }),
    });
    if (s.show) {
      const doc = await api.getDocument(s.show);
      opened = { id: s.show, focus: null };
      $('doc-view').hidden = false;
      $('main').classList.add('doc-open');
      showDocument($('doc-view'), doc, [], null, null);
    }
  } catch (e) {
    failed(e);
  }
}

$('list-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  go({ ...readUrl(), view: 'docs', listPrefix: $('list-prefix').value.trim(), offset: 0, show: '' });
});
$('upload-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const files = [...$('upload-files').files];
  if (!files.length) return;
  say('Uploading…');
  try {
    say(await upload(files, $('upload-prefix').value.trim()));
    $('upload-files').value = '';
    showDocs(readUrl());
  } catch (e) {
    failed(e);
  }
});

// ---- navigation ----

/** The query view last shown, for its tab. */
let lastQuery = '/';

function route() {
  const s = readUrl();
  if (s.view === 'query') lastQuery = location.pathname + location.search;
  fillForm(s);
  const docs = s.view === 'docs';
  $('query-view').hidden = docs;
  $('docs-view').hidden = !docs;
  $('tab-query').setAttribute('aria-pressed', String(!docs));
  $('tab-docs').setAttribute('aria-pressed', String(docs));
  if (docs) showDocs(s);
  else runQuery(s);
}

function go(s) {
  const url = urlOf(s);
  if (url !== location.pathname + location.search) history.pushState(null, '', url);
  route();
}

$('query-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  go(readForm());
});
$('compare').addEventListener('change', () => {
  document.body.classList.toggle('comparing', $('compare').checked);
  if ($('compare').checked && !$('b-strategy').value) $('b-strategy').value = 'rse';
});
$('tab-query').addEventListener('click', () => {
  if (readUrl().view === 'query') return;
  history.pushState(null, '', lastQuery);
  route();
});
$('tab-docs').addEventListener('click', () => go({ ...readUrl(), view: 'docs', show: '' }));
$('doc-close').addEventListener('click', () => {
  closeDocument(true);
  if (readUrl().show) go({ ...readUrl(), show: '' });
});
document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape' && !$('doc-view').hidden) closeDocument(true);
});
window.addEventListener('popstate', route);

route();
checkReport();
