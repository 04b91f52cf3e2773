//! Test fixtures: an in-memory corpus, a word-count LLM tokenizer and a deterministic
//! bag-of-words hashing embedder (a stand-in for the real model, which is exercised in
//! the integration tests of other crates).
#![allow(dead_code)]

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use excerpt_context::{Context, Corpus, Hit, LlmTokens, PieceOrder};
use excerpt_core::{
    CharIndex, Chunk, ChunkKey, Derived, Document, EmbedError, Embedder, Section, TextRange,
};

/// One chunk of a test document: its sentences, and whether a section (of `level`, with
/// `heading`) starts at it.
#[derive(Debug, Clone)]
pub struct ChunkSpec {
    pub sentences: Vec<String>,
    pub section: Option<(u8, String)>,
}

pub fn chunk(sentences: &[&str]) -> ChunkSpec {
    ChunkSpec {
        sentences: sentences.iter().map(|s| s.to_string()).collect(),
        section: None,
    }
}

pub fn sec(level: u8, heading: &str, sentences: &[&str]) -> ChunkSpec {
    ChunkSpec {
        section: Some((level, heading.to_string())),
        ..chunk(sentences)
    }
}

/// Builds a valid document: sentences partition the text, chunks are groups of whole
/// sentences, sections start at chunks.
pub fn build_doc(id: &str, title: &str, specs: &[ChunkSpec]) -> Document {
    let mut text = String::new();
    let mut sent_bytes = Vec::new();
    let mut chunk_bytes = Vec::new();
    for c in specs {
        let cs = text.len();
        for s in &c.sentences {
            let ss = text.len();
            text.push_str(s);
            sent_bytes.push((ss, text.len()));
        }
        chunk_bytes.push((cs, text.len()));
    }
    let idx = CharIndex::new(&text);
    let r = |a: usize, b: usize| -> TextRange { idx.range(a, b).expect("valid range") };
    // Sections.
    let starts: Vec<(usize, u8, String)> = specs
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.section.clone().map(|(l, h)| (i, l, h)))
        .collect();
    let mut sections: Vec<Section> = Vec::new();
    for (k, (ci, level, heading)) in starts.iter().enumerate() {
        let start = chunk_bytes[*ci].0;
        let own_end = starts.get(k + 1).map_or(text.len(), |s| chunk_bytes[s.0].0);
        let range_end = starts[k + 1..]
            .iter()
            .find(|s| s.1 <= *level)
            .map_or(text.len(), |s| chunk_bytes[s.0].0);
        let parent = (0..k)
            .rev()
            .find(|&j| starts[j].1 < *level && sections[j].range.byte_end >= range_end);
        let mut path = parent.map_or_else(Vec::new, |p| sections[p].path.clone());
        path.push(heading.clone());
        sections.push(Section {
            heading: heading.clone(),
            level: *level,
            path,
            range: r(start, range_end),
            own: r(start, own_end),
            parent: parent.map(|p| p as u32),
        });
    }
    let chunks = chunk_bytes
        .iter()
        .enumerate()
        .map(|(i, &(a, b))| Chunk {
            ordinal: i as u32,
            range: r(a, b),
            section: starts.iter().rposition(|s| s.0 <= i).map(|k| k as u32),
            tokens: 0,
            context: None,
        })
        .collect();
    let doc = Document {
        id: id.to_string(),
        title: title.to_string(),
        source: None,
        metadata: Default::default(),
        text: text.clone().into(),
        hash: String::new(),
        sections,
        chunks,
        sentences: sent_bytes.iter().map(|&(a, b)| r(a, b)).collect(),
        pages: Vec::new(),
    };
    doc.validate().expect("test document is valid");
    doc
}

/// An in-memory corpus; chunk vectors from the hashing embedder.
#[derive(Debug)]
pub struct TestCorpus {
    pub docs: Vec<Document>,
    pub vectors: BTreeMap<ChunkKey, Vec<f32>>,
    /// Stored sentence vectors (none unless [`TestCorpus::with_sentence_vectors`]).
    pub sentence_vectors: BTreeMap<(u32, usize), Vec<f32>>,
    /// What assembly derives from the documents.
    pub derived: Derived,
}

impl TestCorpus {
    pub fn new(docs: Vec<Document>) -> Self {
        let e = HashEmbedder::default();
        let mut vectors = BTreeMap::new();
        for (d, doc) in docs.iter().enumerate() {
            for c in &doc.chunks {
                vectors.insert(
                    ChunkKey::new(d as u32, c.ordinal),
                    e.vector(c.range.slice(&doc.text)),
                );
            }
        }
        TestCorpus {
            docs,
            vectors,
            sentence_vectors: BTreeMap::new(),
            derived: Derived::new(),
        }
    }

    /// Stores a hash-embedder vector for every sentence, as `ingest --sentence-vectors`.
    pub fn with_sentence_vectors(mut self) -> Self {
        let e = HashEmbedder::default();
        for (d, doc) in self.docs.iter().enumerate() {
            for (i, s) in doc.sentences.iter().enumerate() {
                self.sentence_vectors
                    .insert((d as u32, i), e.vector(s.slice(&doc.text)));
            }
        }
        self
    }
}

impl Corpus for TestCorpus {
    fn document(&self, doc: u32) -> Option<&Document> {
        self.docs.get(doc as usize)
    }
    fn chunk_vector(&self, key: ChunkKey) -> Option<&[f32]> {
        self.vectors.get(&key).map(Vec::as_slice)
    }
    fn sentence_vector(&self, doc: u32, sentence: usize) -> Option<Cow<'_, [f32]>> {
        self.sentence_vectors
            .get(&(doc, sentence))
            .map(|v| Cow::Borrowed(v.as_slice()))
    }
    fn derived(&self) -> &Derived {
        &self.derived
    }
}

/// One token per whitespace-separated word.
pub struct WordTokens;

impl LlmTokens for WordTokens {
    fn count(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
    fn name(&self) -> &str {
        "words"
    }
}

/// Bag of words hashed (FNV-1a) into 64 dimensions, L2-normalised. Counts `embed` calls.
#[derive(Default)]
pub struct HashEmbedder {
    pub calls: AtomicUsize,
    pub texts: AtomicUsize,
}

impl HashEmbedder {
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; 64];
        for w in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let mut h: u64 = 0xcbf29ce484222325;
            for b in w.to_lowercase().bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x100000001b3);
            }
            v[(h % 64) as usize] += 1.0;
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if n > 0.0 {
            v.iter_mut().for_each(|x| *x /= n);
        }
        v
    }
}

impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        "test-hash-64"
    }
    fn dimension(&self) -> usize {
        64
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}

pub fn hit(doc: u32, ordinal: u32, score: f32) -> Hit {
    Hit::new(ChunkKey::new(doc, ordinal), score, score)
}

/// Checks every invariant of the assembly contract; `sentence_aligned` for `window`.
pub fn check_invariants(
    ctx: &Context,
    corpus: &TestCorpus,
    hits: &[Hit],
    budget: usize,
    tokens: &dyn LlmTokens,
    sentence_aligned: bool,
) -> Result<(), String> {
    let total: usize = ctx.pieces.iter().map(|p| p.tokens).sum();
    if total != ctx.tokens {
        return Err(format!("ctx.tokens {} != sum {}", ctx.tokens, total));
    }
    if total > budget {
        return Err(format!("over budget: {total} > {budget}"));
    }
    if hits.is_empty() && !ctx.pieces.is_empty() {
        return Err("pieces without hits".into());
    }
    let mut seen_docs: Vec<&str> = Vec::new();
    let mut last_doc: Option<&str> = None;
    let mut prev_end: Option<usize> = None;
    let mut prev_score: Option<f32> = None;
    for p in &ctx.pieces {
        let (d, doc) = corpus
            .docs
            .iter()
            .enumerate()
            .find(|(_, d)| d.id == p.doc_id)
            .ok_or_else(|| format!("unknown doc {}", p.doc_id))?;
        // Grouping and reading order (document order), or scores never rising.
        if ctx.order == PieceOrder::Score {
            if let Some(prev) = prev_score {
                if p.score > prev {
                    return Err(format!("score order broken: {} after {prev}", p.score));
                }
            }
            prev_score = Some(p.score);
            // Pieces of one document never overlap, and touch only where a line ends
            // (score order keeps each line's text apart).
            let same_doc = ctx.pieces.iter().filter(|q| q.doc_id == p.doc_id);
            for q in same_doc.filter(|q| !std::ptr::eq(*q, p)) {
                let line_break = (q.end == p.start && q.text.ends_with('\n'))
                    || (p.end == q.start && p.text.ends_with('\n'));
                if q.start <= p.end && p.start <= q.end && !line_break {
                    return Err(format!("pieces overlap or touch in {}", p.doc_id));
                }
            }
        } else if last_doc != Some(p.doc_id.as_str()) {
            if seen_docs.contains(&p.doc_id.as_str()) {
                return Err(format!("doc {} not contiguous", p.doc_id));
            }
            seen_docs.push(&p.doc_id);
            last_doc = Some(&p.doc_id);
            prev_end = None;
        }
        if let (PieceOrder::Document, Some(e)) = (ctx.order, prev_end) {
            if p.start <= e {
                return Err(format!(
                    "pieces overlap or touch in {}: {} <= {}",
                    p.doc_id, p.start, e
                ));
            }
        }
        prev_end = Some(p.end);
        // Exact slice.
        let idx = CharIndex::new(&doc.text);
        let r = idx
            .range_chars(p.start, p.end)
            .map_err(|e| format!("bad offsets: {e}"))?;
        if r.slice(&doc.text) != p.text {
            return Err(format!("text mismatch at {}..{}", p.start, p.end));
        }
        if p.text.is_empty() {
            return Err("empty piece".into());
        }
        if tokens.count(&p.text) != p.tokens {
            return Err("piece token count wrong".into());
        }
        let (f, l) = (p.first_chunk as usize, p.last_chunk as usize);
        let (Some(fc), Some(lc)) = (doc.chunks.get(f), doc.chunks.get(l)) else {
            return Err("chunk out of range".into());
        };
        if sentence_aligned {
            let starts_in_first = fc.range.char_start <= p.start && p.start < fc.range.char_end;
            let ends_in_last = lc.range.char_start < p.end && p.end <= lc.range.char_end;
            if !(starts_in_first && ends_in_last) {
                return Err("window piece chunk range wrong".into());
            }
            if !doc.sentences.iter().any(|s| s.char_start == p.start)
                || !doc.sentences.iter().any(|s| s.char_end == p.end)
            {
                return Err("window piece not on sentence boundaries".into());
            }
        } else if fc.range.char_start != p.start || lc.range.char_end != p.end {
            return Err(format!(
                "piece {}..{} not on chunk boundaries {f}..={l}",
                p.start, p.end
            ));
        }
        if p.title != excerpt_core::shown_title(&doc.title)
            || p.section != excerpt_core::shown_section(&doc.section_path(fc.section))
        {
            return Err("title/section wrong".into());
        }
        for &h in &p.hits {
            if h < p.first_chunk || h > p.last_chunk {
                return Err("hit ordinal outside piece".into());
            }
            if !hits.iter().any(|x| x.key == ChunkKey::new(d as u32, h)) {
                return Err("piece hit is not a hit".into());
            }
        }
        if !(0.0..=1.0).contains(&p.relevance) {
            return Err(format!("relevance {} outside [0,1]", p.relevance));
        }
    }
    // Documents ordered by best piece score.
    let bests: Vec<f32> = seen_docs
        .iter()
        .map(|id| {
            ctx.pieces
                .iter()
                .filter(|p| &p.doc_id == id)
                .map(|p| p.score)
                .fold(f32::NEG_INFINITY, f32::max)
        })
        .collect();
    if bests.windows(2).any(|w| w[0] < w[1]) {
        return Err(format!("documents not ordered by best score: {bests:?}"));
    }
    Ok(())
}
