//! Fixtures shared by the index's integration tests: a small config, documents cut into
//! chunks at `|`, and one unit vector per chunk.

#![allow(dead_code)]

use excerpt_core::{CharIndex, Chunk, ChunkerConfig, Document};
use excerpt_index::IndexConfig;

pub const DIM: usize = 4;

pub fn config() -> IndexConfig {
    IndexConfig {
        model_id: "test-model".into(),
        dimension: DIM,
        chunker: ChunkerConfig::Chars { size: 16 },
        headers: true,
        contextualizer: None,
        sentence_vectors: None,
    }
}

/// A document cut into chunks at every `|` (the bars stay in the text).
pub fn doc(id: &str, text: &str) -> Document {
    let idx = CharIndex::new(text);
    let mut chunks = Vec::new();
    let mut start = 0;
    for (i, _) in text.match_indices('|') {
        chunks.push((start, i + 1));
        start = i + 1;
    }
    if start < text.len() {
        chunks.push((start, text.len()));
    }
    let chunks: Vec<Chunk> = chunks
        .iter()
        .enumerate()
        .map(|(o, &(a, b))| Chunk {
            ordinal: o as u32,
            range: idx.range(a, b).unwrap(),
            section: None,
            tokens: 0,
            context: None,
        })
        .collect();
    let sentences = chunks.iter().map(|c| c.range).collect();
    Document {
        id: id.into(),
        title: format!("Title of {id}"),
        source: None,
        metadata: Default::default(),
        hash: excerpt_core::content_hash(&[id.as_bytes(), text.as_bytes()]),
        text: text.into(),
        sections: vec![],
        chunks,
        sentences,
        pages: vec![],
    }
}

/// One unit vector per chunk: axis `(seed + ordinal) % DIM`.
pub fn vectors(d: &Document, seed: usize) -> Vec<f32> {
    let mut v = vec![0.0; d.chunks.len() * DIM];
    for c in 0..d.chunks.len() {
        v[c * DIM + (seed + c) % DIM] = 1.0;
    }
    v
}
