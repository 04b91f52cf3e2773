//! The tools: their arguments and answers (whose doc comments are the JSON schema
//! descriptions a model reads), and the server that routes calls to them.

use std::sync::Arc;

use excerpt::{
    render, Engine, EngineError, FilterSpec, NoProgress, PostedDocument, PostedFormat, QuerySpec,
    RenderFormat,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Extensions,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, ErrorData, Json, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::options::{McpOptions, WritesAllowed};

/// Documents `list_documents` returns when no limit is given.
pub const DEFAULT_LIST_LIMIT: usize = 50;
/// The most documents one `list_documents` call returns.
pub const MAX_LIST_LIMIT: usize = 500;

/// What the server tells the model about itself when a session starts.
const INSTRUCTIONS: &str = "Excerpt searches a local document index and returns context \
that reads like the source: contiguous passages in reading order, each with its document \
id and exact character offsets. Use `search` first to find passages that answer a \
question; cite pieces by doc_id and start/end. Use `get_document` to read more around a \
piece (pass start/end to read a range) or a whole document, and `list_documents` to see \
which documents exist.";

/// An optional whole number that may also come as a string of digits: some clients
/// (and models) send every argument as a string.
fn lenient_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Count {
        Number(usize),
        Text(String),
    }
    match Option::<Count>::deserialize(d)? {
        None => Ok(None),
        Some(Count::Number(n)) => Ok(Some(n)),
        Some(Count::Text(t)) => {
            t.trim().parse().map(Some).map_err(|_| {
                serde::de::Error::custom(format!("expected a whole number, got {t:?}"))
            })
        }
    }
}

/// Arguments of `search`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// What to find context for: a natural-language question or keywords.
    pub query: String,
    /// How many LLM tokens of context to return at most (default 2000; 1 to 100000).
    /// Smaller budgets return fewer, more focused passages.
    #[serde(default, deserialize_with = "lenient_count")]
    pub budget: Option<usize>,
    /// How passages are assembled. "auto" (default) picks per question; "rse" returns
    /// the best contiguous segments; "topk" the best chunks; "section" whole sections;
    /// "adjacent" chunks with their neighbours; "window" sentences around hits.
    /// Parameters may follow a colon, e.g. "rse:precision".
    #[serde(default)]
    pub strategy: Option<String>,
    /// First-stage retrieval: "hybrid" (default: meaning and keywords), "dense"
    /// (meaning only) or "bm25" (keywords only, best for exact names and codes).
    #[serde(default)]
    pub mode: Option<String>,
    /// Only search these document ids.
    #[serde(default)]
    pub doc_ids: Vec<String>,
    /// Only search documents whose id starts with one of these prefixes (ids are
    /// usually file paths, e.g. "guide/").
    #[serde(default)]
    pub prefixes: Vec<String>,
    /// Metadata conditions that must all hold, e.g. "team=infra", "year>=2020",
    /// "lang=en|fr", "year=2019..2021".
    #[serde(default, rename = "where")]
    pub conditions: Vec<String>,
}

/// One passage of a search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchPiece {
    /// The piece's position in this result, from 1.
    pub n: usize,
    /// The document the passage comes from (pass it to get_document).
    pub doc_id: String,
    /// The document's title.
    pub title: String,
    /// Heading path of the section the passage starts in, e.g. "Install > Offline"
    /// ("" outside any section).
    pub section: String,
    /// Character offset of the passage's start in the document text.
    pub start: usize,
    /// Character offset of the passage's end (exclusive).
    pub end: usize,
    /// The passage: exactly the document's characters start..end.
    pub text: String,
    /// Relevance to the query, 0 to 1.
    pub relevance: f32,
}

/// The answer of `search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchResult {
    /// The query searched for.
    pub query: String,
    /// The strategy that assembled the context (auto names its choice).
    pub strategy: String,
    /// The token budget used.
    pub budget: usize,
    /// LLM tokens of the pieces' text.
    pub tokens: usize,
    /// The passages, in the order they should be read (empty: nothing relevant found).
    pub pieces: Vec<SearchPiece>,
    /// The same context rendered as text for a prompt: pieces grouped by document, each
    /// headed by title, section and relevance.
    pub context: String,
    /// Remarks of the strategy (e.g. why auto chose it).
    pub notes: Vec<String>,
}

/// Arguments of `get_document`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetDocumentParams {
    /// The document id (from search results or list_documents).
    pub id: String,
    /// First character to return (default 0). Offsets count Unicode characters, as
    /// search pieces' start/end do.
    #[serde(default, deserialize_with = "lenient_count")]
    pub start: Option<usize>,
    /// Character offset to stop at, exclusive (default: the end of the document).
    #[serde(default, deserialize_with = "lenient_count")]
    pub end: Option<usize>,
}

/// A section of a document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SectionEntry {
    /// Heading path, e.g. "Install > Offline".
    pub path: String,
    /// Character offset of the section's heading.
    pub start: usize,
    /// Character offset of the end of the section with its subsections (exclusive).
    pub end: usize,
}

/// The answer of `get_document`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DocumentText {
    /// The document id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Characters in the whole document.
    pub chars: usize,
    /// Character offset of the returned text's start.
    pub start: usize,
    /// Character offset of the returned text's end (exclusive).
    pub end: usize,
    /// Exactly the document's characters start..end.
    pub text: String,
    /// The document's sections that overlap start..end, in reading order.
    pub sections: Vec<SectionEntry>,
}

/// Arguments of `list_documents`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDocumentsParams {
    /// Only documents whose id starts with this (e.g. "guide/").
    #[serde(default)]
    pub prefix: Option<String>,
    /// Documents to skip, for paging (default 0; use the previous answer's
    /// next_offset).
    #[serde(default, deserialize_with = "lenient_count")]
    pub offset: Option<usize>,
    /// Documents to return (default 50, at most 500).
    #[serde(default, deserialize_with = "lenient_count")]
    pub limit: Option<usize>,
}

/// One document of a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DocumentEntry {
    /// The document id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Characters of text.
    pub chars: usize,
    /// Sections (headings).
    pub sections: usize,
    /// Free-form metadata (front matter, JSONL metadata).
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// The answer of `list_documents`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DocumentList {
    /// Documents matching the prefix in all.
    pub total: usize,
    /// The offset this page starts at.
    pub offset: usize,
    /// The documents of this page, in id order.
    pub documents: Vec<DocumentEntry>,
    /// The offset of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

/// Arguments of `ingest`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IngestParams {
    /// The document id, e.g. "notes/meeting-2024-05.md". An existing document with
    /// this id is replaced.
    pub id: String,
    /// The document's content.
    pub text: String,
    /// How to read text: "markdown" (headings become sections), "html", "text"
    /// (default), or "pdf" and "docx" with the file base64-encoded in text.
    #[serde(default)]
    pub format: Option<String>,
    /// Title (default: the first heading, or the id).
    #[serde(default)]
    pub title: Option<String>,
}

/// The answer of `ingest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IngestResult {
    /// The document id.
    pub id: String,
    /// "added", "updated" or "unchanged".
    pub status: String,
    /// Chunks embedded for it.
    pub chunks_embedded: usize,
    /// Documents in the index now.
    pub documents: usize,
    /// Problems that did not stop the ingest (e.g. unclosed front matter).
    pub warnings: Vec<String>,
}

/// The MCP server over one [`Engine`]: routes tool calls to the engine.
#[derive(Clone)]
pub struct ExcerptMcp {
    engine: Arc<Engine>,
    options: Arc<McpOptions>,
    /// One ingest at a time (the index has one writer).
    writer: Arc<tokio::sync::Mutex<()>>,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for ExcerptMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExcerptMcp")
            .field("engine", &self.engine)
            .field("allow_writes", &self.options.allow_writes)
            .finish_non_exhaustive()
    }
}

/// What a model is told when a call fails: the engine's message, with what to do when
/// the index does not exist yet.
fn tool_error(e: EngineError) -> String {
    if e.is_no_index() {
        format!("{e}: the index is empty; nothing has been ingested yet")
    } else {
        e.to_string()
    }
}

/// Runs engine work on the blocking pool; a panic becomes a tool error.
async fn blocking<T, F>(f: F) -> Result<T, String>
where
    F: FnOnce() -> Result<T, String> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("internal error: the tool's worker failed: {e}"))?
}

// Tools answer `Result<Json<T>, String>`, spelled out: the macro reads the return type to
// give the tool its output schema. An `Err` is a tool error (`isError: true`) whose text
// the model reads.
#[tool_router]
impl ExcerptMcp {
    /// A server over `engine`; `ingest` is offered only when `options.allow_writes`.
    pub fn new(engine: Arc<Engine>, options: McpOptions) -> Self {
        let mut tool_router = Self::tool_router();
        if !options.allow_writes {
            tool_router.remove_route("ingest");
        }
        Self {
            engine,
            options: Arc::new(options),
            writer: Arc::new(tokio::sync::Mutex::new(())),
            tool_router,
        }
    }

    /// A server over `engine` whose ingests take `writer`, the lock every other writer
    /// of the process takes too (the HTTP server's, for MCP under `excerpt serve`).
    pub fn with_writer(
        engine: Arc<Engine>,
        options: McpOptions,
        writer: Arc<tokio::sync::Mutex<()>>,
    ) -> Self {
        let mut server = Self::new(engine, options);
        server.writer = writer;
        server
    }

    /// Whether the message in `extensions` may write: writes must be allowed, and when
    /// it came over HTTP, its request must not be marked [`WritesAllowed`]`(false)`.
    fn writes_allowed(&self, extensions: &Extensions) -> bool {
        self.options.allow_writes && writes_marked_allowed(extensions)
    }

    /// The names of the tools offered, in the order they are listed.
    pub fn tool_names(&self) -> Vec<String> {
        self.tool_router
            .list_all()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// `search`.
    #[tool(
        name = "search",
        description = "Search the document index for passages relevant to a question. Returns \
numbered pieces (doc_id, title, section, exact start/end character offsets, text, relevance) \
and the same context rendered as text. Use this first for any question about the indexed \
documents; cite answers by doc_id and offsets. Narrow with doc_ids, prefixes or `where` \
metadata conditions; raise budget for broad questions.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn search(
        &self,
        Parameters(p): Parameters<SearchParams>,
    ) -> Result<Json<SearchResult>, String> {
        let spec = QuerySpec {
            query: p.query,
            mode: p.mode,
            strategy: p.strategy,
            budget: p.budget,
            filter: FilterSpec {
                doc_ids: p.doc_ids,
                prefixes: p.prefixes,
                conditions: p.conditions,
            },
            ..QuerySpec::default()
        };
        let req = spec.to_request().map_err(tool_error)?;
        let engine = self.engine.clone();
        let result = blocking(move || {
            let ctx = engine.query(&req).map_err(tool_error)?;
            let context = render(&req.text, &ctx, RenderFormat::Text, None);
            Ok(SearchResult {
                query: req.text,
                strategy: ctx.strategy,
                budget: ctx.budget,
                tokens: ctx.tokens,
                pieces: ctx
                    .pieces
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| SearchPiece {
                        n: i + 1,
                        doc_id: p.doc_id,
                        title: p.title,
                        section: p.section,
                        start: p.start,
                        end: p.end,
                        text: p.text,
                        relevance: p.relevance,
                    })
                    .collect(),
                context,
                notes: ctx.notes,
            })
        })
        .await?;
        Ok(Json(result))
    }

    /// `get_document`.
    #[tool(
        name = "get_document",
        description = "Read the exact text of one indexed document, whole or a character range \
(start/end, as in search pieces), with its section headings and their offsets. Use it to read \
around a search piece (e.g. start-1000..end+1000) or to read a short document in full.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn get_document(
        &self,
        Parameters(p): Parameters<GetDocumentParams>,
    ) -> Result<Json<DocumentText>, String> {
        let engine = self.engine.clone();
        let doc = blocking(move || {
            let d = engine
                .document(&p.id)
                .map_err(tool_error)?
                .ok_or_else(|| {
                    format!(
                        "no document with id {:?}; list_documents shows the ids",
                        p.id
                    )
                })?;
            let chars = d.text.chars().count();
            let start = p.start.unwrap_or(0);
            let end = p.end.unwrap_or(chars);
            if start > end || end > chars {
                return Err(format!(
                    "the range {start}..{end} is not within the document {:?}, which has {chars} characters",
                    p.id
                ));
            }
            let text: String = d.text.chars().skip(start).take(end - start).collect();
            let sections = d
                .sections
                .iter()
                .filter(|s| s.range.char_start < end.max(start + 1) && s.range.char_end > start)
                .map(|s| SectionEntry {
                    path: s.path_string(),
                    start: s.range.char_start,
                    end: s.range.char_end,
                })
                .collect();
            Ok(DocumentText {
                id: d.id.clone(),
                title: d.title.clone(),
                chars,
                start,
                end,
                text,
                sections,
            })
        })
        .await?;
        Ok(Json(doc))
    }

    /// `list_documents`.
    #[tool(
        name = "list_documents",
        description = "List the indexed documents (id, title, size, metadata) in id order, \
optionally only ids starting with a prefix, a page at a time (offset/limit; the answer's \
next_offset gives the next page). Use it to discover what the index holds, not to find \
answers: use search for that.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn list_documents(
        &self,
        Parameters(p): Parameters<ListDocumentsParams>,
    ) -> Result<Json<DocumentList>, String> {
        let limit = p.limit.unwrap_or(DEFAULT_LIST_LIMIT);
        if limit == 0 || limit > MAX_LIST_LIMIT {
            return Err(format!(
                "limit must be between 1 and {MAX_LIST_LIMIT}, got {limit}"
            ));
        }
        let offset = p.offset.unwrap_or(0);
        let prefix = p.prefix.unwrap_or_default();
        let engine = self.engine.clone();
        let list = blocking(move || {
            let (total, page) = match engine.documents_page(&prefix, offset, limit) {
                Ok(p) => p,
                // No index yet: nothing to list.
                Err(e) if e.is_no_index() => {
                    return Ok(DocumentList {
                        total: 0,
                        offset,
                        documents: Vec::new(),
                        next_offset: None,
                    })
                }
                Err(e) => return Err(tool_error(e)),
            };
            let documents: Vec<DocumentEntry> = page
                .into_iter()
                .map(|d| DocumentEntry {
                    id: d.id,
                    title: d.title,
                    chars: d.chars,
                    sections: d.sections,
                    metadata: d.metadata,
                })
                .collect();
            let next = offset.saturating_add(documents.len());
            Ok(DocumentList {
                total,
                offset,
                next_offset: (next < total).then_some(next),
                documents,
            })
        })
        .await?;
        Ok(Json(list))
    }

    /// `ingest` (listed only when writes are allowed).
    #[tool(
        name = "ingest",
        description = "Add one document to the index, or replace the document with the same id: \
it is chunked, embedded and committed, and searchable as soon as this returns. Give markdown \
as format \"markdown\" so its headings become sections.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub async fn ingest(
        &self,
        Parameters(p): Parameters<IngestParams>,
    ) -> Result<Json<IngestResult>, String> {
        if !self.options.allow_writes {
            return Err("this server does not allow writes".into());
        }
        let format = p.format.as_deref().map(str::parse).transpose()?;
        // PDFium parses hostile PDFs with the whole memory of the process that runs it:
        // a PDF is read only in a worker process under limits, as `excerpt ingest` and
        // `excerpt serve` read them.
        if format == Some(PostedFormat::Pdf) && self.options.ingest.load.pdf_worker.is_none() {
            return Err(NO_PDF_WORKER.into());
        }
        let posted = PostedDocument {
            id: p.id.clone(),
            title: p.title,
            text: p.text,
            metadata: Default::default(),
            format,
        };
        let guard = self.writer.clone().lock_owned().await;
        let engine = self.engine.clone();
        let options = self.options.clone();
        let result = blocking(move || {
            let _guard = guard;
            let (doc, mut warnings) = posted.load(&options.ingest.load).map_err(tool_error)?;
            let report = engine
                .ingest_documents(vec![doc], &options.ingest, &NoProgress)
                .map_err(tool_error)?;
            if let Some(f) = report.failed.first() {
                return Err(format!(
                    "document {:?} was not ingested: {}",
                    p.id, f.reason
                ));
            }
            warnings.extend(report.warnings.iter().map(|w| w.reason.clone()));
            let status = if report.added > 0 {
                "added"
            } else if report.updated > 0 {
                "updated"
            } else {
                "unchanged"
            };
            Ok(IngestResult {
                id: p.id,
                status: status.into(),
                chunks_embedded: report.chunks_embedded,
                documents: report.documents,
                warnings,
            })
        })
        .await?;
        Ok(Json(result))
    }
}

/// Whether the HTTP request that carried a message (if any) is not marked
/// [`WritesAllowed`]`(false)`.
#[cfg(feature = "http")]
fn writes_marked_allowed(extensions: &Extensions) -> bool {
    extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<WritesAllowed>())
        .is_none_or(|w| w.0)
}

/// Without HTTP, no message carries a mark.
#[cfg(not(feature = "http"))]
fn writes_marked_allowed(_: &Extensions) -> bool {
    let _ = WritesAllowed(true);
    true
}

/// What a model is told when it posts a PDF to a server that has no PDF worker.
const NO_PDF_WORKER: &str = "ingest refused the PDF: this server reads PDFs only in a \
worker process with memory and time limits, and none is configured (`excerpt mcp` and \
`excerpt serve` configure one); post its text as format \"text\" or \"markdown\"";

/// What a model is told when it calls `ingest` without the right to write.
const NO_WRITES: &str = "ingest is not available: this connection may not write to the \
index (over HTTP, send the server's token as `Authorization: Bearer TOKEN`)";

#[tool_handler(router = self.tool_router)]
impl ServerHandler for ExcerptMcp {
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.tool_router.list_all();
        if !self.writes_allowed(&context.extensions) {
            tools.retain(|t| t.name != "ingest");
        }
        // The list depends on the request's rights, so no cache hints.
        Ok(ListToolsResult {
            result_type: Some(rmcp::model::ResultType::COMPLETE),
            tools,
            meta: None,
            next_cursor: None,
            ttl_ms: None,
            cache_scope: None,
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == "ingest" && !self.writes_allowed(&context.extensions) {
            return Ok(CallToolResult::error(vec![ContentBlock::text(NO_WRITES)]).into());
        }
        let tcc = ToolCallContext::new(self, request, context);
        self.tool_router.call(tcc).await
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("excerpt", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_may_come_as_strings_of_digits() {
        let p: SearchParams =
            serde_json::from_value(serde_json::json!({"query": "q", "budget": "300"})).unwrap();
        assert_eq!(p.budget, Some(300));
        let p: GetDocumentParams =
            serde_json::from_value(serde_json::json!({"id": "a", "start": 5, "end": null}))
                .unwrap();
        assert_eq!((p.start, p.end), (Some(5), None));
        let e = serde_json::from_value::<ListDocumentsParams>(serde_json::json!({"limit": "ten"}))
            .unwrap_err();
        assert!(e.to_string().contains("ten"), "{e}");
        let e = serde_json::from_value::<SearchParams>(serde_json::json!({"query": "q", "k": 1}))
            .unwrap_err();
        assert!(e.to_string().contains('k'), "{e}");
    }
}
