//! The route handlers. Each one parses its input, runs the engine on the blocking pool
//! and shapes the answer like the matching `excerpt` command's JSON output.

use std::collections::HashSet;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{Method, StatusCode, Uri};
use axum::Json;
use excerpt::{
    context_value, render, DocumentSummary, EngineError, IndexError, NoProgress, QuerySpec,
    RenderFormat,
};
use excerpt_ingest::{load_str, DocFormat, ParsedDocument};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::extract::{blocking, JsonBody};
use crate::{ApiError, AppState};

/// `GET /healthz`.
pub(crate) async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
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
pub(crate) async fn query(
    State(st): State<AppState>,
    JsonBody(mut body): JsonBody<Map<String, Value>>,
) -> Result<Json<Value>, ApiError> {
    let format = match take_string(&mut body, "format")? {
        None => RenderFormat::Json,
        Some(f) => f.parse::<RenderFormat>().map_err(ApiError::bad_request)?,
    };
    let instruction = take_string(&mut body, "instruction")?;
    let spec: QuerySpec = serde_json::from_value(Value::Object(body))
        .map_err(|e| ApiError::bad_request(format!("invalid query: {e}")))?;
    let req = spec.to_request()?;
    let engine = st.engine.clone();
    let (req, ctx) = blocking(move || {
        let ctx = engine.query(&req)?;
        Ok((req, ctx))
    })
    .await?;
    if format == RenderFormat::Json {
        return Ok(Json(context_value(&req.text, &ctx)));
    }
    let rendered = render(&req.text, &ctx, format, instruction);
    Ok(Json(json!({
        "query": req.text,
        "format": format.name(),
        "strategy": ctx.strategy,
        "budget": ctx.budget,
        "tokens": ctx.tokens,
        "context": rendered,
    })))
}

/// One document of `POST /v1/ingest`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InputDocument {
    id: String,
    #[serde(default)]
    title: Option<String>,
    text: String,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    format: Option<String>,
}

/// The body of `POST /v1/ingest`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct IngestBody {
    documents: Vec<InputDocument>,
}

/// Loads one posted document the way a file of its format is loaded; a given title
/// replaces the one found in the text, given metadata keys override front matter.
fn parse_document(
    d: InputDocument,
    warnings: &mut Vec<excerpt::Problem>,
) -> Result<ParsedDocument, ApiError> {
    excerpt::check_document_id(&d.id).map_err(ApiError::bad_request)?;
    let format = match d.format.as_deref() {
        None | Some("text") => DocFormat::Text,
        Some("markdown") => DocFormat::Markdown,
        Some("html") => DocFormat::Html,
        Some("pdf") => DocFormat::Pdf,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "document {:?}: unknown format {other:?}: expected text, markdown, html or pdf",
                d.id
            )))
        }
    };
    let loaded = if format == DocFormat::Pdf {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(d.text.trim())
            .map_err(|e| {
                ApiError::bad_request(format!(
                    "document {:?}: format \"pdf\" takes the PDF file base64-encoded in `text` ({e})",
                    d.id
                ))
            })?;
        excerpt_ingest::load_bytes(format, &d.id, &bytes)
    } else {
        load_str(format, &d.id, &d.text)
    }
    .map_err(|e| ApiError::bad_request(format!("document {:?}: {e}", d.id)))?;
    warnings.extend(loaded.warnings.into_iter().map(|reason| excerpt::Problem {
        path: d.id.clone(),
        reason,
    }));
    let mut docs = loaded.documents.into_iter();
    let (Some(mut doc), None) = (docs.next(), docs.next()) else {
        return Err(ApiError::internal(format!(
            "document {:?}: the loader did not produce exactly one document",
            d.id
        )));
    };
    if let Some(t) = d.title.filter(|t| !t.trim().is_empty()) {
        doc.title = t;
    }
    doc.metadata.extend(d.metadata);
    Ok(doc)
}

/// `POST /v1/ingest`: `{documents: [{id, title?, text, metadata?, format?}]}` with
/// `format` one of `text` (default), `markdown`, `html`, `pdf` (the file base64-encoded
/// in `text`). Every document is checked
/// first; one bad document refuses the whole request (400). Answers the report
/// `excerpt ingest --json` prints; when nothing at all could be ingested, 400.
pub(crate) async fn ingest(
    State(st): State<AppState>,
    JsonBody(body): JsonBody<IngestBody>,
) -> Result<Json<excerpt::IngestReport>, ApiError> {
    if body.documents.is_empty() {
        return Err(ApiError::bad_request("documents is empty"));
    }
    // Parsing (HTML above all) is CPU work: it runs on the blocking pool, never on the
    // async threads that answer /healthz and every other request.
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
            docs.push(parse_document(d, &mut warnings)?);
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

/// `GET /v1/documents`: the listing `excerpt docs --json` prints (an index not created
/// yet lists nothing).
pub(crate) async fn list_documents(
    State(st): State<AppState>,
) -> Result<Json<Vec<DocumentSummary>>, ApiError> {
    let engine = st.engine.clone();
    let list = blocking(move || match engine.documents() {
        Ok(l) => Ok(l),
        Err(EngineError::Index(IndexError::NotFound { .. })) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    })
    .await?;
    Ok(Json(list))
}

/// One section of `GET /v1/documents/{id}`, with character offsets.
#[derive(Debug, Serialize)]
struct SectionView {
    heading: String,
    level: u8,
    path: String,
    /// Start of the section (its heading), in characters.
    start: usize,
    /// End of the section with its subsections, in characters (exclusive).
    end: usize,
    /// Position of the enclosing section in `sections`.
    parent: Option<u32>,
}

/// The answer of `GET /v1/documents/{id}`.
#[derive(Debug, Serialize)]
struct DocumentView {
    #[serde(flatten)]
    summary: DocumentSummary,
    sections: Vec<SectionView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
}

/// Query string of `GET /v1/documents/{id}`.
#[derive(Debug, Deserialize)]
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
pub(crate) async fn get_document(
    State(st): State<AppState>,
    id: Result<Path<String>, PathRejection>,
    q: Result<Query<DocumentQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let id = path_id(id)?;
    let with_text = q
        .map(|Query(q)| q.text)
        .map_err(|e| ApiError::bad_request(e.body_text()))?;
    let engine = st.engine.clone();
    blocking(move || {
        let snap = engine.snapshot()?;
        let d = snap
            .doc_index(&id)
            .and_then(|i| snap.doc(i))
            .ok_or_else(|| ApiError::document_not_found(&id))?;
        let view = DocumentView {
            summary: DocumentSummary::of(d),
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
            text: with_text.then(|| d.text.clone()),
        };
        serde_json::to_value(view)
            .map(Json)
            .map_err(|e| ApiError::internal(e.to_string()))
    })
    .await
}

/// `DELETE /v1/documents/{id}`: `{removed: [id], generation, documents}`; 404 when the
/// id is not in the index.
pub(crate) async fn delete_document(
    State(st): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let id = path_id(id)?;
    let guard = st.writer.clone().lock_owned().await;
    let engine = st.engine.clone();
    blocking(move || {
        let _guard = guard;
        if engine.snapshot()?.doc_index(&id).is_none() {
            return Err(ApiError::document_not_found(&id));
        }
        let removed = engine.remove(std::slice::from_ref(&id))?;
        if removed.is_empty() {
            return Err(ApiError::document_not_found(&id));
        }
        let snap = engine.snapshot()?;
        Ok(Json(json!({
            "removed": removed,
            "generation": snap.manifest().generation,
            "documents": snap.documents().len(),
        })))
    })
    .await
}

/// `GET /v1/stats`: what `excerpt stats --json` prints.
pub(crate) async fn stats(
    State(st): State<AppState>,
) -> Result<Json<excerpt::IndexStats>, ApiError> {
    let engine = st.engine.clone();
    blocking(move || Ok(engine.stats()?)).await.map(Json)
}
