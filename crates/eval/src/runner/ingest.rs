//! The ingest stage: the corpus into the engine's index, checked to be exactly the
//! corpus.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use excerpt::{Engine, IndexContents, IngestProgress};
use excerpt_core::content_hash;

use super::options::EvalOptions;
use super::validate::Corpus;
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

/// Ingest stage: ingests the corpus file or folder into the engine's index
/// (incremental) and checks the index then holds exactly the corpus: for a
/// `corpus.jsonl`, its ids and texts; for a folder, one document per file listed by the
/// validate stage, bar the files the ingest skipped (empty, binary, unreadable PDFs), and
/// no other; a document some query is about (`needed`) must not have been skipped.
pub(super) fn ingest(
    engine: &Engine,
    opts: &EvalOptions,
    corpus: Corpus,
    needed: &HashSet<&str>,
    progress: &dyn IngestProgress,
) -> Result<Indexed, EvalError> {
    let report = engine.ingest(
        std::slice::from_ref(&opts.corpus),
        &opts.ingest_options(),
        progress,
    )?;
    let failures_seen: Vec<String> = report
        .failed
        .iter()
        .chain(&report.skipped)
        .map(|p| format!("{}: {}", p.path, p.reason))
        .collect();
    // A folder's documents the index must hold. When the ingest skipped every file (PDFs
    // without PDFium, say) there is no index to open: say why before opening it.
    let folder_expected = match &corpus {
        Corpus::Folder { files } => Some(unskipped(files, &report.skipped)),
        Corpus::Jsonl { .. } => None,
    };
    if let Some(expected) = &folder_expected {
        if expected.is_empty() {
            return Err(EvalError::IndexMismatch(format!(
                "the ingest skipped every file of {}: {}",
                opts.corpus.display(),
                failures_seen
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            )));
        }
    }
    let contents = engine.contents()?;
    let shown = std::path::PathBuf::from(engine.index_shown());
    let (documents, texts) = match corpus {
        Corpus::Jsonl { docs, hashes } => {
            let expected = hashes.into_iter().map(|(id, h)| (id, Some(h))).collect();
            verify_index(&contents, &expected, &shown, &failures_seen)?;
            let documents = docs.len();
            (
                documents,
                CorpusTexts::new(docs.into_iter().map(|d| (d.id, d.text))),
            )
        }
        Corpus::Folder { files } => {
            let expected = folder_expected.unwrap_or_default();
            verify_index(&contents, &expected, &shown, &failures_seen)?;
            let lost: Vec<String> = files
                .iter()
                .filter(|(id, _)| !expected.contains_key(id) && needed.contains(id.as_str()))
                .map(|(id, path)| {
                    let shown = path.display().to_string();
                    let reason = report
                        .skipped
                        .iter()
                        .find(|p| p.path == shown)
                        .map_or("", |p| p.reason.as_str());
                    format!("{id:?} ({reason})")
                })
                .collect();
            if !lost.is_empty() {
                return Err(EvalError::IndexMismatch(format!(
                    "queries are about documents the ingest skipped: {}",
                    lost.join("; ")
                )));
            }
            let texts = CorpusTexts::new(
                contents
                    .documents()
                    .map(|d| (d.id.clone(), d.text.to_string())),
            );
            (expected.len(), texts)
        }
    };
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

/// The documents of a folder's `files` (id, path) that the ingest did not skip, each
/// expected in the index with no known hash.
fn unskipped(
    files: &[(String, std::path::PathBuf)],
    skipped: &[excerpt::Problem],
) -> HashMap<String, Option<String>> {
    let skipped: HashSet<&str> = skipped.iter().map(|p| p.path.as_str()).collect();
    files
        .iter()
        .filter(|(_, path)| !skipped.contains(path.display().to_string().as_str()))
        .map(|(id, _)| (id.clone(), None))
        .collect()
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

/// Checks that the index holds exactly the corpus: the same ids, and the same texts
/// where `corpus_hashes` gives one (a folder's texts are what the ingest extracted).
fn verify_index(
    contents: &IndexContents,
    corpus_hashes: &HashMap<String, Option<String>>,
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
        .filter(|(id, h)| {
            h.as_ref()
                .is_some_and(|h| indexed.get(id.as_str()).is_some_and(|ih| ih != h))
        })
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
