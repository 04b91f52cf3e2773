//! The ingest stage: the corpus into the engine's index, checked to be exactly the
//! corpus.

use std::collections::HashMap;
use std::path::Path;

use excerpt::{Engine, IndexContents, IngestOptions, IngestProgress};
use excerpt_context::LlmTokens;
use excerpt_core::content_hash;

use super::options::EvalOptions;
use crate::format::CorpusDoc;
use crate::metrics::CorpusTexts;
use crate::EvalError;

/// What the ingest stage leaves for the others: the index as queried and the corpus as
/// scored.
pub(super) struct Indexed {
    /// Every indexed document with its chunk vectors (from either store).
    pub(super) contents: IndexContents,
    /// The corpus texts, sliceable by character offsets.
    pub(super) texts: CorpusTexts,
    /// Documents in the corpus.
    pub(super) documents: usize,
    /// Sentence boundary offsets of every indexed document ([`sentence_offsets`]).
    pub(super) boundaries: HashMap<String, Vec<usize>>,
    /// Name of the LLM token encoding budgets are counted in.
    pub(super) llm_encoding: String,
    /// Documents this run added or updated.
    pub(super) ingested: usize,
    /// Wall time of the ingest, seconds.
    pub(super) ingest_seconds: f64,
}

/// Ingest stage: ingests the corpus file into the engine's index (incremental) and checks
/// the index then holds exactly the corpus (`corpus_hashes`).
pub(super) fn ingest(
    engine: &Engine,
    opts: &EvalOptions,
    corpus: Vec<CorpusDoc>,
    corpus_hashes: &HashMap<String, String>,
    progress: &dyn IngestProgress,
) -> Result<Indexed, EvalError> {
    let report = engine.ingest(
        std::slice::from_ref(&opts.corpus),
        &IngestOptions {
            sentence_vectors: opts.sentence_vectors,
            ..IngestOptions::default()
        },
        progress,
    )?;
    let failures_seen: Vec<String> = report
        .failed
        .iter()
        .chain(&report.skipped)
        .map(|p| format!("{}: {}", p.path, p.reason))
        .collect();
    let contents = engine.contents()?;
    let shown = match engine.postgres_url() {
        Some(url) => std::path::PathBuf::from(excerpt::redact_url(url)),
        None => engine.index_dir().to_path_buf(),
    };
    verify_index(&contents, corpus_hashes, &shown, &failures_seen)?;
    let documents = corpus.len();
    let texts = CorpusTexts::new(corpus.into_iter().map(|d| (d.id, d.text)));
    let boundaries = sentence_offsets(&contents);
    let llm_encoding = engine.llm_tokens()?.name().to_string();
    Ok(Indexed {
        contents,
        texts,
        documents,
        boundaries,
        llm_encoding,
        ingested: report.added + report.updated,
        ingest_seconds: report.seconds,
    })
}

/// Boundary offsets of every indexed document: sentence starts, ends, and ends without
/// their trailing whitespace (see [`crate::metrics::sentence_boundaries`]).
fn sentence_offsets(contents: &IndexContents) -> HashMap<String, Vec<usize>> {
    contents
        .documents()
        .map(|doc| {
            let mut b = Vec::with_capacity(doc.sentences.len() * 3);
            for s in &doc.sentences {
                b.push(s.char_start);
                b.push(s.char_end);
                let trailing = doc
                    .text
                    .get(s.byte_start..s.byte_end)
                    .map(|t| t.chars().rev().take_while(|c| c.is_whitespace()).count())
                    .unwrap_or(0);
                b.push(s.char_end - trailing.min(s.char_len()));
            }
            b.sort_unstable();
            b.dedup();
            (doc.id.clone(), b)
        })
        .collect()
}

fn ids_sample<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    let mut v: Vec<&str> = ids.into_iter().collect();
    v.sort_unstable();
    let more = v.len().saturating_sub(5);
    let mut s = v
        .iter()
        .take(5)
        .map(|id| format!("{id:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

/// Checks that the index holds exactly the corpus: the same ids, the same texts.
fn verify_index(
    contents: &IndexContents,
    corpus_hashes: &HashMap<String, String>,
    index_dir: &Path,
    ingest_failures: &[String],
) -> Result<(), EvalError> {
    let indexed: HashMap<&str, String> = contents
        .documents()
        .map(|d| (d.id.as_str(), content_hash(&[d.text.as_bytes()])))
        .collect();
    let extra: Vec<&str> = indexed
        .keys()
        .copied()
        .filter(|id| !corpus_hashes.contains_key(*id))
        .collect();
    if !extra.is_empty() {
        return Err(EvalError::ForeignDocuments {
            index: index_dir.to_path_buf(),
            count: extra.len(),
            sample: ids_sample(extra),
        });
    }
    let missing: Vec<&str> = corpus_hashes
        .keys()
        .map(String::as_str)
        .filter(|id| !indexed.contains_key(id))
        .collect();
    let changed: Vec<&str> = corpus_hashes
        .iter()
        .filter(|(id, h)| indexed.get(id.as_str()).is_some_and(|ih| ih != *h))
        .map(|(id, _)| id.as_str())
        .collect();
    if !missing.is_empty() || !changed.is_empty() {
        let mut msg = String::new();
        if !missing.is_empty() {
            msg.push_str(&format!(
                "{} corpus documents are not in the index ({})",
                missing.len(),
                ids_sample(missing)
            ));
        }
        if !changed.is_empty() {
            if !msg.is_empty() {
                msg.push_str("; ");
            }
            msg.push_str(&format!(
                "{} documents have another text in the index ({})",
                changed.len(),
                ids_sample(changed)
            ));
        }
        if !ingest_failures.is_empty() {
            msg.push_str(&format!(
                "; the ingest reported: {}",
                ingest_failures
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        return Err(EvalError::IndexMismatch(msg));
    }
    Ok(())
}
