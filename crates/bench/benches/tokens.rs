//! LLM token counting, as the budget check does it: every paragraph of a document
//! counted, then the whole document, with `cl100k_base` (its pieces cut without the regex
//! where the text is ASCII) and `o200k_base` (the default since 2026-12-03, every piece
//! cut by the crate's regex). The documents are this repository's own Markdown.
//!
//! Run with `cargo bench -p excerpt-bench --bench tokens`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use excerpt_context::{LlmTokens, TiktokenCounter};

const DOCUMENTS: [(&str, &str); 2] = [
    ("readme", include_str!("../../../README.md")),
    (
        "architecture",
        include_str!("../../../docs/ARCHITECTURE.md"),
    ),
];

fn tokens(c: &mut Criterion) {
    let mut group = c.benchmark_group("tokens");
    for encoding in TiktokenCounter::ENCODINGS {
        let counter = TiktokenCounter::new(encoding).expect("a known encoding");
        for (name, text) in DOCUMENTS {
            let paragraphs: Vec<&str> = text.split("\n\n").collect();
            group.throughput(Throughput::Bytes(2 * text.len() as u64));
            group.bench_function(format!("{encoding}/{name}"), |b| {
                b.iter(|| {
                    let parts: usize = paragraphs.iter().map(|p| counter.count(p)).sum();
                    black_box(parts + counter.count(text))
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, tokens);
criterion_main!(benches);
