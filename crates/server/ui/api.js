// The HTTP API of this server, and only of this server: every request goes to a path of
// the page's own origin. The token lives in sessionStorage (this tab only) and is sent
// as a bearer token, never in a URL.

const KEY = 'excerpt.token';

export const token = {
  get: () => sessionStorage.getItem(KEY) || '',
  set: (t) => (t ? sessionStorage.setItem(KEY, t) : sessionStorage.removeItem(KEY)),
};

/** An error answer of the API: `{"error": {"code", "message"}}` and its status. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let unauthorized = () => {};
/** Calls `f(error)` whenever the server answers 401 (no token, or a wrong one). */
export function onUnauthorized(f) {
  unauthorized = f;
}

/** The options of a `fetch` to this server: the token as a bearer header, no cookies. */
function init(method, accept, withToken = true) {
  const headers = { Accept: accept };
  const t = withToken ? token.get() : '';
  if (t) headers.Authorization = `Bearer ${t}`;
  return { method, headers, credentials: 'omit', cache: 'no-store', redirect: 'error' };
}

/** Sends a request to a path of this server; resolves to `{value, headers}`. */
export async function call(method, path, body) {
  if (!path.startsWith('/') || path.startsWith('//')) throw new Error(`not a path of this server: ${path}`);
  const init_ = init(method, 'application/json');
  const { headers } = init_;
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init_.body = JSON.stringify(body);
  }
  const res = await fetch(path, init_);
  const text = await res.text();
  let value = null;
  try {
    value = text ? JSON.parse(text) : null;
  } catch {
    value = null;
  }
  if (!res.ok) {
    const e = new ApiError(
      res.status,
      value?.error?.code ?? `http_${res.status}`,
      value?.error?.message ?? (text.slice(0, 300) || res.statusText),
    );
    if (res.status === 401) unauthorized(e);
    throw e;
  }
  return { value, headers: res.headers };
}

/** `POST /v1/query`. */
export const query = async (spec) => (await call('POST', '/v1/query', spec)).value;

/** The path of one document (ids may hold `/`, `?`, `#`: all percent-encoded). */
export const documentPath = (id) => '/v1/documents/' + encodeURIComponent(id);

const documents = new Map();
/** `GET /v1/documents/{id}`, kept for the page's life (forgotten on any write). */
export function getDocument(id) {
  if (!documents.has(id)) {
    const p = call('GET', documentPath(id)).then((r) => r.value);
    p.catch(() => documents.delete(id));
    documents.set(id, p);
  }
  return documents.get(id);
}
export const forgetDocuments = () => documents.clear();

/**
 * `GET /v1/pages/{page}/{id}?highlight=`: a page of a PDF as an image, the ranges
 * outlined; `{blob, boxes}` with the boxes drawn for each range.
 */
export async function pageImage(id, page, highlight) {
  const q = highlight ? `?${new URLSearchParams({ highlight })}` : '';
  const res = await fetch(`/v1/pages/${page}/${encodeURIComponent(id)}${q}`, init('GET', 'image/png'));
  if (!res.ok) {
    let v = null;
    try {
      v = await res.json();
    } catch {
      v = null;
    }
    const e = new ApiError(res.status, v?.error?.code ?? `http_${res.status}`, v?.error?.message ?? res.statusText);
    if (res.status === 401) unauthorized(e);
    throw e;
  }
  const boxes = (res.headers.get('X-Highlight-Boxes') ?? '').split(',').filter(Boolean).map(Number);
  return { blob: await res.blob(), boxes };
}

/** `GET /v1/documents?prefix=&offset=&limit=`: `{list, total}`. */
export async function listDocuments(prefix, offset, limit) {
  const p = new URLSearchParams({ offset: String(offset), limit: String(limit) });
  if (prefix) p.set('prefix', prefix);
  const r = await call('GET', `/v1/documents?${p}`);
  return { list: r.value, total: Number(r.headers.get('X-Total-Count') ?? r.value.length) };
}

export const stats = async () => (await call('GET', '/v1/stats')).value;
export const ingest = async (documents) => (await call('POST', '/v1/ingest', { documents })).value;
export async function remove(id) {
  const r = await call('DELETE', documentPath(id));
  forgetDocuments();
  return r.value;
}

/**
 * Whether the server has an evaluation report (`GET /v1/report`), and how the page can
 * show it: `'link'` when it needs no token (a plain link opens it), `'fetch'` when only
 * this tab's token lets it through (a link cannot send the header), `null` when there is
 * none or this tab may not read it.
 */
export async function reportAccess() {
  const head = async (withToken) => (await fetch('/v1/report', init('HEAD', 'text/html', withToken))).ok;
  try {
    if (await head(false)) return 'link';
    if (token.get() && (await head(true))) return 'fetch';
  } catch {
    // No answer: no link.
  }
  return null;
}

/** The report fetched with this tab's token, as a Blob. */
export async function report() {
  const res = await fetch('/v1/report', init('GET', 'text/html'));
  if (!res.ok) {
    const e = new ApiError(res.status, `http_${res.status}`, `the report: ${res.status} ${res.statusText}`);
    if (res.status === 401) unauthorized(e);
    throw e;
  }
  return res.blob();
}
