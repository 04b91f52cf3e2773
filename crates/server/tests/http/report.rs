//! `GET /v1/report`: the `excerpt eval --html` report of `excerpt serve --report`, a
//! read behind the token guard, with its own script-free Content-Security-Policy and the
//! Host/Origin checks of the API; and `read_report`, which refuses at startup a file it
//! cannot serve.

use std::io::ErrorKind;

use super::*;

/// A stand-in for a report: what matters here is that it comes back byte for byte.
const REPORT: &str = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>Excerpt evaluation: queries.jsonl</title><style>body{margin:0}</style></head>\
<body><h1>Evaluation report</h1><p>z\u{e9}bra \u{2014} recall 0.75</p></body></html>\n";

/// An answer's status, the named headers, and its body as text.
struct Got {
    status: u16,
    content_type: String,
    csp: String,
    sniff: String,
    cache: String,
    body: String,
}

fn fetch(s: &TestServer, method: &str, headers: &[(&str, &str)]) -> Got {
    let url = format!("{}/v1/report", s.base);
    let mut r = match method {
        "HEAD" => agent().head(&url),
        _ => agent().get(&url),
    };
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    let mut r = r.call().expect("the server answers");
    let h = |name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (content_type, csp, sniff, cache) = (
        h("content-type"),
        h("content-security-policy"),
        h("x-content-type-options"),
        h("cache-control"),
    );
    let status = r.status().as_u16();
    let body = r.body_mut().read_to_string().unwrap_or_default();
    Got {
        status,
        content_type,
        csp,
        sniff,
        cache,
        body,
    }
}

fn error_code(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["code"].as_str().map(str::to_string))
        .unwrap_or_default()
}

#[test]
fn the_report_needs_a_read_token_and_carries_its_own_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("report.html");
    std::fs::write(&path, REPORT).unwrap();
    let report = excerpt_server::read_report(&path).expect("the report reads");
    let s = start_with(
        &tmp.path().join("idx"),
        ServerOptions {
            log_requests: false,
            token: Some("write-s3cret".into()),
            read_token: Some("read-s3cret".into()),
            report: Some(report),
            ..ServerOptions::default()
        },
    );

    // No token, a wrong one: refused, and nothing of the report in the answer.
    for headers in [vec![], vec![("Authorization", "Bearer guess")]] {
        let got = fetch(&s, "GET", &headers);
        assert_eq!(got.status, 401, "{}", got.body);
        assert_eq!(error_code(&got.body), "unauthorized");
        assert!(!got.body.contains("Evaluation report"), "{}", got.body);
    }
    // The read token (and the write token, which allows everything) reads it.
    for token in ["read-s3cret", "write-s3cret"] {
        let auth = format!("Bearer {token}");
        let got = fetch(&s, "GET", &[("Authorization", &auth)]);
        assert_eq!(got.status, 200, "{token}: {}", got.body);
        assert_eq!(got.body, REPORT, "the report byte for byte");
        assert_eq!(got.content_type, "text/html; charset=utf-8");
        assert_eq!(
            got.csp,
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; \
             form-action 'none'; frame-ancestors 'none'; sandbox",
            "no script, no connection, data: images only, sandboxed"
        );
        assert_eq!(got.sniff, "nosniff");
        assert_eq!(got.cache, "no-store", "data behind a token is not cached");
        let head = fetch(&s, "HEAD", &[("Authorization", &auth)]);
        assert_eq!((head.status, head.body.as_str()), (200, ""), "HEAD");
    }
    // The policy is the report's own, not the inspector's, which allows scripts.
    let page = agent().get(format!("{}/", s.base)).call().unwrap();
    let page_csp = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(page_csp.contains("script-src 'self'"), "{page_csp}");
    // Host and Origin are checked as for the API, before the token.
    for (name, value, code) in [
        ("Host", "attacker.example", "host_not_allowed"),
        ("Origin", "https://evil.example", "origin_not_allowed"),
    ] {
        let got = fetch(
            &s,
            "GET",
            &[(name, value), ("Authorization", "Bearer read-s3cret")],
        );
        assert_eq!(got.status, 403, "{name}: {}", got.body);
        assert_eq!(error_code(&got.body), code);
    }
    // Same-origin pages (the inspector) may fetch it.
    let origin = s.base.clone();
    let got = fetch(
        &s,
        "GET",
        &[("Origin", &origin), ("Authorization", "Bearer read-s3cret")],
    );
    assert_eq!(got.status, 200, "{}", got.body);
}

#[test]
fn without_a_report_the_route_says_how_to_give_one() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("idx"));
    let got = fetch(&s, "GET", &[]);
    assert_eq!(got.status, 404, "{}", got.body);
    assert_eq!(error_code(&got.body), "no_report");
    assert!(got.body.contains("--report"), "{}", got.body);
}

#[test]
fn public_reads_open_the_report_to_anyone() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start_with(
        &tmp.path().join("idx"),
        ServerOptions {
            log_requests: false,
            token: Some("write-s3cret".into()),
            public_reads: true,
            report: Some(axum::body::Bytes::from_static(REPORT.as_bytes())),
            ..ServerOptions::default()
        },
    );
    let got = fetch(&s, "GET", &[]);
    assert_eq!((got.status, got.body.as_str()), (200, REPORT));
}

#[test]
fn a_report_that_cannot_be_served_is_refused_with_its_name() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-report.html");
    let e = excerpt_server::read_report(&missing).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("no-such-report.html"), "{e}");

    let e = excerpt_server::read_report(tmp.path()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("not a file"), "{e}");

    let binary = tmp.path().join("report.png");
    std::fs::write(&binary, b"\x89PNG\r\n\x1a\n\xff\xfe").unwrap();
    let e = excerpt_server::read_report(&binary).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("not UTF-8"), "{e}");
    assert!(e.to_string().contains("report.png"), "{e}");
}
