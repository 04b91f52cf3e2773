//! LLM-written chunk contexts (`excerpt ingest --contextualize`).
//!
//! For every chunk of a new or changed document, an OpenAI-compatible chat model is
//! shown the document (or a window of it around the chunk, see [`document_window`]) and
//! the chunk, and asked for one or two sentences situating the chunk in the document.
//! The answer, whitespace-collapsed and capped at [`ContextualizeOptions::max_tokens`]
//! tokens of the embedding model, becomes [`Chunk::context`]: indexed (embedded and
//! BM25-searched) between the chunk header and the chunk text, never part of the
//! chunk's text or offsets.
//!
//! Answers are cached on disk in `<index>/contextualize/cache.jsonl` (for a PostgreSQL
//! index, under `Engine::context_cache_home` on the ingesting machine) (append-only, one
//! JSON object per line, fsynced after every wave of requests; a torn or corrupt line is
//! skipped), keyed by [`cache_key`]: model, [`PROMPT_VERSION`], window size, document
//! hash, chunk position and chunk text. Re-ingesting after a crash, a `rm`, or into a
//! rebuilt index asks nothing again; a changed document changes its hash, so its chunks
//! are asked again (their context depends on the whole document).
//!
//! Main types: [`ContextualizeOptions`] (public), `Contextualizer` (the ingest step).

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use excerpt_core::{content_hash, CharIndex, Chunk, Document, TokenCounter};
use excerpt_embed::{ChatClient, ChatConfig};
use excerpt_index::{ContextualizerConfig, IndexError};
use excerpt_ingest::CHARS_PER_TOKEN_ESTIMATE;
use serde::{Deserialize, Serialize};

use crate::report::{IngestProgress, IngestReport};
use crate::EngineError;

/// Version of the prompt below; part of every cache key and recorded in the index
/// config, so a new prompt never mixes with contexts written by an old one.
pub const PROMPT_VERSION: u32 = 1;

/// Default cap on a context, in tokens of the embedding model (about 45 words).
pub const DEFAULT_CONTEXT_TOKENS: usize = 64;

/// Default size of the document window shown with each chunk, in characters (about
/// 4,000 LLM tokens of English).
pub const DEFAULT_DOC_CHARS: usize = 16_000;

/// Default cap on generated LLM tokens per context when the chat config sets none.
const DEFAULT_LLM_MAX_TOKENS: u32 = 150;

/// Requests per wave, per unit of concurrency: answers are cached and errors acted on
/// between waves.
const WAVE_PER_WORKER: usize = 8;

/// Cache directory inside the index directory.
const CACHE_DIR: &str = "contextualize";
/// Cache file inside [`CACHE_DIR`].
const CACHE_FILE: &str = "cache.jsonl";

const SYSTEM_PROMPT: &str = "You help a search engine index long documents. You are \
shown a document (or an excerpt of a longer one, with cuts marked [...]) and one passage \
taken from it. Write one or two plain sentences, at most 50 words, that place the passage \
in the document: what the document is about and what this passage covers within it. Name \
the subjects, entities and terms that the passage leaves implicit. Reply with those \
sentences only: no preamble, no quotation marks, no markdown.";

/// How to contextualize chunks at ingest.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextualizeOptions {
    /// The chat endpoint and model (retries, backoff and timeout come from here; when
    /// `max_tokens` is unset, generation is capped at 150 tokens).
    pub chat: ChatConfig,
    /// Requests in flight at once (0: [`ChatConfig::max_concurrency`]).
    pub concurrency: usize,
    /// Characters of the document shown with each chunk: the whole document when it is
    /// shorter, else a window around the chunk ([`document_window`]).
    pub doc_chars: usize,
    /// Cap on each context in tokens of the embedding model (characters / 4 without a
    /// local tokenizer). The token chunkers leave this many tokens free in every chunk,
    /// so header + context + chunk still fit the embedding model.
    pub max_tokens: usize,
}

impl ContextualizeOptions {
    /// Defaults around a chat config: its concurrency, a 16,000-character window,
    /// contexts of at most 64 model tokens.
    pub fn new(chat: ChatConfig) -> Self {
        ContextualizeOptions {
            chat,
            concurrency: 0,
            doc_chars: DEFAULT_DOC_CHARS,
            max_tokens: DEFAULT_CONTEXT_TOKENS,
        }
    }

    /// What the index records about these contexts.
    pub fn index_config(&self) -> ContextualizerConfig {
        ContextualizerConfig {
            model: self.chat.endpoint.model.trim().to_string(),
            prompt_version: PROMPT_VERSION,
            max_tokens: self.max_tokens,
        }
    }
}

/// The cache key of a chunk's context: everything the prompt is made of (model, prompt
/// version, window size, the document through its content hash, the chunk through its
/// position and text).
pub fn cache_key(opts: &ContextualizeOptions, doc: &Document, chunk: &Chunk) -> String {
    content_hash(&[
        opts.chat.endpoint.model.trim().as_bytes(),
        &PROMPT_VERSION.to_le_bytes(),
        &(opts.doc_chars as u64).to_le_bytes(),
        doc.hash.as_bytes(),
        &(chunk.range.byte_start as u64).to_le_bytes(),
        chunk.range.slice(&doc.text).as_bytes(),
    ])
}

/// The part of `doc`'s text shown with `chunk`: the whole text when it has at most
/// `limit` characters; otherwise `limit` characters around the chunk, starting at a
/// multiple of `limit / 2` (so neighbouring chunks share a window, and an endpoint's
/// prompt-prefix cache can serve them), with `[...]` marking each cut.
pub fn document_window(doc: &Document, idx: &CharIndex<'_>, chunk: &Chunk, limit: usize) -> String {
    let n = idx.char_len();
    let limit = limit.max(1);
    if n <= limit {
        return doc.text.to_string();
    }
    let step = (limit / 2).max(1);
    let mid = (chunk.range.char_start + chunk.range.char_end) / 2;
    let ideal = mid.saturating_sub(limit / 2);
    let start = ((ideal + step / 2) / step * step).min(n - limit);
    let end = start + limit;
    let (Some(a), Some(b)) = (idx.byte_offset(start), idx.byte_offset(end)) else {
        // Offsets come from the same text; fall back to the whole text rather than fail.
        return doc.text.to_string();
    };
    let mut out = String::with_capacity(b - a + 12);
    if start > 0 {
        out.push_str("[...]\n");
    }
    out.push_str(&doc.text[a..b]);
    if end < n {
        out.push_str("\n[...]");
    }
    out
}

/// The user message asking for `chunk`'s context.
pub fn user_prompt(doc: &Document, window: &str, chunk: &Chunk) -> String {
    let title = doc.title.trim();
    let name = if title.is_empty() { &doc.id } else { title };
    format!(
        "Document \"{name}\":\n<document>\n{window}\n</document>\n\nPassage:\n<passage>\n{}\n</passage>",
        chunk.range.slice(&doc.text)
    )
}

/// An answer made fit to index: whitespace runs collapsed to one space, trimmed, then
/// cut after `max_tokens` tokens of `counter` (or `max_tokens * 4` characters without
/// one), backing up to the last space when the cut falls inside a word.
pub fn clean_context(raw: &str, counter: Option<&dyn TokenCounter>, max_tokens: usize) -> String {
    let text = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut = match counter {
        Some(c) => {
            let spans = c.token_spans(&text);
            if spans.len() <= max_tokens {
                return text;
            }
            match max_tokens.checked_sub(1).and_then(|i| spans.get(i)) {
                Some(&(_, end)) => end,
                None => 0,
            }
        }
        None => match text
            .char_indices()
            .nth(max_tokens.saturating_mul(CHARS_PER_TOKEN_ESTIMATE))
        {
            Some((b, _)) => b,
            None => return text,
        },
    };
    let mut cut = cut.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let inside_word = text[cut..]
        .chars()
        .next()
        .is_some_and(|c| !c.is_whitespace())
        && text[..cut]
            .chars()
            .next_back()
            .is_some_and(|c| !c.is_whitespace());
    if inside_word {
        if let Some(space) = text[..cut].rfind(' ') {
            cut = space;
        }
    }
    text[..cut].trim_end().to_string()
}

/// One cached answer, as stored on a line of the cache file.
#[derive(Debug, Serialize, Deserialize)]
struct CacheLine {
    key: String,
    context: String,
    #[serde(default)]
    model: String,
}

/// The on-disk answer cache: loaded whole, appended to.
struct ContextCache {
    path: PathBuf,
    entries: HashMap<String, String>,
    file: Option<fs::File>,
}

impl ContextCache {
    /// Loads `<index>/contextualize/cache.jsonl`, skipping lines that do not parse (a
    /// line torn by a crash, or edited by hand).
    fn open(index_dir: &Path) -> Result<ContextCache, EngineError> {
        let path = index_dir.join(CACHE_DIR).join(CACHE_FILE);
        let mut entries = HashMap::new();
        match fs::File::open(&path) {
            Ok(f) => {
                for line in std::io::BufReader::new(f).split(b'\n') {
                    let line = line.map_err(io_error("reading", &path))?;
                    if let Ok(l) = serde_json::from_slice::<CacheLine>(&line) {
                        entries.insert(l.key, l.context);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error("opening", &path)(e)),
        }
        Ok(ContextCache {
            path,
            entries,
            file: None,
        })
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }

    /// Appends answers and fsyncs. The first append of a session starts on a new line
    /// if the file ends inside one (a torn write), so the torn line is all that is lost.
    fn append(&mut self, lines: &[CacheLine]) -> Result<(), EngineError> {
        if lines.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        if self.file.is_none() {
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir).map_err(io_error("creating", dir))?;
            }
            let mut f = fs::OpenOptions::new()
                .create(true)
                .read(true)
                .append(true)
                .open(&path)
                .map_err(io_error("opening", &path))?;
            let len = f.metadata().map_err(io_error("reading", &path))?.len();
            if len > 0 {
                let mut last = [0u8; 1];
                f.seek(SeekFrom::Start(len - 1))
                    .and_then(|_| f.read_exact(&mut last))
                    .map_err(io_error("reading", &path))?;
                if last[0] != b'\n' {
                    f.write_all(b"\n").map_err(io_error("writing", &path))?;
                }
            }
            self.file = Some(f);
        }
        let mut buf = Vec::new();
        for l in lines {
            // Serialising a struct of strings cannot fail.
            if serde_json::to_writer(&mut buf, l).is_ok() {
                buf.push(b'\n');
            }
        }
        if let Some(f) = self.file.as_mut() {
            f.write_all(&buf).map_err(io_error("writing", &path))?;
            f.sync_data().map_err(io_error("syncing", &path))?;
        }
        for l in lines {
            self.entries.insert(l.key.clone(), l.context.clone());
        }
        Ok(())
    }
}

fn io_error<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> EngineError + 'a {
    move |source| {
        EngineError::Index(IndexError::Io {
            op,
            path: path.to_path_buf(),
            source,
        })
    }
}

/// The ingest step: fills [`Chunk::context`] of every chunk of a batch of documents,
/// from the cache or the LLM.
pub(crate) struct Contextualizer {
    client: ChatClient,
    opts: ContextualizeOptions,
    cache: ContextCache,
}

impl Contextualizer {
    /// A client for `opts.chat` and the cache of `index_dir`.
    pub(crate) fn new(
        opts: &ContextualizeOptions,
        index_dir: &Path,
    ) -> Result<Contextualizer, EngineError> {
        let mut chat = opts.chat.clone();
        chat.max_tokens = chat.max_tokens.or(Some(DEFAULT_LLM_MAX_TOKENS));
        let model = chat.endpoint.model.clone();
        let client = ChatClient::new(chat).map_err(|source| EngineError::Contextualize {
            model: model.clone(),
            source,
        })?;
        Ok(Contextualizer {
            client,
            opts: opts.clone(),
            cache: ContextCache::open(index_dir)?,
        })
    }

    /// Sets the context of every chunk of `docs`. Cached answers are used as they are;
    /// the others are asked in waves of bounded concurrency, each wave's answers cached
    /// before the next starts. The first failed request (after the client's retries)
    /// stops the ingest with [`EngineError::Contextualize`] after its wave: the answers
    /// obtained so far stay cached.
    pub(crate) fn fill(
        &mut self,
        docs: &mut [Document],
        counter: Option<&dyn TokenCounter>,
        cancel: Option<&AtomicBool>,
        report: &mut IngestReport,
        progress: &dyn IngestProgress,
    ) -> Result<(), EngineError> {
        let started = Instant::now();
        // (document, chunk, key) of every chunk the cache cannot answer.
        let mut todo: Vec<(usize, usize, String)> = Vec::new();
        let mut hits = 0;
        for (d, doc) in docs.iter_mut().enumerate() {
            for c in 0..doc.chunks.len() {
                let key = cache_key(&self.opts, doc, &doc.chunks[c]);
                match self.cache.get(&key) {
                    Some(raw) => {
                        doc.chunks[c].context =
                            Some(clean_context(raw, counter, self.opts.max_tokens));
                        hits += 1;
                    }
                    None => todo.push((d, c, key)),
                }
            }
        }
        report.context_cache_hits += hits;
        progress.contexts_done(hits);
        let concurrency = match self.opts.concurrency {
            0 => self.client.config().max_concurrency,
            n => n,
        }
        .max(1);
        let system = Some(SYSTEM_PROMPT.to_string());
        let model = self.client.config().endpoint.model.trim().to_string();
        let mut windows: HashMap<usize, CharIndex<'_>> = HashMap::new();
        let docs_ro: &[Document] = docs;
        let mut answers: Vec<(usize, usize, String)> = Vec::with_capacity(todo.len());
        let mut failure = None;
        for wave in todo.chunks(concurrency * WAVE_PER_WORKER) {
            if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(EngineError::Cancelled);
            }
            let prompts: Vec<(Option<String>, String)> = wave
                .iter()
                .map(|(d, c, _)| {
                    let doc = &docs_ro[*d];
                    let idx = windows
                        .entry(*d)
                        .or_insert_with(|| CharIndex::new(&doc.text));
                    let chunk = &doc.chunks[*c];
                    let window = document_window(doc, idx, chunk, self.opts.doc_chars);
                    (system.clone(), user_prompt(doc, &window, chunk))
                })
                .collect();
            let results = self.client.complete_many(&prompts, concurrency);
            let mut lines = Vec::with_capacity(wave.len());
            for ((d, c, key), result) in wave.iter().zip(results) {
                match result {
                    Ok(r) => {
                        report.llm_prompt_tokens += r.prompt_tokens.unwrap_or(0);
                        report.llm_completion_tokens += r.completion_tokens.unwrap_or(0);
                        report.chunks_contextualized += 1;
                        let context = r.text.split_whitespace().collect::<Vec<_>>().join(" ");
                        answers.push((*d, *c, context.clone()));
                        lines.push(CacheLine {
                            key: key.clone(),
                            context,
                            model: model.clone(),
                        });
                    }
                    Err(source) => {
                        failure.get_or_insert(source);
                    }
                }
            }
            progress.contexts_done(lines.len());
            self.cache.append(&lines)?;
            if let Some(source) = failure.take() {
                report.contextualize_seconds += started.elapsed().as_secs_f64();
                return Err(EngineError::Contextualize { model, source });
            }
        }
        drop(windows);
        for (d, c, raw) in answers {
            if let Some(chunk) = docs.get_mut(d).and_then(|doc| doc.chunks.get_mut(c)) {
                chunk.context = Some(clean_context(&raw, counter, self.opts.max_tokens));
            }
        }
        report.contextualize_seconds += started.elapsed().as_secs_f64();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use excerpt_core::ChunkerConfig;
    use excerpt_ingest::{chunk, load_str, ChunkOptions, DocFormat};

    fn doc(text: &str) -> Document {
        let parsed = load_str(DocFormat::Text, "d.txt", text)
            .unwrap()
            .documents
            .remove(0);
        chunk(
            parsed,
            &ChunkOptions::new(ChunkerConfig::Chars { size: 10 }),
        )
        .unwrap()
    }

    #[test]
    fn windows_cover_the_chunk_and_are_shared() {
        let text: String = (0..200).map(|i| format!("w{i:03} ")).collect();
        let d = doc(&text);
        let idx = CharIndex::new(&d.text);
        assert_eq!(document_window(&d, &idx, &d.chunks[0], 10_000), d.text);
        let mut distinct = std::collections::BTreeSet::new();
        for c in &d.chunks {
            let w = document_window(&d, &idx, c, 100);
            let body = w.trim_start_matches("[...]\n").trim_end_matches("\n[...]");
            assert_eq!(body.chars().count(), 100);
            assert!(d.text.contains(body));
            // The chunk's middle character is inside the window.
            let mid = (c.range.char_start + c.range.char_end) / 2;
            let start = d.text[..d.text.find(body).unwrap()].chars().count();
            assert!(start <= mid && mid < start + 100, "{mid} outside {start}..");
            assert_eq!(w.starts_with("[...]"), start > 0);
            distinct.insert(w);
        }
        // Windows start at multiples of 50 (or at the end): far fewer than chunks.
        assert!(distinct.len() <= d.text.chars().count() / 50 + 1);
        assert!(distinct.len() < d.chunks.len() / 2);
    }

    #[test]
    fn contexts_are_cleaned_and_capped() {
        use excerpt_testkit::WhitespaceCounter as Words;
        assert_eq!(clean_context("  a\n\nb\tc ", Some(&Words), 5), "a b c");
        assert_eq!(
            clean_context("one two three four", Some(&Words), 2),
            "one two"
        );
        assert_eq!(clean_context("one two", Some(&Words), 0), "");
        // Without a tokenizer: 4 characters a token, never inside a word.
        assert_eq!(clean_context("abc defgh ijk", None, 2), "abc");
        assert_eq!(clean_context("ééé ééé", None, 1), "ééé");
        assert_eq!(clean_context("short", None, 2), "short");
    }

    #[test]
    fn keys_change_with_every_input() {
        let chat = ChatConfig::new("http://127.0.0.1:1", "m1");
        let opts = ContextualizeOptions::new(chat);
        let d = doc("alpha beta gamma delta epsilon zeta");
        let k = cache_key(&opts, &d, &d.chunks[0]);
        assert_eq!(k, cache_key(&opts, &d.clone(), &d.chunks[0]));
        assert_ne!(k, cache_key(&opts, &d, &d.chunks[1]));
        let mut other = opts.clone();
        other.chat.endpoint.model = "m2".into();
        assert_ne!(k, cache_key(&other, &d, &d.chunks[0]));
        let mut other = opts.clone();
        other.doc_chars = 10;
        assert_ne!(k, cache_key(&other, &d, &d.chunks[0]));
        let mut changed = d.clone();
        changed.hash.push('x');
        assert_ne!(k, cache_key(&opts, &changed, &d.chunks[0]));
    }

    #[test]
    fn cache_survives_a_torn_line() {
        let tmp = tempfile::tempdir().unwrap();
        let mut c = ContextCache::open(tmp.path()).unwrap();
        let line = |k: &str, v: &str| CacheLine {
            key: k.into(),
            context: v.into(),
            model: "m".into(),
        };
        c.append(&[line("a", "A"), line("b", "B")]).unwrap();
        drop(c);
        // A crash in the middle of a write.
        let path = tmp.path().join(CACHE_DIR).join(CACHE_FILE);
        let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"key":"c","cont"#).unwrap();
        drop(f);
        let mut c = ContextCache::open(tmp.path()).unwrap();
        assert_eq!(
            (c.get("a"), c.get("b"), c.get("c")),
            (Some("A"), Some("B"), None)
        );
        c.append(&[line("d", "D")]).unwrap();
        drop(c);
        let c = ContextCache::open(tmp.path()).unwrap();
        assert_eq!(
            (c.get("a"), c.get("d"), c.get("c")),
            (Some("A"), Some("D"), None)
        );
    }
}
