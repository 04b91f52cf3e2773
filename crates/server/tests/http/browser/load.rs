//! The page's load time on the sample index, measured, never asserted (speed is a
//! benchmark's business, and a shared CI machine would make a timed assertion flaky):
//! `#[ignore]`d, run by hand and recorded in docs/BENCHMARKS.md.
//!
//! `cargo nextest run -p excerpt-server --run-ignored only inspector_load_time
//! --no-capture` prints, over `EXCERPT_LOAD_RUNS` loads (default 20) of the README's
//! question as a link, the median and worst of the Navigation Timing figures (first byte,
//! DOM content loaded, load event), of the time the page's two queries (the context and
//! its text rendering) are answered, and of the time every piece card is drawn (a
//! `performance.mark` of the page, NaN for a page without it). The server is the one
//! at `EXCERPT_LOAD_URL` (e.g. `http://127.0.0.1:7700` of `target/release/excerpt
//! --index target/sample-index serve`, as a new user runs it), else one started here (a
//! test build) over `EXCERPT_LOAD_INDEX` or over the part of the sample the other
//! browser tests use, built in a temporary directory.

use std::path::PathBuf;
use std::sync::Arc;

use excerpt::{Engine, EngineOptions};
use excerpt_server::ServerOptions;
use serde_json::Value;

use super::super::{post, start_engine};
use super::{enc, sample_documents, tools, Browser, QUESTION, SAMPLE};

/// The median and the largest of `v`.
fn median_max(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[v.len() - 1])
}

#[test]
#[ignore = "a measurement, not a test: run by hand, see docs/BENCHMARKS.md"]
fn inspector_load_time() {
    let Some(tools) = tools() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let url = std::env::var("EXCERPT_LOAD_URL").ok();
    let given = std::env::var_os("EXCERPT_LOAD_INDEX").map(PathBuf::from);
    let mut shown = match (&url, &given) {
        (Some(u), _) => format!("the server at {u}"),
        (None, Some(p)) => format!("index {} (test build)", p.display()),
        (None, None) => format!("{} (test build)", SAMPLE.join(", ")),
    };
    let mut server = None;
    let base = match url {
        Some(u) => u.trim_end_matches('/').to_string(),
        None => {
            let index = given.clone().unwrap_or_else(|| tmp.path().join("index"));
            let engine = Arc::new(Engine::new(EngineOptions::new(index)));
            let s = start_engine(
                engine,
                ServerOptions {
                    log_requests: false,
                    ..ServerOptions::default()
                },
            );
            if given.is_none() {
                let (st, r) = post(&s, "/v1/ingest", &sample_documents(SAMPLE));
                assert_eq!(st, 200, "{r}");
            }
            let base = s.base.clone();
            server = Some(s);
            base
        }
    };
    shown.push_str(&format!(" ({} index chunks)", chunks(&base)));
    let runs: usize = std::env::var("EXCERPT_LOAD_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
        .max(1);
    let b = Browser::start_at(&tools, &base, false);
    let link = format!("/?q={}&budget=800", enc(QUESTION));
    // One load first, so the model, the snapshot and the browser's own start are not
    // counted.
    b.goto(&link);
    b.wait(
        "document.querySelector('.run.side-a .piece')",
        "the context",
    );
    let (mut first_byte, mut dom, mut load) = (vec![], vec![], vec![]);
    let (mut answered, mut cards) = (vec![], vec![]);
    for _ in 0..runs {
        b.goto(&link);
        b.wait(
            "document.querySelector('.run.side-a .piece') && performance.getEntriesByType('navigation')[0].loadEventEnd > 0",
            "the context",
        );
        let t: Value = b.js(
            "const n = performance.getEntriesByType('navigation')[0];
             const drawn = performance.getEntriesByName('cards')[0];
             const queries = performance.getEntriesByType('resource').filter(e => e.name.endsWith('/v1/query'));
             return [n.responseStart, n.domContentLoadedEventEnd, n.loadEventEnd,
                     Math.max(...queries.map(e => e.responseEnd)), drawn ? drawn.startTime : null];",
        );
        let f = |i: usize| t[i].as_f64().unwrap_or(f64::NAN);
        first_byte.push(f(0));
        dom.push(f(1));
        load.push(f(2));
        answered.push(f(3));
        cards.push(f(4));
    }
    println!("inspector load, {runs} loads of the README question (budget 800), {shown}:");
    for (name, v) in [
        ("first byte", first_byte),
        ("DOMContentLoaded", dom),
        ("load event", load),
        ("queries answered", answered),
        ("piece cards drawn", cards),
    ] {
        let (median, max) = median_max(v);
        println!("  {name:<18} median {median:7.1} ms   max {max:7.1} ms");
    }
    drop(b);
    drop(server);
}

/// The number of chunks of the index behind `base` (`GET /v1/stats`).
fn chunks(base: &str) -> String {
    super::agent()
        .get(format!("{base}/v1/stats"))
        .call()
        .ok()
        .and_then(|mut r| r.body_mut().read_json::<Value>().ok())
        .map_or_else(|| "?".into(), |v| v["chunks"].to_string())
}
