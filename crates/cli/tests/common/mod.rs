//! Fixtures shared by the CLI's integration tests.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use excerpt_testkit::fixtures::write_file;

/// Writes `files` (path under `dir/docs`, contents) and ingests `dir/docs` with the real
/// binary into `dir/idx`, which it returns.
#[allow(dead_code)] // not every test binary ingests this way
pub fn ingest_docs(dir: &Path, files: &[(&str, &[u8])]) -> PathBuf {
    for (name, text) in files {
        write_file(dir, &format!("docs/{name}"), text);
    }
    let index = dir.join("idx");
    let out = Command::new(env!("CARGO_BIN_EXE_excerpt"))
        .arg("--index")
        .arg(&index)
        .args(["--quiet", "ingest"])
        .arg(dir.join("docs"))
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    index
}

/// Starts `excerpt serve` on `index` (a directory or a URL) on a free port of 127.0.0.1;
/// returns the process and its base URL once it listens.
#[allow(dead_code)] // not every test binary starts a server
pub fn spawn_server(index: &str) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_excerpt"))
        .env_remove("EXCERPT_INDEX")
        .args([
            "--index",
            index,
            "--quiet",
            "serve",
            "--addr",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .expect("the server prints its address");
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("no address: {line:?}"))
        .to_string();
    (child, base)
}
