//! How long opening a writer on an existing index takes, and the process's peak resident
//! memory after it: a writer reads every segment before it changes anything (every
//! ingest, delete and repair starts so).
//!
//! `cargo run --release -p excerpt-index --example writer_open -- INDEX_DIR`
//!
//! The index's own configuration is used, so nothing is refused for a mismatch; the
//! writer is dropped without committing, which changes nothing on disk.

use std::time::Instant;

use excerpt_index::{IndexWriter, Manifest};

/// A `/proc/self/status` field in MiB (0 where there is none).
fn status_mib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: writer_open INDEX_DIR");
        std::process::exit(2);
    };
    let dir = std::path::PathBuf::from(dir);
    let config = match Manifest::load(&dir) {
        Ok(Some(m)) => m.config,
        Ok(None) => {
            eprintln!("no index in {}", dir.display());
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let started = Instant::now();
    match IndexWriter::open(&dir, config) {
        Ok(writer) => {
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "writer open {seconds:.2} s; peak RSS {:.0} MiB, RSS now {:.0} MiB",
                status_mib("VmHWM:"),
                status_mib("VmRSS:")
            );
            drop(writer);
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
