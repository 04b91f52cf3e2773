//! `window`: a dynamic semantic window at sentence granularity, grown from the sentence
//! of each hit most similar to the query while neighbouring sentences stay similar.
//!
//! For the hits in rank order (at most `max_hits`), until the budget is full:
//!
//! 1. The **seed** is the sentence overlapping the hit chunk that is most similar to the
//!    query (`argmax cos(sentence, query)`, ties: the earlier sentence).
//! 2. The window grows **left** one sentence at a time while
//!    `cos(neighbour, current left edge) ≥ threshold` (and, with `query_threshold`,
//!    `cos(neighbour, query) ≥ query_threshold`), at most `max_expand` sentences; then
//!    **right** the same way.
//! 3. The window (from the start of its first sentence to the end of its last) is offered
//!    to the budget; windows that overlap or touch merge into one piece (never dropped as
//!    duplicates); one that does not fit is skipped.
//!
//! Hits are taken in waves of eight: the sentences a wave can need (those overlapping its
//! hit chunks, plus `max_expand` on each side) are read from the index when it stores
//! sentence vectors ([`crate::Corpus::sentence_vector`], `ingest --sentence-vectors`);
//! those it lacks that no earlier wave embedded go to **one** `embed` call, identical
//! texts once; expansion stops once the budget is full, so small
//! budgets embed little. The query vector is the request's, or `embed_query` of the query
//! when there is none.
//!
//! Without an embedder the strategy falls back to `adjacent` with `±fallback_window`
//! chunks (decay 0.8, hits first) and says so in a note.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use excerpt_core::Embedder;

use crate::context::AssembleRequest;
use crate::error::{check_min, check_range, invalid, ContextError};
use crate::selection::{chunk_span, cosine, Assembler, RHit, Selection};
use crate::strategies::adjacent::{adjacent, AdjacentParams};

/// Parameters of [`Strategy::Window`](crate::Strategy::Window).
///
/// For each of the top `max_hits` hits: the seed is the sentence of the hit chunk most
/// similar to the query; the window grows left (then right) one sentence at a time while
/// `cos(neighbour, current edge sentence) ≥ threshold` (and, when set,
/// `cos(neighbour, query) ≥ query_threshold`), at most `max_expand` sentences per side.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WindowParams {
    /// Minimum cosine between a neighbour and the window's edge sentence, in [−1, 1].
    /// Default 0.3, chosen on the development set (QMSum, all-MiniLM-L6-v2): 0.3 beat
    /// 0.5 on recall at every budget (0.177 against 0.127 at 4000 tokens, docs/EVAL.md);
    /// a threshold as high as 0.75 almost never lets a window grow with MiniLM-class
    /// models. Tune it on your data.
    pub threshold: f32,
    /// Optional query guidance: neighbours must also have `cos(neighbour, query) ≥` this
    /// (default none).
    pub query_threshold: Option<f32>,
    /// Sentences added at most per side (default 3).
    pub max_expand: usize,
    /// Hits expanded at most, best first (default 100); expansion also stops when the
    /// budget is full.
    pub max_hits: usize,
    /// Without an embedder: chunks taken on each side of a hit, as `adjacent` (default 1).
    pub fallback_window: usize,
    /// Where windows start: `chunk` (default: the best sentence of each retrieved chunk)
    /// or `sentence` (sentences retrieved directly: every sentence of the documents of the
    /// best hits ranked by its stored vector's similarity to the query; needs
    /// `ingest --sentence-vectors`, else falls back to `chunk` with a note).
    pub seeds: WindowSeeds,
    /// How windows grow: `similarity` (default: while neighbours stay similar) or `fixed`
    /// (exactly `max_expand` sentences each side, no test: `max_expand=1` is the fixed
    /// 3-sentence window the design compares against).
    pub expand: WindowExpand,
}

/// Where `window` starts its windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSeeds {
    /// The sentence of each retrieved chunk most similar to the query.
    #[default]
    Chunk,
    /// Sentences ranked directly by similarity to the query.
    Sentence,
}

/// How `window` grows its windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowExpand {
    /// While the neighbour stays similar to the window's edge (and to the query, with
    /// `query_threshold`).
    #[default]
    Similarity,
    /// A fixed number of sentences on each side.
    Fixed,
}

impl Default for WindowParams {
    fn default() -> Self {
        WindowParams {
            threshold: 0.3,
            query_threshold: None,
            max_expand: 3,
            max_hits: 100,
            fallback_window: 1,
            seeds: WindowSeeds::Chunk,
            expand: WindowExpand::Similarity,
        }
    }
}

impl WindowParams {
    /// Thresholds in [−1, 1], `max_expand ≤ 64`, `max_hits ≥ 1`, `fallback_window ≤ 32`.
    pub fn validate(&self) -> Result<(), ContextError> {
        check_range("window", "threshold", self.threshold, -1.0, 1.0)?;
        if let Some(q) = self.query_threshold {
            check_range("window", "query_threshold", q, -1.0, 1.0)?;
        }
        if self.max_expand > 64 {
            return Err(invalid(
                "window",
                "max_expand",
                format!("must be <= 64, got {}", self.max_expand),
            ));
        }
        if self.fallback_window > 32 {
            return Err(invalid(
                "window",
                "fallback_window",
                format!("must be <= 32, got {}", self.fallback_window),
            ));
        }
        check_min("window", "max_hits", self.max_hits, 1)
    }
}

impl Assembler for WindowParams {
    fn assemble(
        &self,
        hits: &[RHit],
        req: &AssembleRequest<'_>,
        sel: &mut Selection<'_>,
        notes: &mut Vec<String>,
    ) -> Result<(), ContextError> {
        if self.seeds == WindowSeeds::Sentence
            && (req.query_vector.is_some() || req.embedder.is_some())
            && sentence_seeded(self, hits, req, sel, notes)?
        {
            return Ok(());
        }
        window(self, hits, req, sel, notes)
    }
}

/// Hits expanded per embedding call.
const WAVE: usize = 8;
/// Below this many tokens left (and something taken), expansion stops.
const MIN_USEFUL_TOKENS: usize = 8;

/// Whether expansion can stop: nothing left, or too little for a useful window once
/// something has been taken.
fn budget_spent(sel: &Selection<'_>) -> bool {
    sel.remaining() == 0 || (sel.remaining() < MIN_USEFUL_TOKENS && !sel.is_empty())
}

/// The window grown around sentence `seed` of a document of `len` sentences: at most
/// `max_expand` sentences each side, each accepted while it stays similar to the window's
/// edge (and to the query, with `query_threshold`), or unconditionally with
/// `expand = fixed`. A sentence without a vector stops the growth on its side.
fn grow<'v>(
    p: &WindowParams,
    seed: usize,
    len: usize,
    query: &[f32],
    vec_of: impl Fn(usize) -> Option<Cow<'v, [f32]>>,
) -> (usize, usize) {
    let accept = |edge: usize, nb: usize| -> bool {
        if p.expand == WindowExpand::Fixed {
            return true;
        }
        let (Some(ve), Some(vn)) = (vec_of(edge), vec_of(nb)) else {
            return false;
        };
        cosine(&vn, &ve) >= p.threshold
            && p.query_threshold.is_none_or(|qt| cosine(&vn, query) >= qt)
    };
    let mut left = seed;
    for _ in 0..p.max_expand {
        if left == 0 || !accept(left, left - 1) {
            break;
        }
        left -= 1;
    }
    let mut right = seed;
    for _ in 0..p.max_expand {
        if right + 1 >= len || !accept(right, right + 1) {
            break;
        }
        right += 1;
    }
    (left, right)
}

/// `window`: each of the best hits seeds a window at its sentence most similar to the
/// query, grown while neighbours stay similar ([`grow`]); hits are taken in rank order,
/// in waves of [`WAVE`] whose sentence vectors are read or embedded together
/// ([`WaveVectors::load`]), until the budget is (nearly) full.
fn window(
    p: &WindowParams,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    notes: &mut Vec<String>,
) -> Result<(), ContextError> {
    let Some(embedder) = req.embedder else {
        notes.push(format!(
            "window: no embedder, fell back to adjacent chunks (±{})",
            p.fallback_window
        ));
        let ap = AdjacentParams {
            window: p.fallback_window,
            decay: 0.8,
            max_hits: p.max_hits,
            hits_first: true,
        };
        adjacent(&ap, hits, req, sel, notes);
        return Ok(());
    };
    let query: Vec<f32> = match req.query_vector {
        Some(q) => q.to_vec(),
        None => embedder.embed_query(req.query)?,
    };
    let top = &hits[..hits.len().min(p.max_hits)];

    // Hits are expanded in rank order, in waves of WAVE hits: each wave embeds the
    // sentences it can reach that no earlier wave embedded (one `embed` call, identical
    // texts once), then grows its windows and offers them to the budget. Waves stop when
    // the budget is (nearly) full, so a small budget embeds only what it can use.
    let mut vecs = WaveVectors::default();
    let (mut grown, mut expanded) = (0usize, 0usize);
    for wave in top.chunks(WAVE) {
        if budget_spent(sel) {
            break;
        }
        let plan = vecs.load(p, wave, req, embedder, &query)?;
        for &(h, s0, s1) in &plan {
            if budget_spent(sel) {
                break;
            }
            expanded += 1;
            grown += expand(p, h, (s0, s1), req, sel, &query, &vecs);
        }
    }
    notes.push(format!(
        "window: {expanded} hit(s) expanded, threshold {}, max_expand {}: {} sentence vector(s) read from the index, {} sentence(s) embedded in {} call(s), windows grew by {grown} sentence(s)",
        p.threshold,
        p.max_expand,
        vecs.stored,
        vecs.embedded,
        vecs.calls,
    ));
    Ok(())
}

/// The sentence vectors the windows can reach, gathered wave by wave: read from the
/// index when it stores them, else embedded, each distinct text once.
#[derive(Default)]
struct WaveVectors {
    /// (document, sentence) → position in `store`.
    vectors: BTreeMap<(u32, usize), usize>,
    store: Vec<Vec<f32>>,
    /// Embedded text → position in `store`.
    by_text: BTreeMap<String, usize>,
    /// Vectors read from the index.
    stored: usize,
    /// Sentences embedded.
    embedded: usize,
    /// Calls to the embedder.
    calls: usize,
}

impl WaveVectors {
    /// The vector of sentence `i` of document `d`, when gathered.
    fn get(&self, d: u32, i: usize) -> Option<&Vec<f32>> {
        self.vectors.get(&(d, i)).and_then(|&k| self.store.get(k))
    }

    /// Plans one wave: each hit with the sentences `[s0, s1)` overlapping its chunk, after
    /// gathering the vectors of every sentence within `max_expand` of them (one `embed`
    /// call for those the index lacks).
    fn load(
        &mut self,
        p: &WindowParams,
        wave: &[RHit],
        req: &AssembleRequest<'_>,
        embedder: &dyn Embedder,
        query: &[f32],
    ) -> Result<Vec<(RHit, usize, usize)>, ContextError> {
        let mut plan = Vec::with_capacity(wave.len());
        let mut texts: Vec<&str> = Vec::new();
        let mut pending: Vec<((u32, usize), usize)> = Vec::new();
        let mut wave_text: BTreeMap<&str, usize> = BTreeMap::new();
        for h in wave {
            let Some(doc) = req.corpus.document(h.key.doc) else {
                continue;
            };
            let c = doc.chunks[h.key.ordinal as usize].range;
            let s0 = doc
                .sentences
                .partition_point(|s| s.byte_end <= c.byte_start);
            let s1 = doc.sentences.partition_point(|s| s.byte_start < c.byte_end);
            if s0 < s1 {
                let lo = s0.saturating_sub(p.max_expand);
                let hi = s1.saturating_add(p.max_expand).min(doc.sentences.len());
                for i in lo..hi {
                    let key = (h.key.doc, i);
                    if self.vectors.contains_key(&key) {
                        continue;
                    }
                    if let Some(v) = req.corpus.sentence_vector(h.key.doc, i) {
                        if v.len() != query.len() {
                            return Err(ContextError::DimensionMismatch {
                                what: "stored sentence vector",
                                expected: query.len(),
                                got: v.len(),
                            });
                        }
                        self.vectors.insert(key, self.store.len());
                        self.store.push(v.into_owned());
                        self.stored += 1;
                        continue;
                    }
                    let t = doc.sentences[i].slice(&doc.text);
                    if let Some(&k) = self.by_text.get(t) {
                        self.vectors.insert(key, k);
                        continue;
                    }
                    let slot = *wave_text.entry(t).or_insert_with(|| {
                        texts.push(t);
                        texts.len() - 1
                    });
                    self.vectors.insert(key, usize::MAX);
                    pending.push((key, slot));
                }
            }
            plan.push((*h, s0, s1));
        }
        if !texts.is_empty() {
            let got = embedder.embed(&texts)?;
            self.calls += 1;
            if got.len() != texts.len() {
                return Err(ContextError::EmbedCount {
                    expected: texts.len(),
                    got: got.len(),
                });
            }
            if let Some(v) = got.iter().find(|v| v.len() != query.len()) {
                return Err(ContextError::DimensionMismatch {
                    what: "sentence vector",
                    expected: query.len(),
                    got: v.len(),
                });
            }
            self.embedded += texts.len();
            let base = self.store.len();
            for (t, v) in texts.iter().zip(got) {
                self.by_text.insert((*t).to_string(), self.store.len());
                self.store.push(v);
            }
            for (key, slot) in pending {
                self.vectors.insert(key, base + slot);
            }
        }
        Ok(plan)
    }
}

/// Offers hit `h`'s window to `sel`: seeded at its sentence (of `[s0, s1)`) most similar
/// to the query and grown by [`grow`], or the chunk itself without sentences. Returns
/// how many sentences the window grew by.
fn expand(
    p: &WindowParams,
    h: RHit,
    (s0, s1): (usize, usize),
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    query: &[f32],
    vecs: &WaveVectors,
) -> usize {
    let d = h.key.doc;
    let Some(doc) = req.corpus.document(d) else {
        return 0;
    };
    let o = h.key.ordinal as usize;
    if s0 >= s1 {
        // No sentence information: the chunk itself.
        sel.try_add(
            d,
            doc,
            chunk_span(doc, o, o),
            h.score,
            h.relevance,
            &[h.key.ordinal],
        );
        return 0;
    }
    let mut seed = s0;
    let mut best = f32::NEG_INFINITY;
    for i in s0..s1 {
        let c = vecs
            .get(d, i)
            .map_or(f32::NEG_INFINITY, |v| cosine(v, query));
        if c > best {
            best = c;
            seed = i;
        }
    }
    let (left, right) = grow(p, seed, doc.sentences.len(), query, |i| {
        vecs.get(d, i).map(|v| Cow::Borrowed(v.as_slice()))
    });
    let range = doc.sentences[left].cover(&doc.sentences[right]);
    sel.try_add(d, doc, range, h.score, h.relevance, &[h.key.ordinal]);
    (seed - left) + (right - seed)
}

/// How many documents of the best hits `seeds = sentence` searches.
const SEED_DOCS: usize = 10;

/// `seeds = sentence`: every sentence of the documents of the best hits (at most
/// [`SEED_DOCS`]) ranked by its stored vector's similarity to the query; the best
/// `max_hits` grow into windows in that order (a seed inside an earlier window adds
/// nothing: windows merge). `false` (nothing added) when a sentence of those documents
/// has no stored vector.
fn sentence_seeded(
    p: &WindowParams,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    notes: &mut Vec<String>,
) -> Result<bool, ContextError> {
    let mut docs: Vec<u32> = Vec::new();
    for h in hits {
        if docs.len() == SEED_DOCS {
            break;
        }
        if !docs.contains(&h.key.doc) {
            docs.push(h.key.doc);
        }
    }
    let query: Vec<f32> = match (req.query_vector, req.embedder) {
        (Some(q), _) => q.to_vec(),
        (None, Some(e)) => e.embed_query(req.query)?,
        (None, None) => return Ok(false),
    };
    // (similarity, doc, sentence), every sentence of the candidate documents.
    let mut seeds: Vec<(f32, u32, usize)> = Vec::new();
    let prepared = excerpt_core::CosineTo::new(&query);
    for &d in &docs {
        let Some(doc) = req.corpus.document(d) else {
            continue;
        };
        for i in 0..doc.sentences.len() {
            match req.corpus.sentence_vector(d, i) {
                Some(v) if v.len() == query.len() => seeds.push((prepared.cosine(&v) as f32, d, i)),
                Some(v) => {
                    return Err(ContextError::DimensionMismatch {
                        what: "stored sentence vector",
                        expected: query.len(),
                        got: v.len(),
                    })
                }
                None => {
                    notes.push(
                        "window: sentence seeds need stored sentence vectors (ingest --sentence-vectors); seeded from chunks instead".into(),
                    );
                    return Ok(false);
                }
            }
        }
    }
    seeds.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut grown = 0usize;
    let mut expanded = 0usize;
    for &(sim, d, seed) in seeds.iter().take(p.max_hits) {
        if budget_spent(sel) {
            break;
        }
        let Some(doc) = req.corpus.document(d) else {
            continue;
        };
        let (left, right) = grow(p, seed, doc.sentences.len(), &query, |i| {
            req.corpus.sentence_vector(d, i)
        });
        expanded += 1;
        grown += right - left;
        let range = doc.sentences[left].cover(&doc.sentences[right]);
        // The retrieved chunks the window overlaps are its hits.
        let overlapped: Vec<u32> = hits
            .iter()
            .filter(|h| h.key.doc == d)
            .map(|h| h.key.ordinal)
            .filter(|&o| {
                let c = doc.chunks[o as usize].range;
                c.byte_start < range.byte_end && range.byte_start < c.byte_end
            })
            .collect();
        let relevance = sim.clamp(0.0, 1.0);
        sel.try_add(d, doc, range, sim, relevance, &overlapped);
    }
    notes.push(format!(
        "window: {expanded} sentence seed(s) of {} in {} document(s), {} growth, windows grew by {grown} sentence(s)",
        seeds.len(),
        docs.len(),
        match p.expand {
            WindowExpand::Similarity => "similarity",
            WindowExpand::Fixed => "fixed",
        }
    ));
    Ok(true)
}
