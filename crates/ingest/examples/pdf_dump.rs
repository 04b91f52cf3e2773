//! Loads the files given (any supported format, e.g. PDFs) and prints, per file, either
//! the reason it is skipped or a summary; with `--markdown DIR`, writes each document's
//! text with its headings marked as Markdown (`#` per level) to `DIR/<stem>.md`, for
//! `scripts/pdf-eval.py`. Pages per second are printed at the end.
//!
//! `cargo run -p excerpt-ingest --example pdf_dump -- [--markdown DIR] FILE...`

use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut out_dir: Option<PathBuf> = None;
    if let Some(i) = args.iter().position(|a| a == "--markdown") {
        if i + 1 < args.len() {
            out_dir = Some(PathBuf::from(args.remove(i + 1)));
        }
        args.remove(i);
    }
    let (mut pages, started) = (0usize, Instant::now());
    for a in &args {
        let path = Path::new(a);
        let root = path.parent().unwrap_or(Path::new("."));
        let t = Instant::now();
        match excerpt_ingest::load_file(path, root, &excerpt_ingest::LoadOptions::default()) {
            Err(e) => println!("{e}"),
            Ok(l) => {
                for w in &l.warnings {
                    println!("warning: {w}");
                }
                for d in &l.documents {
                    pages += d.pages.len();
                    println!(
                        "{}: {} pages, {} chars, {} sections, title {:?} ({:.2}s)",
                        d.id,
                        d.pages.len(),
                        d.text.chars().count(),
                        d.sections.len(),
                        d.title,
                        t.elapsed().as_secs_f64()
                    );
                    if let Some(dir) = &out_dir {
                        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
                        std::fs::create_dir_all(dir).expect("output directory");
                        std::fs::write(dir.join(format!("{stem}.md")), markdown(d)).expect("write");
                    }
                }
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{pages} pages in {secs:.2}s: {:.1} pages/s",
        pages as f64 / secs.max(1e-9)
    );
}

/// The text with each section's heading line prefixed by `#` marks.
fn markdown(d: &excerpt_ingest::ParsedDocument) -> String {
    let mut out = String::new();
    let mut at = 0usize;
    for s in &d.sections {
        let start = s.own.byte_start;
        let head_at = d.text[start..]
            .find(s.heading.as_str())
            .map_or(start, |i| start + i);
        out.push_str(&d.text[at..head_at]);
        out.push_str(&"#".repeat(s.level as usize));
        out.push(' ');
        at = head_at;
    }
    out.push_str(&d.text[at..]);
    out
}
