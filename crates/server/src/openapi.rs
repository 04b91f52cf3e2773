//! The API's OpenAPI 3.1 document, generated from the handlers: each handler's
//! `#[utoipa::path]` attribute names its route, body, parameters and answers, and the
//! router is built from those same attributes ([`routes`], through `utoipa-axum`), so
//! every route served is in the document and every path of the document is served.
//!
//! The types the server reads and answers derive `utoipa::ToSchema`: the server's own
//! beside their handlers, the engine's and the context crate's behind their optional
//! `openapi` feature, which this crate turns on. Two request bodies are the engine's
//! [`QuerySpec`](excerpt::QuerySpec) plus a field or two parsed by the handler
//! ([`bodies`]); their schemas are `QuerySpec`'s with those properties added.
//!
//! `GET /openapi.json` serves the document; `docs/openapi.json` is a copy that a test
//! regenerates and compares.

pub(crate) mod bodies;

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;
use utoipa::openapi::path::Operation;
use utoipa::openapi::response::{Response, ResponseBuilder};

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::ErrorBody;
use crate::state::AppState;
use crate::{ask, handlers, ui};

/// The root of the document: what the handlers' attributes do not say.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Excerpt HTTP API",
        description = "Context for retrieval-augmented generation: exact, contiguous slices \
of documents with their ids and character offsets, assembled within a token budget; \
answers with checked citations; document ingest and inspection. Served by `excerpt serve`.",
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0"),
    ),
    components(schemas(ErrorBody)),
    tags(
        (name = "query", description = "Context and answers for a query."),
        (name = "documents", description = "Ingest, list, read and remove documents."),
        (name = "mcp", description = "The Model Context Protocol, for agents."),
        (name = "server", description = "The server itself."),
        (name = "inspector", description = "The web page of `excerpt serve` and its files."),
    ),
)]
struct ApiDoc;

/// `POST /mcp`: documented here, served by rmcp's streamable HTTP service
/// ([`excerpt_mcp::streamable_http_service`], mounted by [`crate::router`]).
#[utoipa::path(
    post,
    path = "/mcp",
    tag = "mcp",
    summary = "Model Context Protocol (streamable HTTP)",
    description = "The MCP server of `excerpt mcp` over HTTP, stateless: each POST carries \
one JSON-RPC 2.0 message (`initialize`, `tools/list`, `tools/call`, ...) and is answered \
with JSON. Tools: `search`, `get_document`, `list_documents`, and `ingest` for requests \
that may write (no token on the server, or the server's token sent). With a token and \
without public reads, every request needs the token. The `Accept` header must list \
`application/json` and `text/event-stream`.",
    request_body(content = Object, description = "One JSON-RPC 2.0 message."),
    responses(
        (status = 200, description = "The JSON-RPC response.", body = Object),
        (status = 202, description = "A notification or a response was accepted."),
        (status = 400, description = "Not a JSON-RPC message the server can take.", body = String, content_type = "text/plain"),
        (status = 404, description = "An unknown session.", body = String, content_type = "text/plain"),
        (status = 406, description = "The `Accept` header does not list both media types."),
        (status = 413, description = "The body is over the size limit.", body = String, content_type = "text/plain"),
        (status = 415, description = "The body is not sent as JSON.", body = String, content_type = "text/plain"),
    ),
)]
#[allow(dead_code)] // documentation only
fn mcp() {}

/// The paths served by services rather than handlers.
#[derive(OpenApi)]
#[openapi(paths(mcp))]
struct ServiceDoc;

/// `GET /openapi.json`.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "server",
    summary = "This document",
    description = "The OpenAPI 3.1 document of this API; needs no token.",
    responses((status = 200, description = "The document.", body = Object)),
)]
pub(crate) async fn openapi_json() -> impl IntoResponse {
    static JSON: OnceLock<String> = OnceLock::new();
    (
        [(header::CONTENT_TYPE, "application/json")],
        JSON.get_or_init(document_json).as_str(),
    )
}

/// The routes with their documentation: those that pass only the Host/Origin guard
/// (`/healthz`, `/openapi.json`, the inspector's page and files), the API behind every guard, and `/metrics`, behind
/// the Host/Origin and token guards but not the concurrency limit.
pub(crate) fn routes() -> (
    OpenApiRouter<AppState>,
    OpenApiRouter<AppState>,
    OpenApiRouter<AppState>,
) {
    let open = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(handlers::healthz))
        .routes(routes!(openapi_json))
        .routes(routes!(ui::index))
        .routes(routes!(ui::asset));
    let api = OpenApiRouter::with_openapi(utoipa::openapi::OpenApi::default())
        .routes(routes!(handlers::query))
        .routes(routes!(ask::ask))
        .routes(routes!(handlers::ingest))
        .routes(routes!(handlers::list_documents))
        .routes(routes!(handlers::get_document, handlers::delete_document))
        .routes(routes!(handlers::page_image))
        .routes(routes!(handlers::stats))
        .routes(routes!(ui::report));
    let scraped = OpenApiRouter::with_openapi(utoipa::openapi::OpenApi::default())
        .routes(routes!(handlers::metrics));
    (open, api, scraped)
}

/// Answers the guards give, on every operation behind them.
const GUARD_ANSWERS: &[(&str, &str)] = &[
    (
        "401",
        "The server has a token and the request needs it (writes, answers, and reads \
unless the server allows public reads): send `Authorization: Bearer TOKEN`, with the \
write token, or for reads the read token.",
    ),
    ("500", "The server failed; the message says how."),
    (
        "503",
        "The server is busy (`overloaded`, with `Retry-After`), the request took too long \
(`timeout`), or an endpoint the engine depends on (embeddings, reranking, chat) failed \
(`unavailable`).",
    ),
];

/// An error answer with `description`.
fn error_response(description: &str) -> RefOr<Response> {
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build(),
    )
}

/// Which guards an operation passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Guards {
    /// The Host/Origin check only.
    Host,
    /// Host/Origin and the token.
    HostAndToken,
    /// Every guard, the concurrency limit too.
    All,
}

/// Adds the answers of the guards to `op`, without replacing one the handler documents.
fn add_guard_answers(op: &mut Operation, guards: Guards) {
    let answers = &mut op.responses.responses;
    answers.entry("403".into()).or_insert_with(|| {
        error_response(if guards == Guards::Host {
            "The `Host` header does not name this server, or the `Origin` is a foreign web \
page."
        } else {
            "The `Host` header does not name this server, or the `Origin` is a foreign web \
page, or a write was sent with the read token (`read_only_token`)."
        })
    });
    if guards != Guards::Host {
        let answered: &[(&str, &str)] = if guards == Guards::All {
            GUARD_ANSWERS
        } else {
            &GUARD_ANSWERS[..2]
        };
        for (status, description) in answered {
            answers
                .entry((*status).into())
                .or_insert_with(|| error_response(description));
        }
        // With a token configured, the token; without one, nothing.
        op.security = Some(vec![
            SecurityRequirement::default(),
            SecurityRequirement::new("bearer", Vec::<String>::new()),
        ]);
    } else {
        op.security = Some(vec![SecurityRequirement::default()]);
    }
}

/// The whole document.
pub fn document() -> utoipa::openapi::OpenApi {
    let (open, api, scraped) = routes();
    let (_, mut doc) = open.split_for_parts();
    let (_, mut api_doc) = api.split_for_parts();
    let (_, mut scraped_doc) = scraped.split_for_parts();
    api_doc.merge(ServiceDoc::openapi());
    for (d, guards) in [
        (&mut api_doc, Guards::All),
        (&mut scraped_doc, Guards::HostAndToken),
        (&mut doc, Guards::Host),
    ] {
        for item in d.paths.paths.values_mut() {
            for op in operations(item) {
                add_guard_answers(op, guards);
            }
        }
    }
    doc.merge(api_doc);
    doc.merge(scraped_doc);
    // axum spells a parameter that takes the rest of the path `{*id}`; OpenAPI `{id}`.
    let paths = std::mem::take(&mut doc.paths.paths);
    doc.paths.paths = paths
        .into_iter()
        .map(|(path, item)| (path.replace("{*", "{"), item))
        .collect();
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "bearer",
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(
                    "The server's write token (`excerpt serve --token`), when it has one, \
which allows everything; or its read token (`--read-token`), which allows reads only \
(query, documents, stats, metrics, the evaluation report; a write sent with it gets 403).",
                ))
                .build(),
        ),
    );
    doc
}

/// The operations of a path item.
fn operations(item: &mut utoipa::openapi::PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        item.get.as_mut(),
        item.put.as_mut(),
        item.post.as_mut(),
        item.delete.as_mut(),
        item.options.as_mut(),
        item.head.as_mut(),
        item.patch.as_mut(),
        item.trace.as_mut(),
    ]
    .into_iter()
    .flatten()
}

/// The document as pretty-printed JSON with a final newline: the text of
/// `docs/openapi.json`.
pub fn document_json() -> String {
    let mut s = document()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"the document does not serialize: {e}\"}}"));
    s.push('\n');
    s
}
