// The documents of the index: statistics, a page of the list, upload and delete.

import * as api from './api.js';
import { clear, el, label, num } from './dom.js';

export const PAGE = 50;

/** Renders the statistics of `GET /v1/stats` into `box`. */
export function showStats(box, s) {
  clear(box);
  const rows = [
    ['documents', s.documents], ['chunks', s.chunks], ['text bytes', s.text_bytes],
    ['segments', s.segments], ['disk bytes', s.disk_bytes], ['generation', s.generation],
    ['model', s.model], ['dimension', s.dimension], ['chunker', s.chunker],
  ].filter(([, v]) => v !== undefined);
  box.append(el('dl', {}, rows.map(([k, v]) => el('div', {}, el('dt', { text: k }), el('dd', {}, label(typeof v === 'number' ? num(v) : v))))));
  if (s.damaged) box.append(el('p', { class: 'warnings', text: `Damaged: ${(s.damage ?? []).join('; ')}` }));
}

/**
 * Renders one page of documents into `box`: `onOpen(id)` opens one, `onDelete(id)`
 * removes one, `onPage(offset)` turns the page.
 */
export function showList(box, { list, total }, offset, { onOpen, onDelete, onPage }) {
  clear(box);
  const rows = list.map((d) => el('tr', {},
    el('td', {}, el('button', { type: 'button', class: 'link', onclick: () => onOpen(d.id) }, label(d.id))),
    el('td', {}, label(d.title)),
    el('td', { class: 'n', text: num(d.chars) }),
    el('td', { class: 'n', text: String(d.chunks) }),
    el('td', { class: 'n', text: String(d.sections) }),
    el('td', {}, el('button', { type: 'button', class: 'danger quiet', title: 'Remove this document (write token)', onclick: () => onDelete(d.id) }, 'Delete')),
  ));
  box.append(
    el('p', { class: 'count', text: total ? `Documents ${offset + 1}–${offset + list.length} of ${total}` : 'No documents.' }),
    list.length
      ? el('table', { class: 'docs' },
        el('thead', {}, el('tr', {}, ['Id', 'Title', 'Characters', 'Chunks', 'Sections', ''].map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, rows))
      : null,
    el('div', { class: 'pager' },
      el('button', { type: 'button', disabled: offset === 0, onclick: () => onPage(Math.max(0, offset - PAGE)) }, 'Previous'),
      el('button', { type: 'button', disabled: offset + list.length >= total, onclick: () => onPage(offset + PAGE) }, 'Next')),
  );
}

const FORMATS = { md: 'markdown', markdown: 'markdown', html: 'html', htm: 'html', pdf: 'pdf', docx: 'docx' };

function base64(buffer) {
  const bytes = new Uint8Array(buffer);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** The `POST /v1/ingest` documents for `files`, each id `prefix` + the file's name. */
export async function postedDocuments(files, prefix) {
  const out = [];
  for (const f of files) {
    const ext = f.name.includes('.') ? f.name.split('.').pop().toLowerCase() : '';
    const format = FORMATS[ext] ?? 'text';
    const binary = format === 'pdf' || format === 'docx';
    out.push({ id: `${prefix}${f.name}`, format, text: binary ? base64(await f.arrayBuffer()) : await f.text() });
  }
  return out;
}

/** Uploads `files`; resolves to a line that says what the ingest did. */
export async function upload(files, prefix) {
  const report = await api.ingest(await postedDocuments(files, prefix));
  api.forgetDocuments();
  const parts = ['added', 'updated', 'unchanged', 'failed']
    .filter((k) => Array.isArray(report[k]) ? report[k].length : report[k])
    .map((k) => `${k} ${Array.isArray(report[k]) ? report[k].length : report[k]}`);
  return `Ingested: ${parts.join(', ') || 'nothing'}`;
}
