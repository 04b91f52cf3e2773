//! A real PostgreSQL 18 + pgvector for tests, started by `scripts/postgres.sh` (which
//! fetches it once and reuses a running one), with one fresh database per call.
//!
//! When the server cannot start, [`database`] prints why and returns `None` so the test
//! can skip, unless `EXCERPT_REQUIRE_POSTGRES=1` (set by `scripts/test.sh`, so CI never
//! skips): then it panics.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The server's URL (database `excerpt`), or `None` when it cannot start and starting
/// is not required.
pub fn server() -> Option<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/postgres.sh");
    let failure = match Command::new("bash").arg(&script).arg("start").output() {
        Ok(o) if o.status.success() => {
            return Some(String::from_utf8_lossy(&o.stdout).trim().to_string())
        }
        Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
        Err(e) => e.to_string(),
    };
    if std::env::var("EXCERPT_REQUIRE_POSTGRES").as_deref() == Ok("1") {
        panic!("PostgreSQL did not start (EXCERPT_REQUIRE_POSTGRES=1): {failure}");
    }
    eprintln!("SKIPPED: PostgreSQL could not start through scripts/postgres.sh: {failure}");
    None
}

/// A new empty database on the server, named after `tag`; returns its URL.
pub fn database(tag: &str) -> Option<String> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let base = server()?;
    let name = format!(
        "t_{tag}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let mut admin = postgres::Client::connect(&base, postgres::NoTls)
        .unwrap_or_else(|e| panic!("connecting to {base}: {e}"));
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap_or_else(|e| panic!("creating database {name}: {e}"));
    let (head, _) = base.rsplit_once('/')?;
    Some(format!("{head}/{name}"))
}
