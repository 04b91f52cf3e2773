//! Fixtures shared by the CLI's integration tests.

use std::path::{Path, PathBuf};
use std::process::Command;

use excerpt_testkit::fixtures::write_file;

/// Writes `files` (path under `dir/docs`, contents) and ingests `dir/docs` with the real
/// binary into `dir/idx`, which it returns.
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
