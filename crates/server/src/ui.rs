//! The inspector: a page at `/` and its assets at `/ui/{file}`, compiled into the binary
//! (`include_str!` of `crates/server/ui/`), so it works offline and needs no build step.
//!
//! The page is a front end like the CLI: plain ES modules and one style sheet, no library,
//! calling the same JSON API as any client, from the page's own origin only. It holds no
//! data itself, so it passes only the Host/Origin guard, like `/healthz`; every answer
//! with data comes from the API behind the token guard, and the page asks for the token
//! when the API answers 401.
//!
//! Every answer here carries a Content-Security-Policy ([`CSP`]) that allows scripts,
//! styles and requests from this origin only and no inline script or style, so that
//! text from the index can never run even if it were parsed as markup (the page inserts
//! it as text: `textContent`, never `innerHTML`).
//!
//! `GET /v1/report` serves the `excerpt eval --html` report the server was started
//! with (`excerpt serve --report FILE`). It is data, so it sits behind the token guard
//! like the other reads, and it has a policy of its own ([`REPORT_CSP`]): no script at
//! all, no connection, images only from `data:` URIs, and a sandbox, so that even markup
//! that got into the report could neither run nor reach the API.

use axum::extract::{Path, State};
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// The Content-Security-Policy of the page and its assets: nothing but this origin's
/// scripts, styles, images and API; no inline script or style, no `eval`, no frames, no
/// forms sent elsewhere.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
frame-ancestors 'none'";

/// The Content-Security-Policy of the evaluation report (`GET /v1/report`): its own
/// inline style sheet and `data:` images (the chart), nothing else. No script runs
/// (`script-src` falls back to `'none'`), nothing is fetched or sent, and `sandbox`
/// gives the page an opaque origin, so it could not read this server's API even if a
/// script got in.
pub(crate) const REPORT_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; \
img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; sandbox";

/// One file of the page.
struct Asset {
    /// Its name under `/ui/`.
    name: &'static str,
    /// Its `Content-Type`.
    content_type: &'static str,
    /// Its bytes.
    body: &'static str,
}

/// The page itself, served at `/`.
const INDEX: &str = include_str!("../ui/index.html");

/// The assets, served at `/ui/{name}`.
const ASSETS: &[Asset] = &[
    Asset {
        name: "app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../ui/app.js"),
    },
    Asset {
        name: "api.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../ui/api.js"),
    },
    Asset {
        name: "dom.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../ui/dom.js"),
    },
    Asset {
        name: "run.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../ui/run.js"),
    },
    Asset {
        name: "doc.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../ui/doc.js"),
    },
    Asset {
        name: "docs.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../ui/docs.js"),
    },
    Asset {
        name: "style.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../ui/style.css"),
    },
    Asset {
        name: "icon.svg",
        content_type: "image/svg+xml",
        body: include_str!("../ui/icon.svg"),
    },
];

/// The security headers of a page, with its type and policy, and its caching.
fn headers(
    content_type: &'static str,
    csp: &'static str,
    cache: &'static str,
) -> [(HeaderName, HeaderValue); 7] {
    [
        (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(csp),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ),
        (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
    ]
}

/// An answer of the page: the body with its type and the security headers.
fn file(content_type: &'static str, body: &'static str) -> Response {
    // The assets change with the binary: the browser asks again each time (a
    // conditional request would save little on files this small).
    let h = headers(content_type, CSP, "no-cache");
    (StatusCode::OK, h, body).into_response()
}

/// `GET /`: the inspector.
#[utoipa::path(
    get,
    path = "/",
    tag = "inspector",
    summary = "The inspector (a web page)",
    description = "A page for looking at contexts: a query's pieces, the text the LLM \
receives, each piece highlighted in its document, two strategies or budgets side by side, \
and the documents. `/?q=...&strategy=...&budget=...` opens with that query run \
(`b_strategy`, `b_budget` compare; `mode`, `doc_id`, `prefix`, `where` filter; `open=a3` \
opens piece A3 in its document). The page \
holds no data and needs no token; it calls this API, which does, and asks for the token.",
    responses((status = 200, description = "The page.", body = String, content_type = "text/html")),
    security(()),
)]
pub(crate) async fn index() -> Response {
    file("text/html; charset=utf-8", INDEX)
}

/// `GET /ui/{file}`: a script, the style sheet or the icon of the page.
#[utoipa::path(
    get,
    path = "/ui/{file}",
    tag = "inspector",
    summary = "A file of the inspector",
    description = "The page's ES modules, style sheet and icon, built into the server.",
    params(("file" = String, Path, description = "The file name, e.g. `app.js`.")),
    responses(
        (status = 200, description = "The file.", body = String),
        (status = 404, description = "No such file.", body = crate::error::ErrorBody),
    ),
    security(()),
)]
pub(crate) async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|a| a.name == name) {
        Some(a) => file(a.content_type, a.body),
        None => ApiError::new(
            StatusCode::NOT_FOUND,
            "asset_not_found",
            format!("the inspector has no file {name:?}"),
        )
        .into_response(),
    }
}

/// `GET /v1/report`: the evaluation report of `excerpt serve --report`.
#[utoipa::path(
    get,
    path = "/v1/report",
    tag = "inspector",
    summary = "The evaluation report (a web page)",
    description = "The self-contained page `excerpt eval --html` wrote, as the server read \
it at startup (`excerpt serve --report FILE`): per question the gold evidence and the \
returned pieces highlighted, the figures, the chart and the misses. A read: with a token \
configured it needs the read or write token unless reads are public. Its \
Content-Security-Policy allows its inline style and `data:` images only, no script and no \
connection, in a sandbox. The inspector links to it when it is configured.",
    responses(
        (status = 200, description = "The report.", body = String, content_type = "text/html"),
        (status = 404, description = "The server was started without a report (`no_report`).", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn report(State(state): State<AppState>) -> Response {
    match &state.options.report {
        // Data behind a token: never kept by the browser or a proxy.
        Some(html) => {
            let h = headers("text/html; charset=utf-8", REPORT_CSP, "no-store");
            (StatusCode::OK, h, html.clone()).into_response()
        }
        None => ApiError::new(
            StatusCode::NOT_FOUND,
            "no_report",
            "this server has no evaluation report: start it with `excerpt serve --report FILE` (a page `excerpt eval --html FILE` wrote)",
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file the page loads is served, and nothing in it is inline.
    #[test]
    fn the_page_loads_only_served_files() {
        let mut text = INDEX.to_string();
        for a in ASSETS {
            text.push_str(a.body);
        }
        for a in ASSETS {
            assert!(
                text.contains(&format!("/ui/{}", a.name))
                    || text.contains(&format!("./{}", a.name)),
                "{} is served but nothing loads it",
                a.name
            );
        }
        for needle in ["/ui/", "./"] {
            for (at, _) in text.match_indices(needle) {
                let rest = &text[at + needle.len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
                    .collect();
                if name.ends_with(".js") || name.ends_with(".css") || name.ends_with(".svg") {
                    assert!(
                        ASSETS.iter().any(|a| a.name == name),
                        "{name} is loaded but not served"
                    );
                }
            }
        }
        // The CSP forbids inline script and style; the page has none.
        assert!(!INDEX.contains("<style"), "inline style");
        assert!(!INDEX.contains(" style="), "inline style attribute");
        let handler = INDEX.match_indices(" on").any(|(at, _)| {
            let rest = &INDEX[at + 3..];
            let name: String = rest.chars().take_while(char::is_ascii_lowercase).collect();
            !name.is_empty() && rest[name.len()..].starts_with('=')
        });
        assert!(!handler, "inline event handler");
        for script in INDEX.split("<script").skip(1) {
            assert!(script.contains(" src="), "inline script");
        }
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            assert!(!a.body.contains("innerHTML"), "{} sets innerHTML", a.name);
            assert!(!a.body.contains("insertAdjacentHTML"), "{}", a.name);
            assert!(!a.body.contains("eval("), "{}", a.name);
        }
    }
}
