//! The route handlers. Each one parses its input, runs the engine off the async threads
//! and shapes the answer like the matching `excerpt` command's JSON output.

use std::collections::HashSet;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use excerpt::{
    context_json, render, DocumentSummary, LoadOptions, NoProgress, ParsedDocument, PostedDocument,
    QuerySpec, RenderFormat,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use crate::answers::{QueryAnswer, RenderedContext};
use crate::error::ApiError;
use crate::error::ErrorBody;
use crate::extract::{blocking, on_pool, JsonBody};
use crate::highlight::highlight_ranges;
use crate::metrics::PROMETHEUS_TEXT;
use crate::openapi::bodies::QueryBody;
use crate::state::AppState;

/// The answer of `GET /healthz`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub(crate) struct Health {
    /// Always `ok`.
    status: String,
}

/// `GET /healthz`.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "server",
    summary = "Liveness",
    description = "Answers while the server runs, even when every request slot is busy; \
needs no token.",
    responses((status = 200, description = "The server is up.", body = Health)),
    security(()),
)]
pub(crate) async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

/// Unknown routes.
pub(crate) async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no route for {method} {}", uri.path()),
    )
}

/// Known routes, wrong method.
pub(crate) async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{method} is not allowed on {}", uri.path()),
    )
}

/// Takes `key` out of the body if present; it must be a string (or null).
fn take_string(body: &mut Map<String, Value>, key: &str) -> Result<Option<String>, ApiError> {
    match body.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ApiError::bad_request(format!(
            "{key} must be a string, not {other}"
        ))),
    }
}

/// `POST /v1/query`: the body is a [`QuerySpec`] (`query`, `mode`, `strategy`, `budget`,
/// `top_k`, `candidates`, `fusion`, `filter`, `rerank`) plus `format` (`json`, the
/// default, `text` or `markdown`) and `instruction` (closing instruction of `text`).
///
/// `json` answers the value `excerpt query --format json` prints (the context plus
/// `query`). `text` and `markdown` answer `{query, format, strategy, budget, tokens,
/// context}` with the rendering in `context`.
#[utoipa::path(
    post,
    path = "/v1/query",
    tag = "query",
    summary = "Context for a query",
    description = "Retrieves and assembles the context for a query: exact slices of \
documents with their ids and character offsets, within a token budget. The same request \
as `excerpt query --format json`.",
    request_body = QueryBody,
    responses(
        (status = 200, description = "The context (`format: json`) or its rendering.", body = QueryAnswer),
        (status = 400, description = "A bad query: unknown field, strategy, fusion, filter or format.", body = ErrorBody),
        (status = 404, description = "No index yet, or a filter names an unknown document.", body = ErrorBody),
        (status = 413, description = "The body is over the size limit.", body = ErrorBody),
        (status = 415, description = "The body is not sent as JSON.", body = ErrorBody),
    ),
)]
pub(crate) async fn query(
    State(st): State<AppState>,
    JsonBody(mut body): JsonBody<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let format = match take_string(&mut body, "format")? {
        None => RenderFormat::Json,
        Some(f) => f.parse::<RenderFormat>().map_err(ApiError::bad_request)?,
    };
    let instruction = take_string(&mut body, "instruction")?;
    let explain = match body.remove("explain") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            ApiError::bad_request(format!("explain must be a count of hits, not {v}"))
        })? as usize),
    };
    let spec: QuerySpec = serde_json::from_value(Value::Object(body))
        .map_err(|e| ApiError::bad_request(format!("invalid query: {e}")))?;
    let req = spec.to_request()?;
    let engine = st.engine.clone();
    let (req, ctx, explained) = on_pool(move || {
        let ctx = engine.query(&req)?;
        let explained = match explain {
            Some(n) => Some(engine.explain(&req, &ctx, n)?),
            None => None,
        };
        Ok((req, ctx, explained))
    })
    .await?;
    if format == RenderFormat::Json {
        // The bytes `ContextAnswer` serializes to, written without the JSON value in
        // between (`context_json`): a tenth of a millisecond less on every query.
        let body = match explained {
            None => context_json(&req.text, &ctx),
            Some(hits) => serde_json::to_vec(&excerpt::explained_value(&req.text, &ctx, &hits))
                .map_err(|e| ApiError::internal(e.to_string()))?,
        };
        return Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response());
    }
    let rendered = render(&req.text, &ctx, format, instruction);
    Ok(Json(QueryAnswer::Rendered(RenderedContext {
        query: req.text,
        format: format.name().to_string(),
        strategy: ctx.strategy,
        budget: ctx.budget,
        tokens: ctx.tokens,
        context: rendered,
    }))
    .into_response())
}

/// The body of `POST /v1/ingest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IngestBody {
    /// The documents, at least one, each id once.
    #[schema(min_items = 1)]
    documents: Vec<PostedDocument>,
}

/// Loads one posted document ([`PostedDocument::load`]), its loader's warnings
/// added to `warnings`.
fn parse_document(
    d: PostedDocument,
    load: &LoadOptions,
    warnings: &mut Vec<excerpt::Problem>,
) -> Result<ParsedDocument, ApiError> {
    let id = d.id.clone();
    let (doc, found) = d.load(load)?;
    warnings.extend(found.into_iter().map(|reason| excerpt::Problem {
        path: id.clone(),
        reason,
    }));
    Ok(doc)
}

/// `POST /v1/ingest`: `{documents: [{id, title?, text, metadata?, format?}]}` with
/// `format` one of `text` (default), `markdown`, `html`, `pdf` (the file base64-encoded
/// in `text`). Every document is checked
/// first; one bad document refuses the whole request (400). Answers the report
/// `excerpt ingest --json` prints; when nothing at all could be ingested, 400.
#[utoipa::path(
    post,
    path = "/v1/ingest",
    tag = "documents",
    summary = "Add or replace documents",
    description = "Loads each document as a file of its format would be, then chunks, \
embeds and commits them. Every document is checked first: one bad document refuses the \
whole request. Needs the token when the server has one.",
    request_body = IngestBody,
    responses(
        (status = 200, description = "What the ingest did (`excerpt ingest --json`).", body = excerpt::IngestReport),
        (status = 400, description = "A bad document, or nothing could be ingested.", body = ErrorBody),
        (status = 409, description = "Another process holds the index lock.", body = ErrorBody),
        (status = 413, description = "The body is over the size limit.", body = ErrorBody),
        (status = 415, description = "The body is not sent as JSON.", body = ErrorBody),
    ),
)]
pub(crate) async fn ingest(
    State(st): State<AppState>,
    JsonBody(body): JsonBody<IngestBody>,
) -> Result<Json<excerpt::IngestReport>, ApiError> {
    if body.documents.is_empty() {
        return Err(ApiError::bad_request("documents is empty"));
    }
    // Parsing (HTML above all) is CPU work: it runs on the blocking pool, never on the
    // async threads that answer /healthz and every other request. PDFs are parsed in
    // a worker process under limits when the options name one (`excerpt serve` does).
    let load = st.options.ingest.load.clone();
    let engine = st.engine.clone();
    let (docs, warnings) = blocking(move || {
        let mut seen = HashSet::new();
        let mut warnings = Vec::new();
        let mut docs = Vec::with_capacity(body.documents.len());
        for d in body.documents {
            if !seen.insert(d.id.clone()) {
                return Err(ApiError::bad_request(format!(
                    "document id {:?} is given twice",
                    d.id
                )));
            }
            let doc = parse_document(d, &load, &mut warnings)?;
            engine.check_storable(&doc)?;
            docs.push(doc);
        }
        Ok((docs, warnings))
    })
    .await?;
    // Owned, so the lock is released when the write ends, even if the client hangs up.
    let guard = st.writer.clone().lock_owned().await;
    let engine = st.engine.clone();
    let opts = st.options.ingest.clone();
    let mut report = blocking(move || {
        let r = engine.ingest_documents(docs, &opts, &NoProgress);
        drop(guard);
        Ok(r?)
    })
    .await?;
    report.warnings.extend(warnings);
    st.metrics.ingested(&report);
    if report.nothing_ingested() {
        let reasons: Vec<&str> = report.failed.iter().map(|p| p.reason.as_str()).collect();
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "nothing_ingested",
            format!("no document could be ingested: {}", reasons.join("; ")),
        ));
    }
    Ok(Json(report))
}

/// Query string of `GET /v1/documents`. The numbers are read as text and parsed
/// here, so a bad one gets a message that names it.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// The most documents to answer (default: all of them from `offset`); a whole
    /// number, 0 for none (the count alone, in `X-Total-Count`).
    #[param(value_type = Option<u64>, minimum = 0)]
    limit: Option<String>,
    /// How many of the matching documents to skip, in id order (default 0).
    #[param(value_type = Option<u64>, minimum = 0)]
    offset: Option<String>,
    /// Only the documents whose id starts with this (e.g. `guides/`); case-sensitive.
    prefix: Option<String>,
}

/// The header of `GET /v1/documents` that counts the matching documents.
pub(crate) const TOTAL_COUNT: &str = "x-total-count";

/// A whole number of the query string, or a 400 that names it.
fn whole_number(name: &str, value: Option<&str>) -> Result<Option<usize>, ApiError> {
    let Some(v) = value else {
        return Ok(None);
    };
    v.trim().parse::<usize>().map(Some).map_err(|_| {
        ApiError::bad_request(format!(
            "{name} must be a whole number, 0 or more, not {v:?}"
        ))
    })
}

/// `GET /v1/documents`: the listing `excerpt docs --json` prints (an index not created
/// yet lists nothing), or a page of it: `?limit=&offset=&prefix=`, the number of
/// matching documents in the `X-Total-Count` header.
#[utoipa::path(
    get,
    path = "/v1/documents",
    tag = "documents",
    summary = "List documents",
    description = "The documents of the index in id order (`excerpt docs --json`), all of \
them or a page: `prefix` keeps the ids that start with it, then `offset` skips that many \
and `limit` answers at most that many. The `X-Total-Count` header counts the documents \
that match `prefix` (all of them without it), whatever the page; the next page starts at \
`offset + limit` while that is below the count. An index not created yet lists nothing.",
    params(ListQuery),
    responses(
        (status = 200, description = "The documents of the page.", body = Vec<DocumentSummary>,
         headers(("X-Total-Count" = u64, description = "The number of documents that match \
`prefix` (all of them without it), not only those of this page."))),
        (status = 400, description = "A bad query string: a limit or offset that is not a \
whole number, or an unknown parameter.", body = ErrorBody),
    ),
)]
pub(crate) async fn list_documents(
    State(st): State<AppState>,
    q: Result<Query<ListQuery>, QueryRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let Query(q) = q.map_err(|e| {
        ApiError::bad_request(format!(
            "{} (GET /v1/documents takes limit, offset and prefix)",
            e.body_text()
        ))
    })?;
    let limit = whole_number("limit", q.limit.as_deref())?.unwrap_or(usize::MAX);
    let offset = whole_number("offset", q.offset.as_deref())?.unwrap_or(0);
    let prefix = q.prefix.unwrap_or_default();
    let engine = st.engine.clone();
    let (total, list) = blocking(
        move || match engine.documents_page(&prefix, offset, limit) {
            Ok(page) => Ok(page),
            Err(e) if e.is_no_index() => Ok((0, Vec::new())),
            Err(e) => Err(e.into()),
        },
    )
    .await?;
    Ok(([(TOTAL_COUNT, total.to_string())], Json(list)))
}

/// One section of `GET /v1/documents/{id}`, with character offsets.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SectionView {
    /// The heading text.
    heading: String,
    /// The heading level (1 for a top-level heading).
    level: u8,
    /// The heading path, ` > ` between levels.
    path: String,
    /// Start of the section (its heading), in characters.
    start: usize,
    /// End of the section with its subsections, in characters (exclusive).
    end: usize,
    /// Position of the enclosing section in `sections`.
    parent: Option<u32>,
}

/// The answer of `GET /v1/documents/{id}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DocumentView {
    /// Document id.
    id: String,
    /// Display title.
    title: String,
    /// Where it came from (a path), if anywhere.
    source: Option<String>,
    /// Characters of text.
    chars: usize,
    /// Bytes of text (UTF-8).
    bytes: usize,
    /// Chunks.
    chunks: usize,
    /// Content hash.
    hash: String,
    /// Metadata.
    metadata: Map<String, Value>,
    /// The sections, in reading order.
    sections: Vec<SectionView>,
    /// The pages of a document read from a PDF, in order, as character ranges of the
    /// text (they partition it); empty otherwise. `GET /v1/pages/{page}/{id}` renders
    /// one.
    pages: Vec<PageView>,
    /// The text (unless `text=false`); offsets index it in characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
}

/// One page of `GET /v1/documents/{id}`, with character offsets.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PageView {
    /// Start of the page's text, in characters.
    start: usize,
    /// End of the page's text, in characters (exclusive).
    end: usize,
}

/// Query string of `GET /v1/documents/{id}`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct DocumentQuery {
    /// Include the text (default true); pieces' `start`/`end` index it in characters.
    #[serde(default = "yes")]
    text: bool,
}

fn yes() -> bool {
    true
}

fn path_id(p: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    p.map(|Path(id)| id)
        .map_err(|e| ApiError::bad_request(e.body_text()))
}

/// `GET /v1/documents/{id}` (`?text=false` to leave the text out). The id may contain
/// `/` (ids are paths), raw or percent-encoded.
#[utoipa::path(
    get,
    path = "/v1/documents/{*id}",
    tag = "documents",
    summary = "One document",
    description = "A document's summary, sections with character offsets, and text. The id \
may contain `/`, raw or percent-encoded.",
    params(
        ("id" = String, Path, description = "The document id."),
        DocumentQuery,
    ),
    responses(
        (status = 200, description = "The document.", body = DocumentView),
        (status = 400, description = "A bad query string.", body = ErrorBody),
        (status = 404, description = "No such document, or no index yet.", body = ErrorBody),
    ),
)]
pub(crate) async fn get_document(
    State(st): State<AppState>,
    id: Result<Path<String>, PathRejection>,
    q: Result<Query<DocumentQuery>, QueryRejection>,
) -> Result<Json<DocumentView>, ApiError> {
    let id = path_id(id)?;
    let with_text = q
        .map(|Query(q)| q.text)
        .map_err(|e| ApiError::bad_request(e.body_text()))?;
    let engine = st.engine.clone();
    blocking(move || {
        let d = engine
            .document(&id)?
            .ok_or_else(|| ApiError::document_not_found(&id))?;
        // Not `DocumentSummary` flattened: its `sections` is a count, here the list.
        let summary = DocumentSummary::of(&d);
        let view = DocumentView {
            id: summary.id,
            title: summary.title,
            source: summary.source,
            chars: summary.chars,
            bytes: summary.bytes,
            chunks: summary.chunks,
            hash: summary.hash,
            metadata: summary.metadata,
            sections: d
                .sections
                .iter()
                .map(|s| SectionView {
                    heading: s.heading.clone(),
                    level: s.level,
                    path: s.path_string(),
                    start: s.range.char_start,
                    end: s.range.char_end,
                    parent: s.parent,
                })
                .collect(),
            pages: d
                .pages
                .iter()
                .map(|p| PageView {
                    start: p.char_start,
                    end: p.char_end,
                })
                .collect(),
            text: with_text.then(|| d.text.to_string()),
        };
        Ok(Json(view))
    })
    .await
}

/// The answer of `DELETE /v1/documents/{id}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Removed {
    /// The ids removed (the one asked for).
    removed: Vec<String>,
    /// The generation committed by the removal (0 on PostgreSQL, which has none).
    generation: u64,
    /// Documents left in the index.
    documents: usize,
}

/// `DELETE /v1/documents/{id}`: `{removed: [id], generation, documents}`; 404 when the
/// id is not in the index.
#[utoipa::path(
    delete,
    path = "/v1/documents/{*id}",
    tag = "documents",
    summary = "Remove a document",
    description = "Removes a document and commits. Needs the token when the server has one.",
    params(("id" = String, Path, description = "The document id.")),
    responses(
        (status = 200, description = "The document was removed.", body = Removed),
        (status = 400, description = "A bad id.", body = ErrorBody),
        (status = 404, description = "No such document, or no index yet.", body = ErrorBody),
        (status = 409, description = "Another process holds the index lock.", body = ErrorBody),
    ),
)]
pub(crate) async fn delete_document(
    State(st): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Removed>, ApiError> {
    let id = path_id(id)?;
    let guard = st.writer.clone().lock_owned().await;
    let engine = st.engine.clone();
    let metrics = st.metrics.clone();
    blocking(move || {
        let _guard = guard;
        if !engine.has_document(&id)? {
            return Err(ApiError::document_not_found(&id));
        }
        let removed = engine.remove(std::slice::from_ref(&id))?;
        if removed.is_empty() {
            return Err(ApiError::document_not_found(&id));
        }
        metrics.removed(removed.len());
        let (generation, documents) = engine.generation_and_documents()?;
        Ok(Json(Removed {
            removed,
            generation,
            documents,
        }))
    })
    .await
}

/// `GET /v1/stats`: what `excerpt stats --json` prints.
#[utoipa::path(
    get,
    path = "/v1/stats",
    tag = "documents",
    summary = "Index statistics",
    description = "Figures about the committed index (`excerpt stats --json`).",
    responses(
        (status = 200, description = "The statistics.", body = excerpt::IndexStats),
        (status = 404, description = "No index yet.", body = ErrorBody),
    ),
)]
pub(crate) async fn stats(
    State(st): State<AppState>,
) -> Result<Json<excerpt::IndexStats>, ApiError> {
    let engine = st.engine.clone();
    blocking(move || Ok(engine.stats()?)).await.map(Json)
}

#[utoipa::path(
    get,
    path = "/metrics",
    tag = "server",
    summary = "Metrics (Prometheus)",
    description = "The server's figures in the Prometheus text format (version 0.0.4): \
`excerpt_http_requests_total` by `method`, `route` (the route template) and `status`; \
`excerpt_http_request_duration_seconds` (histogram) by `method` and `route`; the index's \
size, read at each scrape (`excerpt_index_documents`, `excerpt_index_chunks`, \
`excerpt_index_disk_bytes`, `excerpt_index_generation`); and since the server started, \
`excerpt_ingest_documents_total` by `outcome` (`added`, `updated`, `unchanged`, \
`failed`), `excerpt_ingest_chunks_embedded_total`, `excerpt_ingest_chunks_reused_total` \
and `excerpt_documents_removed_total`. Not held back by the concurrency limit; needs a \
token (the read token or the write token) when reads do.",
    responses(
        (status = 200, description = "The metrics.", body = String,
         content_type = "text/plain; version=0.0.4; charset=utf-8"),
        (status = 500, description = "The index could not be read.", body = ErrorBody),
    ),
)]
pub(crate) async fn metrics(State(st): State<AppState>) -> Result<Response, ApiError> {
    let engine = st.engine.clone();
    let stats = blocking(move || match engine.stats() {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.is_no_index() => Ok(None),
        Err(e) => Err(e.into()),
    })
    .await?;
    let page = st
        .metrics
        .page(stats.as_ref())
        .map_err(|e| ApiError::internal(format!("the metrics did not encode: {e}")))?;
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, PROMETHEUS_TEXT)],
        page,
    )
        .into_response())
}

/// The header of `GET /v1/pages/{page}/{id}` that counts the boxes drawn for each range
/// of `highlight`, in its order (`3,0,1`): 0 for a range off the page, or whose
/// characters could not be placed.
pub(crate) const HIGHLIGHT_BOXES: &str = "x-highlight-boxes";

/// Query string of `GET /v1/pages/{page}/{id}`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageQuery {
    /// Ranges of the document text to outline on the page, in characters as pieces'
    /// `start` and `end` count them: `START-END` pairs separated by commas
    /// (`120-310,500-620`), at most 256. The parts of a range off this page are left
    /// out.
    highlight: Option<String>,
    /// Width of the image in pixels, 200 to 2000 (default 1000); the height follows
    /// the page's shape.
    #[param(value_type = Option<u32>, minimum = 200, maximum = 2000)]
    width: Option<String>,
}

/// A page error as an answer: 404 no such page, 409 the source changed, 422 not a PDF
/// or a PDF that cannot be rendered, 503 PDFium missing.
fn page_error(e: excerpt::PageError) -> ApiError {
    use excerpt::PageError as E;
    let (status, code) = match &e {
        E::NotPaged => (StatusCode::UNPROCESSABLE_ENTITY, "not_a_pdf"),
        E::NoPage { .. } => (StatusCode::NOT_FOUND, "page_not_found"),
        E::Engine { .. } => (StatusCode::SERVICE_UNAVAILABLE, "pdfium_unavailable"),
        E::Changed => (StatusCode::CONFLICT, "source_changed"),
        E::Pdf { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "pdf_unreadable"),
    };
    ApiError::new(status, code, e.to_string())
}

/// 409 `no_source`: the PDF a document was read from cannot be read again.
fn no_source(message: String) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, "no_source", message)
}

/// Reads a document's source file again: a regular file, at most `max` bytes.
fn read_source(source: Option<&str>, max: u64) -> Result<Vec<u8>, ApiError> {
    let Some(path) = source.filter(|s| !s.is_empty()) else {
        return Err(no_source(
            "the document records no source file to render its pages from (it was not ingested from a file)".into(),
        ));
    };
    let cannot = |why: String| no_source(format!("the source file {path:?} cannot be read: {why}"));
    let meta = std::fs::metadata(path).map_err(|e| cannot(e.to_string()))?;
    if !meta.is_file() {
        return Err(cannot("not a regular file".into()));
    }
    if meta.len() > max {
        return Err(cannot(format!(
            "{} bytes, over the file size limit of {max}",
            meta.len()
        )));
    }
    std::fs::read(path).map_err(|e| cannot(e.to_string()))
}

/// `GET /v1/pages/{page}/{id}`: page `page` (from 1) of the PDF document `id`, as a PNG
/// with the ranges of `?highlight=` outlined.
#[utoipa::path(
    get,
    path = "/v1/pages/{page}/{*id}",
    tag = "documents",
    summary = "A page of a PDF, as an image",
    description = "Renders page `page` (from 1, as pieces' `page_start` counts) of a \
document read from a PDF, as a PNG, with the characters of the `highlight` ranges \
outlined (one box per line a range runs over). The PDF is read again from the document's \
`source` path (a relative path is taken from the server's working directory) and its text \
extracted again: it must be the indexed text, else 409 `source_changed`. With PDF \
workers (as `excerpt serve` runs), PDFium runs in a worker process under the PDF limits. \
The id comes last since it may contain `/`, raw or percent-encoded.",
    params(
        ("page" = u32, Path, description = "The page, from 1.", minimum = 1),
        ("id" = String, Path, description = "The document id."),
        PageQuery,
    ),
    responses(
        (status = 200, description = "The page.", body = Vec<u8>, content_type = "image/png",
         headers(("X-Highlight-Boxes" = String, description = "How many boxes were drawn \
for each range of `highlight`, in its order, separated by commas (0: off the page, or not \
placed)."))),
        (status = 400, description = "A bad page number, `highlight` or `width`.", body = ErrorBody),
        (status = 404, description = "No such document or page, or no index yet.", body = ErrorBody),
        (status = 409, description = "The source file is not recorded or cannot be read \
(`no_source`), or its text is not the indexed text (`source_changed`).", body = ErrorBody),
        (status = 422, description = "The document was not read from a PDF (`not_a_pdf`), \
or the PDF cannot be rendered (`pdf_unreadable`).", body = ErrorBody),
    ),
)]
pub(crate) async fn page_image(
    State(st): State<AppState>,
    p: Result<Path<(String, String)>, PathRejection>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let (page, id) = p
        .map(|Path(p)| p)
        .map_err(|e| ApiError::bad_request(e.body_text()))?;
    let Query(q) = q.map_err(|e| {
        ApiError::bad_request(format!(
            "{} (GET /v1/pages/{{page}}/{{id}} takes highlight and width)",
            e.body_text()
        ))
    })?;
    let page = match page.trim().parse::<usize>() {
        Ok(n) if n >= 1 => n - 1,
        _ => {
            return Err(ApiError::bad_request(format!(
                "the page is a whole number from 1, not {page:?}"
            )))
        }
    };
    let highlights = highlight_ranges(q.highlight.as_deref())?;
    let width = match whole_number("width", q.width.as_deref())? {
        None => excerpt::DEFAULT_PAGE_WIDTH,
        Some(w) if (200..=2000).contains(&w) => w as u32,
        Some(w) => {
            return Err(ApiError::bad_request(format!(
                "width must be 200 to 2000 pixels, not {w}"
            )))
        }
    };
    let engine = st.engine.clone();
    let load = st.options.ingest.load.clone();
    let image = blocking(move || {
        let doc = engine
            .document(&id)?
            .ok_or_else(|| ApiError::document_not_found(&id))?;
        let req = excerpt::PageRequest::new(&doc, page, highlights, width, load.max_pdf_pages)
            .map_err(page_error)?;
        let bytes = read_source(doc.source.as_deref(), load.max_file_bytes)?;
        let name = doc.source.as_deref().unwrap_or(&id);
        excerpt::render_pdf_page(name, &bytes, &req, &load).map_err(page_error)
    })
    .await?;
    let counts: Vec<String> = image.boxes.iter().map(|b| b.len().to_string()).collect();
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "image/png".to_string()),
            (header::CACHE_CONTROL, "no-store".to_string()),
            (
                header::HeaderName::from_static(HIGHLIGHT_BOXES),
                counts.join(","),
            ),
        ],
        image.png,
    )
        .into_response())
}
