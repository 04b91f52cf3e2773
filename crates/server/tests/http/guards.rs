//! What a careless client or an attacker can send: huge counts, foreign Host and Origin
//! headers, form posts, no token, forged ids, connections that never finish their
//! headers, requests that outlast their time. Each test is the regression test of one
//! finding of the hardening review.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::*;

fn quiet() -> ServerOptions {
    ServerOptions {
        log_requests: false,
        ..ServerOptions::default()
    }
}

/// A request with extra headers; the body, if any, is sent as given.
fn send(
    s: &TestServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, Value) {
    let url = format!("{}{path}", s.base);
    let a = agent();
    match method {
        "GET" => {
            let mut r = a.get(&url);
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            answer(r.call())
        }
        "DELETE" => {
            let mut r = a.delete(&url);
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            answer(r.call())
        }
        _ => {
            let mut r = a.post(&url);
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            answer(r.send(body.unwrap_or("")))
        }
    }
}

const JSON: (&str, &str) = ("Content-Type", "application/json");

#[test]
fn huge_counts_and_budgets_are_refused_with_the_limit_named() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start_with(&tmp.path().join("idx"), quiet());
    assert_eq!(post(&s, "/v1/ingest", &ingest_body()).0, 200);
    let q = |body: Value| post(&s, "/v1/query", &body);
    // Each of these used to abort the whole server process (allocation failure).
    for field in ["candidates", "top_k", "rerank"] {
        for n in [100_000_000_000_000u64, u64::MAX, 10_001] {
            let got = q(json!({"query": "database", field: n}));
            assert_error(got, 400, "10000");
        }
    }
    assert_error(q(json!({"query": "x", "top_k": 0})), 400, "top_k");
    assert_error(q(json!({"query": "x", "budget": 0})), 400, "budget");
    assert_error(
        q(json!({"query": "x", "budget": 1_000_000_000u64})),
        400,
        "1000000",
    );
    assert_error(
        q(json!({"query": "x".repeat(excerpt::MAX_QUERY_BYTES + 1)})),
        400,
        "limit",
    );
    // Strategy parameters that size things: any value is safe.
    for spec in [
        "rse:max_segments=100000000000000",
        "rse:max_len_chunks=18446744073709551615",
        "adjacent:window=18446744073709551615",
        "window:max_expand=18446744073709551615",
        "topk:max_chunks=18446744073709551615",
        "section:max_hits=18446744073709551615",
    ] {
        let (st, v) = q(json!({"query": "database restart", "strategy": spec}));
        assert!(st == 200 || st == 400, "{spec}: {st} {v}");
    }
    // The largest allowed values work, and the server is still up.
    let (st, v) = q(json!({"query": "database", "candidates": 10_000, "top_k": 10_000}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(get(&s, "/healthz").0, 200);
}

#[test]
fn cross_site_requests_and_foreign_hosts_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start_with(&tmp.path().join("idx"), quiet());
    let doc = r#"{"documents": [{"id": "forged", "text": "Planted by a web page."}]}"#;
    // A form-like post, as any web page can send without asking: not JSON, refused.
    let got = send(
        &s,
        "POST",
        "/v1/ingest",
        &[("Content-Type", "text/plain")],
        Some(doc),
    );
    assert_error(got, 415, "application/json");
    let got = send(&s, "POST", "/v1/ingest", &[], Some(doc));
    assert_error(got, 415, "application/json");
    // JSON from a foreign page's Origin: refused before the handler.
    let got = send(
        &s,
        "POST",
        "/v1/ingest",
        &[JSON, ("Origin", "https://evil.example")],
        Some(doc),
    );
    assert_error(got, 403, "evil.example");
    assert_error(
        send(&s, "GET", "/v1/documents", &[("Origin", "null")], None),
        403,
        "null",
    );
    // DNS rebinding: a page at attacker.example resolved to 127.0.0.1.
    assert_error(
        send(
            &s,
            "GET",
            "/v1/documents",
            &[("Host", "attacker.example")],
            None,
        ),
        403,
        "attacker.example",
    );
    assert_error(
        send(
            &s,
            "GET",
            "/healthz",
            &[("Host", "attacker.example:7700")],
            None,
        ),
        403,
        "attacker.example",
    );
    // Nothing was ingested.
    assert_eq!(get(&s, "/v1/documents"), (200, json!([])));
    // Loopback names and a same-host origin are fine.
    let port = s.base.rsplit(':').next().unwrap().to_string();
    for host in [format!("localhost:{port}"), format!("[::1]:{port}")] {
        let got = send(&s, "GET", "/healthz", &[("Host", &host)], None);
        assert_eq!(got.0, 200, "{host}: {}", got.1);
    }
    let origin = format!("http://localhost:{port}");
    let got = send(
        &s,
        "POST",
        "/v1/ingest",
        &[JSON, ("Origin", &origin)],
        Some(doc),
    );
    assert_eq!(got.0, 200, "{}", got.1);
}

#[test]
fn allowed_hosts_extend_the_loopback_names() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = quiet();
    o.allowed_hosts = vec!["search.internal".into()];
    let s = start_with(&tmp.path().join("idx"), o);
    let got = send(&s, "GET", "/healthz", &[("Host", "search.internal")], None);
    assert_eq!(got.0, 200, "{}", got.1);
    let got = send(&s, "GET", "/healthz", &[("Host", "other.internal")], None);
    assert_error(got, 403, "other.internal");
}

#[test]
fn a_token_guards_writes_and_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = quiet();
    o.token = Some("s3cret-token".into());
    let s = start_with(&tmp.path().join("idx"), o);
    let body = ingest_body().to_string();
    let good = ("Authorization", "Bearer s3cret-token");
    for auth in [None, Some("Bearer wrong"), Some("Basic s3cret-token")] {
        let mut h = vec![JSON];
        if let Some(a) = auth {
            h.push(("Authorization", a));
        }
        assert_error(
            send(&s, "POST", "/v1/ingest", &h, Some(&body)),
            401,
            "Bearer",
        );
        assert_error(send(&s, "GET", "/v1/documents", &h, None), 401, "Bearer");
        assert_error(
            send(&s, "DELETE", "/v1/documents/infra/oncall", &h, None),
            401,
            "Bearer",
        );
    }
    assert_eq!(get(&s, "/healthz").0, 200, "health needs no token");
    assert_eq!(
        send(&s, "POST", "/v1/ingest", &[JSON, good], Some(&body)).0,
        200
    );
    let (st, list) = send(&s, "GET", "/v1/documents", &[good], None);
    assert_eq!((st, list.as_array().map(Vec::len)), (200, Some(4)));

    // Public reads: reads open, writes still guarded.
    let tmp2 = tempfile::tempdir().unwrap();
    let mut o = quiet();
    o.token = Some("s3cret-token".into());
    o.public_reads = true;
    let s = start_with(&tmp2.path().join("idx"), o);
    assert_error(
        send(&s, "POST", "/v1/ingest", &[JSON], Some(&body)),
        401,
        "writes",
    );
    assert_eq!(
        send(&s, "POST", "/v1/ingest", &[JSON, good], Some(&body)).0,
        200
    );
    assert_eq!(get(&s, "/v1/documents").0, 200);
    let (st, v) = post(&s, "/v1/query", &json!({"query": "database"}));
    assert_eq!(st, 200, "{v}");
    assert!(v.get("timings").is_none(), "{v}");
    // Asked for, the stage times come with the same context.
    let (st, t) = post(
        &s,
        "/v1/query",
        &json!({"query": "database", "timings": true}),
    );
    assert_eq!(st, 200, "{t}");
    assert_eq!(t["pieces"], v["pieces"]);
    assert!(t["timings"]["embed_ms"].as_f64().unwrap() > 0.0, "{t}");
    assert!(t["timings"]["total_ms"].as_f64().unwrap() > 0.0, "{t}");
    assert_error(delete(&s, "/v1/documents/infra/oncall"), 401, "writes");
}

#[test]
fn a_non_loopback_bind_needs_a_token() {
    let tmp = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::new(engine_options(&tmp.path().join("idx"))));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let err = rt
        .block_on(Server::bind("0.0.0.0:0", engine.clone(), quiet()))
        .expect_err("an open bind without a token is refused");
    assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
    assert!(err.to_string().contains("token"), "{err}");
    let mut o = quiet();
    o.token = Some("t".into());
    let ok = rt.block_on(Server::bind("0.0.0.0:0", engine, o));
    assert!(ok.is_ok(), "with a token it binds");
}

#[test]
fn refused_front_matter_is_reported_as_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start_with(&tmp.path().join("idx"), quiet());
    let (st, r) = post(
        &s,
        "/v1/ingest",
        &json!({"documents": [{"id": "odd.md", "format": "markdown",
            "text": "---\n- a list\n---\n# Title\n\nBody text.\n"}]}),
    );
    assert_eq!((st, &r["added"]), (200, &json!(1)), "{r}");
    let w = &r["warnings"][0];
    assert_eq!(w["path"], "odd.md", "{r}");
    assert!(
        w["reason"].as_str().unwrap().contains("front matter"),
        "{r}"
    );
}

#[test]
fn forged_ids_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start_with(&tmp.path().join("idx"), quiet());
    let long = "x".repeat(1024 * 1024);
    for id in ["a\u{0}b", "red\u{1b}[31m", "two\nlines", long.as_str()] {
        let got = post(
            &s,
            "/v1/ingest",
            &json!({"documents": [{"id": id, "text": "Some text."}]}),
        );
        let (st, v) = &got;
        assert_eq!(*st, 400, "{v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.len() < 400, "the message does not echo a 1 MB id");
        assert!(!msg.contains('\u{1b}') && !msg.contains('\n'), "{msg:?}");
    }
    assert_eq!(get(&s, "/v1/documents"), (200, json!([])));
}

/// Reads what the server sends until it closes the connection (or 30 s pass).
fn read_until_closed(mut c: TcpStream) -> std::io::Result<Vec<u8>> {
    c.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut out = Vec::new();
    c.read_to_end(&mut out)?;
    Ok(out)
}

#[test]
fn connections_that_never_finish_their_headers_are_closed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = quiet();
    o.header_timeout = Duration::from_millis(300);
    let s = start_with(&tmp.path().join("idx"), o);
    let addr = s.base.trim_start_matches("http://").to_string();
    let mut slow = Vec::new();
    for _ in 0..20 {
        let mut c = TcpStream::connect(&addr).unwrap();
        c.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .unwrap();
        slow.push(c);
    }
    // The server closes each of them by itself (a read timeout would be an error here).
    for c in slow {
        let got = read_until_closed(c).expect("the server closes the connection");
        let text = String::from_utf8_lossy(&got);
        assert!(!text.contains("200 OK"), "{text}");
    }
    assert_eq!(get(&s, "/healthz").0, 200);
}

/// Issue 27, row 5: under `--public-reads`, clients that send a head and trickle the
/// body held every permit for `--request-timeout`. Now the body has `body_timeout`:
/// each slow client gets 408 and its connection closed, and the server is free again.
#[test]
fn a_trickled_body_gets_408_and_gives_its_permit_back() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = quiet();
    o.token = Some("s3cret-token".into());
    o.public_reads = true;
    // Two permits anyone may take, and one kept for the write token.
    o.max_concurrent = 3;
    o.body_timeout = Duration::from_secs(1);
    let s = start_with(&tmp.path().join("idx"), o);
    let addr = s.base.trim_start_matches("http://").to_string();
    let head = "POST /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n";
    let mut slow = Vec::new();
    for _ in 0..2 {
        let mut c = TcpStream::connect(&addr).unwrap();
        c.write_all(head.as_bytes()).unwrap();
        // One byte every 200 ms: 200 s for the whole body, unless the server gives up.
        let mut w = c.try_clone().unwrap();
        let trickle = std::thread::spawn(move || {
            for b in std::iter::once(b'{').chain(std::iter::repeat(b' ')) {
                if w.write_all(&[b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        slow.push((c, trickle));
    }
    for (c, trickle) in slow {
        // The server answers and closes by itself (a 30 s read timeout would fail here).
        let got = read_until_closed(c).expect("the server answers within its body timeout");
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        assert!(text.contains("body_timeout"), "{text}");
        trickle.join().unwrap();
    }
    // Both permits are back: authenticated writes and public reads get through.
    let auth = ("Authorization", "Bearer s3cret-token");
    let body = ingest_body().to_string();
    assert_eq!(
        send(&s, "POST", "/v1/ingest", &[JSON, auth], Some(&body)).0,
        200
    );
    let q = json!({"query": "database", "budget": 200}).to_string();
    assert_eq!(send(&s, "POST", "/v1/query", &[JSON], Some(&q)).0, 200);
}

/// Issue 63, lesser note: a `Content-Length` over the limit waited for the body
/// timeout and got 408. It gets 413 at once, its body unread.
#[test]
fn a_declared_length_over_the_limit_gets_413_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = quiet();
    o.body_limit = 1000;
    o.body_timeout = Duration::from_secs(2);
    let s = start_with(&tmp.path().join("idx"), o);
    let addr = s.base.trim_start_matches("http://").to_string();
    for path in ["/v1/query", "/v1/ingest"] {
        let mut c = TcpStream::connect(&addr).unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\
             Content-Type: application/json\r\nContent-Length: 1001\r\n\r\n{{"
        );
        c.write_all(head.as_bytes()).unwrap();
        let got = read_until_closed(c).expect("the server answers and closes");
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 413"), "{text}");
        assert!(
            text.contains("body_too_large") && text.contains("1001"),
            "{text}"
        );
    }
    // At the limit, the body is read and the request answered as before (404: the
    // index has no documents yet).
    let q = format!("{{\"query\": \"database\"{}}}", " ".repeat(1000 - 21));
    assert_eq!(q.len(), 1000);
    let (st, v) = send(&s, "POST", "/v1/query", &[JSON], Some(&q));
    assert!(st != 413 && st != 408, "{st} {v}");
}

#[test]
fn shutdown_does_not_wait_on_idle_connections() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = quiet();
    o.header_timeout = Duration::from_secs(3600);
    o.shutdown_timeout = Duration::from_millis(200);
    let s = start_with(&tmp.path().join("idx"), o);
    let addr = s.base.trim_start_matches("http://").to_string();
    let mut c = TcpStream::connect(&addr).unwrap();
    c.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    // Dropping the server joins its thread: it returns although the connection above
    // never finishes its request (the test would hang otherwise).
    drop(s);
    drop(c);
}

#[test]
fn a_request_over_its_time_gets_503() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = quiet();
    o.request_timeout = Duration::from_nanos(1);
    let s = start_with(&tmp.path().join("idx"), o);
    let got = post(&s, "/v1/ingest", &ingest_body());
    assert_error(got, 503, "did not finish");
    assert_eq!(get(&s, "/healthz").0, 200);
}

#[test]
fn a_full_server_answers_503_with_retry_after_and_health_stays_up() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = quiet();
    o.max_concurrent = 1;
    let s = start_with(&tmp.path().join("idx"), o);
    // A long ingest takes the one slot (embedding 15k words takes seconds).
    let text: String = (0..15)
        .map(|i| filler("storage", i, 1000))
        .collect::<Vec<_>>()
        .join("\n\n");
    let base = s.base.clone();
    let body = json!({"documents": [{"id": "big", "text": text}]});
    // The writer retries while one of the queries below holds the slot.
    let writer = std::thread::spawn(move || loop {
        let st = agent()
            .post(format!("{base}/v1/ingest"))
            .send_json(&body)
            .map(|r| r.status().as_u16());
        if !matches!(st, Ok(503)) {
            return st;
        }
        std::thread::sleep(Duration::from_millis(5));
    });
    let mut refused = None;
    for _ in 0..200 {
        if writer.is_finished() {
            break;
        }
        let r = agent()
            .post(format!("{}/v1/query", s.base))
            .send_json(json!({"query": "storage"}))
            .unwrap();
        // Queries are sent one at a time: only the ingest can hold the slot.
        if r.status().as_u16() == 503 {
            let retry = r
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_string());
            // Health is outside the limit: it answers while the API is full.
            let health = get(&s, "/healthz").0;
            refused = Some((retry, health));
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let Some((retry, health)) = refused else {
        panic!(
            "no query met the full server; the ingest answered {:?}",
            writer.join()
        );
    };
    assert_eq!(retry.as_deref(), Some("1"));
    assert_eq!(health, 200);
    assert_eq!(
        writer.join().unwrap().unwrap(),
        200,
        "the ingest itself succeeds"
    );
    let (st, v) = post(&s, "/v1/query", &json!({"query": "storage"}));
    assert_eq!(st, 200, "{v}");
}

/// The inspector's page and files: no token needed (they hold no data), the Host/Origin
/// check as for the API, and a Content-Security-Policy with no inline script or style.
#[test]
fn the_inspector_page_passes_the_host_check_and_carries_its_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = quiet();
    o.token = Some("s3cret-token".into());
    let s = start_with(&tmp.path().join("idx"), o);
    let head = |path: &str, headers: &[(&str, &str)]| {
        let mut r = agent().get(format!("{}{path}", s.base));
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
        let (ct, csp, sniff, frames) = (
            h("content-type"),
            h("content-security-policy"),
            h("x-content-type-options"),
            h("x-frame-options"),
        );
        let status = r.status().as_u16();
        let body = r.body_mut().read_to_string().unwrap_or_default();
        (status, ct, csp, sniff, frames, body)
    };
    let (st, ct, csp, sniff, frames, body) = head("/", &[]);
    assert_eq!(st, 200, "the page needs no token: {body}");
    assert!(ct.starts_with("text/html"), "{ct}");
    assert!(body.contains("<script type=\"module\" src=\"/ui/app.js\">"));
    for part in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ] {
        assert!(csp.contains(part), "{part} not in {csp:?}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!((sniff.as_str(), frames.as_str()), ("nosniff", "DENY"));
    let (st, ct, csp2, ..) = head("/ui/app.js", &[]);
    assert_eq!((st, ct.as_str()), (200, "text/javascript; charset=utf-8"));
    assert_eq!(csp2, csp);
    for path in [
        "/ui/../../etc/passwd",
        "/ui/..%2F..%2Fetc%2Fpasswd",
        "/ui/%2E%2E/Cargo.toml",
    ] {
        let (st, _, _, _, _, body) = head(path, &[]);
        assert!(st == 404 || st == 401, "{path}: {st} {body}");
        assert!(
            !body.contains("root:") && !body.contains("[package]"),
            "{path}: {body}"
        );
    }
    let (st, _, _, _, _, body) = head("/ui/nothing.js", &[]);
    assert_eq!(st, 404);
    assert!(body.contains("asset_not_found"), "{body}");
    // The data stays behind the token.
    assert_eq!(send(&s, "GET", "/v1/documents", &[], None).0, 401);
    // DNS rebinding and foreign pages are refused as for the API.
    let (st, _, _, _, _, body) = head("/", &[("Host", "attacker.example")]);
    assert_eq!(st, 403, "{body}");
    let (st, _, _, _, _, body) = head("/ui/app.js", &[("Origin", "https://evil.example")]);
    assert_eq!(st, 403, "{body}");
}
