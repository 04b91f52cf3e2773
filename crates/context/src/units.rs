//! Sentence units for `rse`: segments that start and end on sentences, so a small budget
//! can hold several short passages from several places instead of one whole chunk.
//!
//! # Unit values
//!
//! Retrieval ranks chunks; a chunk's relevance is shared by its sentences in proportion to
//! how much of the query each sentence carries lexically:
//!
//! ```text
//! r(sentence) = r(chunk) · (floor + (1 − floor) · lex(sentence))
//! v(sentence) = (r(sentence) − threshold) · chars(sentence) / mean chars(chunk)
//! ```
//!
//! `r(chunk)` is the chunk's rank-damped relevance, exactly as chunk-level `rse` values it
//! (retrieved: `relevance · exp(−rank / rank_decay)`; otherwise the similarity mapped onto
//! the hits' scale). `lex` is a BM25 score of the sentence against the query, computed over
//! the sentences of the retrieved chunks of the candidate documents and divided by the
//! best such score, so it is in `[0, 1]` whatever the corpus. The length weight keeps a
//! segment's value on the chunk scale: a run of sentences covering a whole chunk is worth
//! what the chunk is worth when the sentences are lexically alike. So `threshold`,
//! `min_value` and `max_len_chunks` keep their meaning (in chunk equivalents).
//!
//! Segments are then chosen by [`crate::select_segments_optimal`] (the budget-optimal
//! set), with token counts per sentence.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use excerpt_core::{ChunkKey, Document, TextRange};

use crate::context::AssembleRequest;
use crate::error::ContextError;
use crate::optimal::select_segments_optimal_lazy;
use crate::segments::{DocValues, SegmentParams};
use crate::selection::{cosine, RHit, Selection};

/// What [`rse_sentences`] takes from `rse`'s parameters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentenceParams {
    /// Subtracted from every sentence's relevance.
    pub threshold: f32,
    /// Longest segment, in chunks' worth of sentences.
    pub max_len_chunks: usize,
    /// Smallest segment value selected.
    pub min_value: f32,
    /// Most segments selected.
    pub max_segments: usize,
    /// Share of its chunk's relevance a sentence keeps with no query term.
    pub lexical_floor: f32,
    /// Weight of stored sentence similarity against the lexical score.
    pub dense_weight: f32,
}

/// Chooses sentence segments in the candidate documents and adds them to `sel`.
///
/// `chunk_rel` holds, per candidate document (in document order), every chunk's
/// rank-damped relevance `r(chunk)`; `hits` the retrieved chunks.
pub(crate) fn rse_sentences(
    p: &SentenceParams,
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    notes: &mut Vec<String>,
    chunk_rel: &[(u32, Vec<f32>)],
    hits: &BTreeMap<ChunkKey, &RHit>,
) -> Result<(), ContextError> {
    // Units of every candidate document, and the lexical pool: sentences of hit chunks.
    let mut docs: Vec<(u32, &Document, Vec<Unit>)> = Vec::new();
    let mut pool: Vec<Vec<String>> = Vec::new();
    let mut pool_index: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for (d, _) in chunk_rel {
        let Some(doc) = req.corpus.document(*d) else {
            continue;
        };
        let units = units_of(doc);
        for (i, u) in units.iter().enumerate() {
            if hits.contains_key(&ChunkKey::new(*d, u.chunk as u32)) {
                pool_index.insert((docs.len(), i), pool.len());
                pool.push(terms(u.range.slice(&doc.text)));
            }
        }
        docs.push((*d, doc, units));
    }
    let mut lex = lexical_scores(&terms(req.query), &pool);
    // Stored sentence vectors, when every pooled sentence has one: the sentence's
    // similarity to the query (min-max scaled over the pool) is averaged with its lexical
    // score.
    if let Some(q) = req.query_vector {
        let mut sims = Vec::with_capacity(pool.len());
        for &(di, i) in pool_index.keys() {
            let d = &docs[di].0;
            match req.corpus.sentence_vector(*d, i) {
                Some(v) if v.len() == q.len() => sims.push(cosine(v, q)),
                _ => break,
            }
        }
        if sims.len() == pool.len() && !sims.is_empty() {
            let lo = sims.iter().copied().fold(f32::INFINITY, f32::min);
            let hi = sims.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            for ((_, &k), s) in pool_index.iter().zip(&sims) {
                let d = if hi > lo { (s - lo) / (hi - lo) } else { 0.0 };
                lex[k] = p.dense_weight * d + (1.0 - p.dense_weight) * lex[k];
            }
            notes.push("rse: sentence similarity from stored sentence vectors".into());
        }
    }

    let floor = p.lexical_floor;
    // One reference chunk length for every sentence's weight, so a sentence is worth
    // the same per character in a short chunk as in a long one.
    let (chars, count) = docs.iter().fold((0usize, 0usize), |(c, n), (_, doc, _)| {
        // Chunks partition the text, so the last one ends at its character length
        // (no scan of the text on the query path).
        let len = doc.chunks.last().map_or(0, |c| c.range.char_end);
        (c + len, n + doc.chunks.len())
    });
    let chunk_chars = (chars as f32 / count.max(1) as f32).max(1.0);
    let mut doc_values = Vec::with_capacity(docs.len());
    let mut unit_rel: Vec<Vec<f32>> = Vec::with_capacity(docs.len());
    let (mut units_total, mut chunks_total) = (0usize, 0usize);
    for (di, ((d, doc, units), (_, rels))) in docs.iter().zip(chunk_rel).enumerate() {
        units_total += units.len();
        chunks_total += doc.chunks.len();
        let mut values = Vec::with_capacity(units.len());
        let mut urel = Vec::with_capacity(units.len());
        for (i, u) in units.iter().enumerate() {
            let rc = rels.get(u.chunk).copied().unwrap_or(0.0);
            let l = pool_index.get(&(di, i)).map_or(0.0, |&k| lex[k]);
            let r = rc * (floor + (1.0 - floor) * l);
            let w = u.range.char_len() as f32 / chunk_chars;
            values.push((r - p.threshold) * w);
            urel.push(r);
        }
        let lengths = units
            .iter()
            .map(|u| {
                u32::try_from(req.tokens.lower_bound(u.range.slice(&doc.text))).unwrap_or(u32::MAX)
            })
            .collect();
        doc_values.push(DocValues {
            doc: *d,
            values,
            lengths,
        });
        unit_rel.push(urel);
    }
    // A segment may be as long, in sentences, as `max_len_chunks` chunks are on average.
    let per_chunk = units_total as f64 / chunks_total.max(1) as f64;
    let max_len = ((p.max_len_chunks as f64 * per_chunk).ceil() as usize).max(1);
    let params = SegmentParams {
        max_len_chunks: max_len,
        max_total_tokens: sel.remaining() as u64,
        min_value: p.min_value,
        max_segments: p.max_segments,
    };
    let segments = select_segments_optimal_lazy(&mut doc_values, &params, |i, j| {
        let (_, doc, units) = &docs[i];
        u32::try_from(req.tokens.count(units[j].range.slice(&doc.text))).unwrap_or(u32::MAX)
    })?;
    let by_doc: BTreeMap<u32, usize> = docs.iter().enumerate().map(|(i, d)| (d.0, i)).collect();
    let mut added = 0usize;
    for s in &segments {
        let di = by_doc[&s.doc];
        let (d, doc, units) = &docs[di];
        let range = units[s.start].range.cover(&units[s.end - 1].range);
        let relevance = unit_rel[di][s.start..s.end]
            .iter()
            .copied()
            .fold(0.0f32, f32::max);
        let mut hit_ordinals: Vec<u32> = units[s.start..s.end]
            .iter()
            .map(|u| u.chunk as u32)
            .filter(|&c| hits.contains_key(&ChunkKey::new(*d, c)))
            .collect();
        hit_ordinals.dedup();
        if sel.try_add(*d, doc, range, s.value, relevance, &hit_ordinals) {
            added += 1;
        }
    }
    notes.push(format!(
        "rse: sentence units (lexical floor {floor}), threshold {}, {} candidate document(s), {} segment(s) of at most {max_len} sentences selected, {added} fit",
        p.threshold,
        docs.len(),
        segments.len()
    ));
    Ok(())
}

/// How [`best_sentences`] values sentences (from `topk`'s parameters).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentenceScoring {
    /// Share of its chunk's relevance a sentence keeps with no query term.
    pub floor: f32,
    /// Weight of stored sentence similarity against the lexical score.
    pub dense_weight: f32,
    /// Sentences are cut into clauses of at least this many characters (0: whole).
    pub clause_chars: usize,
    /// Weight of the match of the sentences just before and after on the same line.
    pub neighbour_weight: f32,
    /// Whether a sentence's terms include those of its section's heading path.
    pub heading_terms: bool,
    /// Weight of the match with the request's feedback terms against the query's.
    pub feedback_weight: f32,
}

/// Each candidate's match `s` plus `w` times the matches of the candidates just before
/// and after it on its line, divided by the best such sum (so still in
/// `[0, 1]`). Neighbours are candidates of the same document that touch (no text
/// between them) on one line (a sentence hard-wrapped over several lines is already one
/// candidate, see [`block_spans`]): a sentence in a paragraph about the query rises with
/// its paragraph, where a lone sentence sharing one query word does not.
fn with_neighbours(
    req: &AssembleRequest<'_>,
    cands: &[SentenceHit],
    s: &[f32],
    w: f32,
) -> Vec<f32> {
    // Whether candidate `a` is followed on its line by candidate `b`.
    let joined = |a: &SentenceHit, b: &SentenceHit| -> bool {
        if a.doc != b.doc || a.range.byte_end != b.range.byte_start {
            return false;
        }
        let Some(doc) = req.corpus.document(a.doc) else {
            return false;
        };
        let t = a.range.slice(&doc.text);
        !t[t.trim_end().len()..].contains('\n')
    };
    let mut out: Vec<f32> = s.to_vec();
    for (i, pair) in cands.windows(2).enumerate() {
        if joined(&pair[0], &pair[1]) {
            out[i] += w * s[i + 1];
            out[i + 1] += w * s[i];
        }
    }
    divide_by_max(&mut out);
    out
}

/// The query match `s` of each candidate (term lists `texts`) plus `w` times its match
/// with the weighted feedback terms (BM25 as [`weighted_scores`], divided by the best),
/// divided again by the best sum, so still in `[0, 1]`.
fn with_feedback(feedback: &[(String, f32)], texts: &[Vec<String>], s: &[f32], w: f32) -> Vec<f32> {
    let weighted: Vec<(&str, f64)> = feedback
        .iter()
        .map(|(t, x)| (t.as_str(), f64::from(*x)))
        .collect();
    let e = weighted_scores(&weighted, texts);
    let mut out: Vec<f32> = s.iter().zip(&e).map(|(a, b)| a + w * b).collect();
    divide_by_max(&mut out);
    out
}

/// Divides every value by the largest (nothing when none is above 0).
fn divide_by_max(xs: &mut [f32]) {
    let max = xs.iter().copied().fold(0.0f32, f32::max);
    if max > 0.0 {
        for x in xs {
            *x /= max;
        }
    }
}

/// One sentence of a retrieved chunk, valued for sentence-level `topk`.
#[derive(Debug, Clone)]
pub(crate) struct SentenceHit {
    /// Document position.
    pub doc: u32,
    /// The sentence's index in the document's sentences.
    pub sentence: usize,
    /// The sentence's text range.
    pub range: TextRange,
    /// The pooled chunks it overlaps (the most relevant one values it).
    pub chunks: Vec<u32>,
    /// `r(chunk) · (floor + (1 − floor) · s)`, see [`best_sentences`].
    pub value: f32,
}

/// The sentences of the chunks in `pool` (hits with their rank-damped relevance, best
/// first), valued and sorted best first (ties: document position, then reading order).
///
/// ```text
/// v(sentence) = r(chunk) · (floor + (1 − floor) · s(sentence))
/// ```
///
/// `s` is the sentence's BM25 score against the query over the pooled sentences, divided
/// by the best (see [`lexical_scores`]); with stored sentence vectors for every pooled
/// sentence, it is `dense_weight · d + (1 − dense_weight) · s`, `d` the sentence's cosine
/// to the query min-max scaled over the pool; before that, with `feedback_weight` above 0
/// and feedback terms in the request, `s` also counts that share of the sentence's
/// match with them ([`with_feedback`], terms from [`crate::feedback_terms`]). With
/// `neighbour_weight` `w > 0`, each sentence then also carries its same-line
/// neighbours' match ([`with_neighbours`]).
/// With `heading_terms`, a sentence's terms include those of its chunk's heading path
/// (as chunk headers do for retrieval), so a sentence under a heading that names the
/// query's subject outranks one that merely shares a word with the query elsewhere.
pub(crate) fn best_sentences(
    req: &AssembleRequest<'_>,
    pool: &[(ChunkKey, f32)],
    scoring: &SentenceScoring,
    notes: &mut Vec<String>,
) -> Vec<SentenceHit> {
    let SentenceScoring {
        floor,
        dense_weight,
        clause_chars,
        neighbour_weight,
        heading_terms,
        feedback_weight,
    } = *scoring;
    let mut chunk_rel: BTreeMap<ChunkKey, f32> = BTreeMap::new();
    for &(k, r) in pool {
        chunk_rel.entry(k).or_insert(r);
    }
    let mut docs: Vec<u32> = chunk_rel.keys().map(|k| k.doc).collect();
    docs.dedup();
    let mut cands: Vec<SentenceHit> = Vec::new();
    let mut texts: Vec<Vec<String>> = Vec::new();
    for d in docs {
        let Some(doc) = req.corpus.document(d) else {
            continue;
        };
        let blocks = block_units(doc);
        // Heading terms per section, stemmed once.
        let mut heading: BTreeMap<Option<u32>, Vec<String>> = BTreeMap::new();
        // Only the units that overlap a pooled chunk become candidates, so only those
        // are visited: for each pooled chunk (in reading order), from the unit holding
        // the first sentence that ends inside or after it, to the last unit that
        // starts before its end. A document of thousands of sentences costs what its
        // pooled chunks hold.
        let pooled_ranges: Vec<TextRange> = chunk_rel
            .range(ChunkKey::new(d, 0)..=ChunkKey::new(d, u32::MAX))
            .filter_map(|(k, _)| doc.chunks.get(k.ordinal as usize).map(|c| c.range))
            .collect();
        let unit_end = |i: usize| blocks.get(&i).map_or(i, |&last| last);
        let mut next = 0usize;
        let mut visit: Vec<usize> = Vec::new();
        for chunk in &pooled_ranges {
            let first = doc
                .sentences
                .partition_point(|s| s.byte_end <= chunk.byte_start);
            // The unit holding sentence `first` starts at it, or is the block before it.
            let holder = match blocks.range(..=first).next_back() {
                Some((&a, &b)) if b >= first => a,
                _ => first,
            };
            let mut i = holder.max(next);
            while i < doc.sentences.len() && doc.sentences[i].byte_start < chunk.byte_end {
                visit.push(i);
                i = unit_end(i) + 1;
            }
            next = next.max(i);
        }
        for i in visit {
            // A code block or table is one unit; any other sentence is its own.
            let (range, whole_block) = match blocks.get(&i) {
                Some(&last) => (doc.sentences[i].cover(&doc.sentences[last]), true),
                None => (doc.sentences[i], false),
            };
            let range = &range;
            // The pooled chunks the sentence overlaps; the best one values it.
            let first = doc
                .chunks
                .partition_point(|c| c.range.byte_end <= range.byte_start);
            let pooled: Vec<(u32, f32)> = doc.chunks[first..]
                .iter()
                .take_while(|c| c.range.byte_start < range.byte_end)
                .enumerate()
                .filter_map(|(j, _)| {
                    let o = (first + j) as u32;
                    chunk_rel.get(&ChunkKey::new(d, o)).map(|&r| (o, r))
                })
                .collect();
            if let Some(r) = pooled.iter().map(|p| p.1).reduce(f32::max) {
                let parts = if clause_chars > 0 && !whole_block {
                    clauses(&doc.text, *range, clause_chars)
                } else {
                    vec![*range]
                };
                for part in parts {
                    let mut t = terms(part.slice(&doc.text));
                    if heading_terms {
                        let section = doc.chunks[first].section;
                        t.extend_from_slice(
                            heading
                                .entry(section)
                                .or_insert_with(|| terms(&doc.section_path(section))),
                        );
                    }
                    texts.push(t);
                    cands.push(SentenceHit {
                        doc: d,
                        sentence: i,
                        range: part,
                        chunks: pooled.iter().map(|p| p.0).collect(),
                        value: r,
                    });
                }
            }
        }
    }
    let mut s = lexical_scores(&terms(req.query), &texts);
    if feedback_weight > 0.0 && !req.feedback.is_empty() {
        s = with_feedback(req.feedback, &texts, &s, feedback_weight);
        notes.push(format!(
            "topk: query expanded with {} feedback term(s): {}",
            req.feedback.len(),
            req.feedback
                .iter()
                .map(|(t, _)| t.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    if let Some(q) = req.query_vector {
        let sims: Vec<f32> = cands
            .iter()
            .map_while(|c| {
                req.corpus
                    .sentence_vector(c.doc, c.sentence)
                    .filter(|v| v.len() == q.len())
                    .map(|v| cosine(v, q))
            })
            .collect();
        if sims.len() == cands.len() && !sims.is_empty() {
            let lo = sims.iter().copied().fold(f32::INFINITY, f32::min);
            let hi = sims.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            for (x, d) in s.iter_mut().zip(&sims) {
                let d = if hi > lo { (d - lo) / (hi - lo) } else { 0.0 };
                *x = dense_weight * d + (1.0 - dense_weight) * *x;
            }
            notes.push("topk: sentence similarity from stored sentence vectors".into());
        }
    }
    if neighbour_weight > 0.0 {
        s = with_neighbours(req, &cands, &s, neighbour_weight);
    }
    for (c, x) in cands.iter_mut().zip(&s) {
        c.value *= floor + (1.0 - floor) * x;
    }
    cands.sort_by(|a, b| {
        b.value
            .total_cmp(&a.value)
            .then(a.doc.cmp(&b.doc))
            .then(a.range.byte_start.cmp(&b.range.byte_start))
    });
    cands
}

/// The clauses of sentence `s` of `text`: the sentence cut after a semicolon (and the
/// spaces after it) and before an enumerator such as `(a)`, `(iv)` or `(2)` that follows a
/// space, with pieces shorter than `min_chars` characters joined to their neighbour. The
/// clauses partition the sentence exactly; a sentence without such cuts is one clause.
pub(crate) fn clauses(text: &str, s: TextRange, min_chars: usize) -> Vec<TextRange> {
    let body = s.slice(text);
    // Cut points as (byte offset in body, char offset in body).
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let chars: Vec<(usize, char)> = body.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (b, c) = chars[i];
        if c == ';' {
            let mut j = i + 1;
            while j < chars.len() && chars[j].1.is_whitespace() {
                j += 1;
            }
            if j > i + 1 && j < chars.len() {
                cuts.push((chars[j].0, j));
            }
            i = j;
            continue;
        }
        if c == '(' && i > 0 && chars[i - 1].1.is_whitespace() {
            let inner: String = chars[i + 1..]
                .iter()
                .take(6)
                .map(|x| x.1)
                .take_while(|&x| x != ')')
                .collect();
            let closes = chars
                .get(i + 1 + inner.chars().count())
                .is_some_and(|x| x.1 == ')');
            let enumerator = closes
                && !inner.is_empty()
                && (inner.chars().all(|x| x.is_ascii_digit()) && inner.len() <= 2
                    || inner.len() == 1 && inner.chars().all(|x| x.is_ascii_lowercase())
                    || inner.chars().all(|x| matches!(x, 'i' | 'v' | 'x')) && inner.len() <= 4);
            if enumerator && cuts.last().is_none_or(|&(cb, _)| cb != b) {
                cuts.push((b, i));
            }
        }
        i += 1;
    }
    let total_chars = chars.len();
    let mut bounds: Vec<(usize, usize)> = vec![(0, 0)];
    for cut in cuts {
        let last = *bounds.last().expect("non-empty");
        if cut.1 - last.1 >= min_chars && total_chars - cut.1 >= min_chars {
            bounds.push(cut);
        }
    }
    bounds.push((body.len(), total_chars));
    bounds
        .windows(2)
        .map(|w| TextRange {
            byte_start: s.byte_start + w[0].0,
            byte_end: s.byte_start + w[1].0,
            char_start: s.char_start + w[0].1,
            char_end: s.char_start + w[1].1,
        })
        .collect()
}

/// Longest code block or table, in characters, that sentence-level `topk` takes as one
/// unit; a longer one stays cut into its lines.
const MAX_BLOCK_CHARS: usize = 1500;

/// Documents whose [`block_spans`] are remembered ([`block_units`]).
const UNIT_MEMO_DOCS: usize = 256;

/// A document's identity for [`block_units`]: its content hash (of its text, title,
/// metadata and chunker) and the lengths of what the units are made of.
type UnitKey = (String, usize, usize);

/// Recently used documents' block units, and a use counter for eviction.
type UnitMemo = (HashMap<UnitKey, (Arc<BTreeMap<usize, usize>>, u64)>, u64);

static UNIT_MEMO: Mutex<Option<UnitMemo>> = Mutex::new(None);

/// [`block_spans`] of `doc`, remembered for the [`UNIT_MEMO_DOCS`] documents used last.
/// Finding the units reads the whole text (about 10 ms for an annual report of half a
/// million characters) while a query reads a few chunks of it, and the same documents
/// come back query after query. The result depends on the document alone, so
/// remembering it changes no output. Documents without a content hash are not
/// remembered.
pub(crate) fn block_units(doc: &Document) -> Arc<BTreeMap<usize, usize>> {
    if doc.hash.is_empty() {
        return Arc::new(block_spans(doc));
    }
    let key: UnitKey = (doc.hash.clone(), doc.text.len(), doc.sentences.len());
    let lock = || {
        UNIT_MEMO
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    {
        let mut memo = lock();
        let (map, clock) = memo.get_or_insert_with(Default::default);
        *clock += 1;
        if let Some((units, used)) = map.get_mut(&key) {
            *used = *clock;
            return units.clone();
        }
    }
    let units = Arc::new(block_spans(doc));
    let mut memo = lock();
    let (map, clock) = memo.get_or_insert_with(Default::default);
    if map.len() >= UNIT_MEMO_DOCS && !map.contains_key(&key) {
        if let Some(oldest) = map
            .iter()
            .min_by_key(|(_, (_, used))| *used)
            .map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
    }
    map.insert(key, (units.clone(), *clock));
    units
}

/// The units of sentence-level `topk` that span several sentences: the fenced code blocks
/// (between lines opening with three backticks or tildes) and tables (runs of lines
/// opening with `|`) of `doc` of at most [`MAX_BLOCK_CHARS`] characters, and the
/// sentences hard-wrapped over several lines ([`wrapped_runs`]), as a map from a unit's
/// first sentence to its last. Sentences break at every line end, so each is a whole run
/// of sentences.
pub(crate) fn block_spans(doc: &Document) -> BTreeMap<usize, usize> {
    let text = doc.text.as_str();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut fence: Option<usize> = None;
    let mut table: Option<(usize, usize)> = None;
    let mut at = 0usize;
    for line in text.split_inclusive('\n') {
        let (start, end) = (at, at + line.len());
        at = end;
        let t = line.trim_start();
        let is_fence = t.starts_with("```") || t.starts_with("~~~");
        if let Some(open) = fence {
            if is_fence {
                spans.push((open, end));
                fence = None;
            }
            continue;
        }
        if t.starts_with('|') {
            table = Some(table.map_or((start, end), |(s, _)| (s, end)));
            continue;
        }
        if let Some(tb) = table.take() {
            spans.push(tb);
        }
        if is_fence {
            fence = Some(start);
        }
    }
    spans.extend(table);
    // Tables set as plain lines of figures (financial statements extracted from PDFs),
    // cut between rows into parts of at most FIGURE_PART_CHARS.
    for (start, end) in figure_tables(text) {
        let mut part = start;
        let mut last_row = start;
        for line in text[start..end].split_inclusive('\n') {
            let row_end = last_row + line.len();
            if text[part..row_end].chars().count() > FIGURE_PART_CHARS && last_row > part {
                spans.push((part, last_row));
                part = last_row;
            }
            last_row = row_end;
        }
        spans.push((part, end));
    }
    let mut out = wrapped_runs(doc);
    for (start, end) in spans {
        if text[start..end].chars().count() > MAX_BLOCK_CHARS {
            continue;
        }
        let first = doc.sentences.partition_point(|s| s.byte_end <= start);
        let last = doc
            .sentences
            .partition_point(|s| s.byte_start < end)
            .saturating_sub(1);
        if last > first {
            // A block replaces the units it overlaps. The units in `out` are disjoint,
            // so those overlapping first..=last are the last ones starting at or before
            // `last`, back to the first that ends before `first`.
            let overlapping: Vec<usize> = out
                .range(..=last)
                .rev()
                .take_while(|&(_, &b)| b >= first)
                .map(|(&a, _)| a)
                .collect();
            for a in overlapping {
                out.remove(&a);
            }
            out.insert(first, last);
        }
    }
    out
}

/// Longest part, in characters, of a table of figures ([`figure_tables`]) that
/// sentence-level `topk` takes as one unit; a longer table is cut between rows. A few
/// rows with their headings read as a table where single rows do not, and a part this
/// size leaves room for other evidence under a small budget: on the annual reports of
/// financebench-dev (docs/EVAL.md, session 15), parts of 300 to 1,000 characters moved
/// text recall by −1.4 to +2.4 points against cutting tables into rows, 500 the most
/// even (+0.6 / +1.6 / +1.6 points at 2,000 / 4,000 / 8,000 characters).
const FIGURE_PART_CHARS: usize = 500;

/// Fewest figure lines ([`figure_line`]) in a table of figures.
const MIN_FIGURE_ROWS: usize = 3;

/// Whether `line` is a row of figures: it ends with two or more numeric cells (`1,228`,
/// `(13)`, `4.7 %`, `$ 3.74`; a dash stands for an empty cell and counts as one) and not
/// with a full stop, as the rows of a financial statement or a table of measurements do
/// once extracted as plain text.
fn figure_line(line: &str) -> bool {
    // A sentence that ends with figures ends with a full stop; a row does not.
    !line.trim_end().ends_with('.') && excerpt_core::trailing_figures(line) >= 2
}

/// Byte ranges of the tables of figures in `text`: runs of at least [`MIN_FIGURE_ROWS`]
/// figure lines, with the blank lines and the short label lines (row groups such as
/// `Current assets`) between them, and up to two label lines right above the first row
/// (the column headings). A run ends at a line of prose (a long line, or one ending with
/// a full stop) or after three lines without figures.
fn figure_tables(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    // (start, end of the last figure line, figure lines, lines since the last figure line)
    let mut run: Option<(usize, usize, usize, usize)> = None;
    // Label lines just above, as (start of the first of at most two).
    let mut labels: Vec<usize> = Vec::new();
    let mut at = 0usize;
    let close = |run: Option<(usize, usize, usize, usize)>, out: &mut Vec<(usize, usize)>| {
        if let Some((start, end, rows, _)) = run {
            if rows >= MIN_FIGURE_ROWS {
                out.push((start, end));
            }
        }
    };
    for line in text.split_inclusive('\n') {
        let (start, end) = (at, at + line.len());
        at = end;
        let t = line.trim();
        if figure_line(t) {
            run = Some(match run {
                Some((s, _, rows, _)) => (s, end, rows + 1, 0),
                None => (labels.first().copied().unwrap_or(start), end, 1, 0),
            });
            labels.clear();
            continue;
        }
        let label =
            !t.is_empty() && t.chars().count() <= 100 && !t.ends_with(['.', '!', '?', ':', ';']);
        match run.as_mut() {
            Some(r) if (t.is_empty() || label) && r.3 < 3 => r.3 += 1,
            _ => {
                close(run.take(), &mut out);
            }
        }
        if run.is_none() {
            if label {
                labels.push(start);
                if labels.len() > 2 {
                    labels.remove(0);
                }
            } else if !t.is_empty() {
                labels.clear();
            }
        }
    }
    close(run, &mut out);
    out
}

/// Runs of sentences that are one sentence hard-wrapped over several lines (Markdown and
/// plain text wrapped at a fixed width, which the sentence splitter breaks at every line
/// end), as a map from a run's first sentence to its last. A line continues into the
/// next when it ends without a full stop, question or exclamation mark, colon or
/// semicolon, is not a heading, is followed by no blank line, and the next line starts
/// with a lower-case letter, or is itself at least 50 characters long (a wrapped line,
/// not a title); and when the next line opens no list item, heading, quote, table or
/// code fence. Runs stop at [`MAX_BLOCK_CHARS`].
fn wrapped_runs(doc: &Document) -> BTreeMap<usize, usize> {
    let text = doc.text.as_str();
    let s = &doc.sentences;
    let continues = |i: usize| -> bool {
        let cur = s[i].slice(text);
        let Some(next) = s.get(i + 1).map(|r| r.slice(text)) else {
            return false;
        };
        // Exactly one line end in the trailing whitespace: the line ends, no blank line
        // (even one of spaces) follows.
        let t = cur.trim_end();
        if cur[t.len()..].matches('\n').count() != 1 {
            return false;
        }
        let line_start = text[..s[i].byte_start].rfind('\n').map_or(0, |p| p + 1);
        let line = text[line_start..s[i].byte_end].trim();
        if t.trim_start().is_empty()
            || t.ends_with(['.', '!', '?', ':', ';'])
            || line.starts_with('#')
        {
            return false;
        }
        let n = next.trim_start();
        let opens_block = n.starts_with(['#', '>', '|', '-', '*', '+'])
            || n.starts_with("```")
            || n.starts_with("~~~")
            || starts_with_enumerator(n);
        let lower = n.chars().next().is_some_and(char::is_lowercase);
        !opens_block && (lower || line.chars().count() >= 50)
    };
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i < s.len() {
        let first = i;
        let mut chars = s[i].char_end - s[i].char_start;
        while continues(i) && chars + (s[i + 1].char_end - s[i + 1].char_start) <= MAX_BLOCK_CHARS {
            i += 1;
            chars += s[i].char_end - s[i].char_start;
        }
        if i > first {
            out.insert(first, i);
        }
        i += 1;
    }
    out
}

/// Whether `text` opens with a list enumerator: `(a)`, `(iv)`, `(2)`, `a)`, `iv)`, `2)`,
/// `a.`, `2.` or `1.6` (after leading spaces).
pub(crate) fn starts_with_enumerator(text: &str) -> bool {
    let t = text.trim_start();
    let t = t.strip_prefix('(').unwrap_or(t);
    let label: String = t
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect();
    let rest = &t[label.len()..];
    let label = label.trim_end_matches('.');
    if label.is_empty() || label.len() > 6 {
        return false;
    }
    let numeric = label
        .split('.')
        .all(|part| (1..=2).contains(&part.len()) && part.chars().all(|c| c.is_ascii_digit()));
    let roman = label.len() <= 4 && label.chars().all(|c| matches!(c, 'i' | 'v' | 'x'));
    let letter = label.len() == 1 && label.chars().all(|c| c.is_ascii_alphabetic());
    let closed = rest.starts_with(')')
        || (t[..t.len() - rest.len()].ends_with('.') || numeric)
            && rest.starts_with(|c: char| c.is_whitespace());
    (numeric || roman || letter) && closed
}

/// The lead-in of a list item: when sentence `i` of `doc` opens with an enumerator, the
/// nearest of the `window` sentences before it that ends with a colon (`"Each party
/// shall:"`), so an item is never handed over without the words that govern it.
pub(crate) fn lead_in(doc: &Document, i: usize, window: usize) -> Option<usize> {
    let text = doc.sentences.get(i)?.slice(&doc.text);
    if !starts_with_enumerator(text) {
        return None;
    }
    (i.saturating_sub(window)..i)
        .rev()
        .find(|&j| doc.sentences[j].slice(&doc.text).trim_end().ends_with(':'))
}

/// The block a lead-in introduces: when `unit` (a range of whole sentences of `doc`)
/// ends with a colon (`"… were as follows:"`, `"Revenue by category ($ in millions):"`),
/// what follows it: the block unit ([`block_units`]: a table part, a code block) that
/// starts at the next sentence, or else the next sentences up to the first blank line,
/// as long as they fit in `max_chars` characters (a longer first block gives `None`),
/// unless it is an enumerated item.
/// A lead-in promises what comes after it; handed over alone it answers nothing.
pub(crate) fn lead_out(doc: &Document, unit: TextRange, max_chars: usize) -> Option<TextRange> {
    let text = doc.text.as_str();
    if !unit.slice(text).trim_end().ends_with(':') {
        return None;
    }
    let first = doc
        .sentences
        .partition_point(|s| s.byte_start < unit.byte_end);
    let start = *doc.sentences.get(first)?;
    // Enumerated items (`(a)`, `4.1.1`) are provisions the sentence route judges one by
    // one, each bringing its lead-in ([`lead_in`]); a lead-in does not bring them all.
    if starts_with_enumerator(start.slice(text)) {
        return None;
    }
    let fits = |last: usize| {
        text[start.byte_start..doc.sentences[last].byte_end]
            .chars()
            .count()
            <= max_chars
    };
    if let Some(&last) = block_units(doc).get(&first) {
        return fits(last).then(|| start.cover(&doc.sentences[last]));
    }
    let mut last = first;
    if !fits(last) {
        return None;
    }
    while let Some(next) = doc.sentences.get(last + 1) {
        // The whitespace between the last sentence's words and the next sentence.
        let words_end =
            doc.sentences[last].byte_start + doc.sentences[last].slice(text).trim_end().len();
        let blank = text[words_end..next.byte_start].matches('\n').count() > 1;
        if blank || !fits(last + 1) {
            break;
        }
        last += 1;
    }
    Some(start.cover(&doc.sentences[last]))
}

/// Tokens of a text for lexical matching: lower-cased alphanumeric runs without English
/// function words, reduced to their Snowball (Porter 2) English stems, so that
/// "disclosure" meets "disclosed" and "terminates" meets "termination".
pub(crate) fn terms(text: &str) -> Vec<String> {
    let stemmer = frostem::Stemmer::new(frostem::Algorithm::English);
    words(text).filter_map(|w| term(&stemmer, w)).collect()
}

/// The alphanumeric runs of `text`, as [`terms`] reads them.
pub(crate) fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
}

/// The term of one word (see [`terms`]): `None` for a function word.
pub(crate) fn term(stemmer: &frostem::Stemmer, word: &str) -> Option<String> {
    let lower = word.to_lowercase();
    (!STOP.contains(&lower.as_str())).then(|| stemmer.stem(&lower).into_owned())
}

/// Function words ignored by [`terms`].
const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "been", "by", "can", "did", "do", "does", "for",
    "from", "had", "has", "have", "how", "i", "in", "is", "it", "its", "of", "on", "or", "that",
    "the", "their", "them", "then", "there", "these", "they", "this", "to", "was", "we", "were",
    "what", "when", "where", "which", "who", "why", "will", "with", "you", "your", "shall", "may",
    "any", "all", "such", "not", "no", "s",
];

/// BM25 of each sentence (given as term lists) against the query terms, with document
/// frequencies over the sentences themselves; divided by the best score (all zero when
/// nothing matches).
pub(crate) fn lexical_scores(query: &[String], sentences: &[Vec<String>]) -> Vec<f32> {
    let mut q: Vec<&str> = query.iter().map(String::as_str).collect();
    q.sort_unstable();
    q.dedup();
    let weighted: Vec<(&str, f64)> = q.into_iter().map(|t| (t, 1.0)).collect();
    weighted_scores(&weighted, sentences)
}

/// [`lexical_scores`] with a weight per query term (distinct terms): each term's BM25
/// share is multiplied by its weight before the sum. Divided by the best score. Terms
/// are anything comparable with the query's (stems as strings, or their ids).
pub(crate) fn weighted_scores<Q, T: PartialEq<Q>>(
    query: &[(Q, f64)],
    sentences: &[Vec<T>],
) -> Vec<f32> {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    let n = sentences.len() as f64;
    if sentences.is_empty() {
        return Vec::new();
    }
    let avg = sentences.iter().map(Vec::len).sum::<usize>() as f64 / n;
    // Per query term: its weight times its idf over the sentences.
    let weighted_idf: Vec<f64> = query
        .iter()
        .map(|(t, w)| {
            let d = sentences
                .iter()
                .filter(|s| s.iter().any(|x| x == t))
                .count() as f64;
            w * (1.0 + (n - d + 0.5) / (d + 0.5)).ln()
        })
        .collect();
    let scores: Vec<f64> = sentences
        .iter()
        .map(|s| {
            let len = s.len() as f64;
            query
                .iter()
                .zip(&weighted_idf)
                .map(|((t, _), wi)| {
                    let tf = s.iter().filter(|x| *x == t).count() as f64;
                    if tf == 0.0 {
                        return 0.0;
                    }
                    wi * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg.max(1.0)))
                })
                .sum()
        })
        .collect();
    let max = scores.iter().copied().fold(0.0f64, f64::max);
    scores
        .iter()
        .map(|&s| if max > 0.0 { (s / max) as f32 } else { 0.0 })
        .collect()
}

/// One sentence of a candidate document as a selection unit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unit {
    /// The sentence's text range.
    pub range: TextRange,
    /// The chunk it lies in (the chunk containing its first byte).
    pub chunk: usize,
}

/// The sentences of `doc` with the chunk each starts in, clipped so units partition the
/// text exactly like the sentences do.
pub(crate) fn units_of(doc: &Document) -> Vec<Unit> {
    let mut out = Vec::with_capacity(doc.sentences.len());
    let mut c = 0usize;
    for s in &doc.sentences {
        while c + 1 < doc.chunks.len() && doc.chunks[c].range.byte_end <= s.byte_start {
            c += 1;
        }
        out.push(Unit {
            range: *s,
            chunk: c,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_drop_function_words_and_stem() {
        assert_eq!(
            terms("The Receiving Party shall return all documents."),
            vec!["receiv", "parti", "return", "document"]
        );
    }

    #[test]
    fn tables_of_figures_are_found_with_their_column_headings() {
        let statement = "The statements follow.\n\
            Consolidated Statements of Earnings\n\
            Fiscal Years Ended 2017 2016 2015\n\
            Revenue $ 39,403 $ 39,528 $ 40,339\n\
            Cost of goods sold 29,963 30,334 31,292\n\
            \n\
            Operating expenses\n\
            Restructuring charges (1) — 4\n\
            Operating income as a % of revenue 4.7 % 3.5 % 3.6 %\n\
            See Notes to Consolidated Financial Statements, which are an integral part.\n";
        let found = figure_tables(statement);
        assert_eq!(found.len(), 1);
        let (a, b) = found[0];
        assert!(statement[a..b].starts_with("Consolidated Statements of Earnings\n"));
        assert!(statement[a..b].ends_with("3.6 %\n"));
        // Prose with numbers in it, and two rows only, are not tables.
        for text in [
            "In 2017 we opened 12 stores, 3 of them in 2016 2015.\nSales rose 4 5.\n",
            "Revenue 1 2\nCosts 3 4\nA sentence that ends here.\n",
        ] {
            assert!(figure_tables(text).is_empty(), "{text:?}");
        }
        assert!(figure_line(
            "Diluted earnings per share $ 3.81 $ 2.56 $ 3.49"
        ));
        assert!(figure_line("Discontinued operations 0.07 0.26 (0.04)"));
        assert!(!figure_line("Item 7 of Part 2"));
    }

    /// A document whose sentences are its lines.
    fn lines_doc(text: &str, hash: &str) -> Document {
        let (mut sentences, mut at, mut chars) = (Vec::new(), 0usize, 0usize);
        for line in text.split_inclusive('\n') {
            let n = line.chars().count();
            sentences.push(TextRange {
                byte_start: at,
                byte_end: at + line.len(),
                char_start: chars,
                char_end: chars + n,
            });
            at += line.len();
            chars += n;
        }
        Document {
            id: "d".into(),
            title: "d".into(),
            source: None,
            metadata: Default::default(),
            text: text.into(),
            hash: hash.into(),
            sections: Vec::new(),
            chunks: Vec::new(),
            sentences,
            pages: Vec::new(),
        }
    }

    #[test]
    fn lead_ins_bring_the_block_they_introduce() {
        // Sentences are lines, blank lines belonging to the line above, as the sentence
        // splitter leaves them.
        let text = "Revenue by category was as follows:\n\nPhones 41 % 42 %\nAudio 30 % 30 %\n\
            Games 6 % 5 %\n\nNotable changes were as follows:\n\n- Phones fell.\n\
            - Games rose.\n\nThe end came as follows:\n\nA sentence far too long to come \
            along with the lead-in above it.\n";
        let mut doc = lines_doc(text, "h-lead-out-test");
        let mut merged: Vec<TextRange> = Vec::new();
        for s in doc.sentences.drain(..) {
            match merged.last_mut() {
                Some(last) if s.slice(text).trim().is_empty() => *last = last.cover(&s),
                _ => merged.push(s),
            }
        }
        doc.sentences = merged;
        let at = |needle: &str| {
            doc.sentences
                .iter()
                .position(|s| s.slice(text).starts_with(needle))
                .unwrap()
        };
        let out = |needle: &str, max: usize| {
            lead_out(&doc, doc.sentences[at(needle)], max).map(|r| r.slice(text).to_string())
        };
        // A table of figures: the table part, whole.
        assert_eq!(
            out("Revenue by", 600).as_deref(),
            Some("Phones 41 % 42 %\nAudio 30 % 30 %\nGames 6 % 5 %\n\n")
        );
        // A list: its lines up to the blank line.
        assert_eq!(
            out("Notable", 600).as_deref(),
            Some("- Phones fell.\n- Games rose.\n\n")
        );
        // Within the limit only; nothing when even the first line is longer.
        assert_eq!(out("Notable", 20).as_deref(), Some("- Phones fell.\n"));
        assert_eq!(out("The end", 20), None);
        // Not a lead-in: nothing.
        assert_eq!(out("Phones", 600), None);
        // Enumerated items are not brought by their lead-in.
        let clauses = "Each party shall:\n(a) keep it secret;\n(b) return it.\n";
        let doc = lines_doc(clauses, "h-lead-out-enumerated");
        assert_eq!(lead_out(&doc, doc.sentences[0], 600), None);
    }

    #[test]
    fn block_units_are_remembered_by_content_and_equal_block_spans() {
        let text = "Intro line that is long enough to wrap onto the next line of the\n\
            paragraph, which continues here.\n\n```\ncode one\ncode two\n```\n\n\
            | a | b |\n| 1 | 2 |\n\nRevenue $ 1 $ 2\nCosts 3 4\nProfit 5 6\nThe end.\n";
        let doc = lines_doc(text, "h-units-test");
        let spans = block_spans(&doc);
        assert!(spans.len() >= 3, "{spans:?}");
        let first = block_units(&doc);
        assert_eq!(*first, spans);
        assert!(Arc::ptr_eq(&first, &block_units(&doc)), "remembered");
        // Same hash, other text: another key.
        let other = lines_doc("One line.\n", "h-units-test");
        assert!(block_units(&other).is_empty());
        // No hash: computed every time.
        let unhashed = lines_doc(text, "");
        assert!(!Arc::ptr_eq(
            &block_units(&unhashed),
            &block_units(&unhashed)
        ));
        assert_eq!(*block_units(&unhashed), spans);
    }

    fn range_of(text: &str) -> TextRange {
        TextRange {
            byte_start: 0,
            byte_end: text.len(),
            char_start: 0,
            char_end: text.chars().count(),
        }
    }

    #[test]
    fn clauses_cut_at_semicolons_and_enumerators_and_partition_the_sentence() {
        let t = "Information that: (i) is public; (ii) was known before, or (iii) is received lawfully.";
        let parts: Vec<&str> = clauses(t, range_of(t), 10)
            .iter()
            .map(|r| r.slice(t))
            .collect();
        assert_eq!(
            parts,
            [
                "Information that: ",
                "(i) is public; ",
                "(ii) was known before, or ",
                "(iii) is received lawfully."
            ]
        );
        // Too-short pieces stay joined; character offsets follow multi-byte text.
        let t = "Ä; b; (c) ü is here and long enough";
        let r = clauses(t, range_of(t), 8);
        assert_eq!(r.iter().map(|r| r.slice(t)).collect::<String>(), t);
        for x in &r {
            assert_eq!(t[..x.byte_start].chars().count(), x.char_start);
            assert_eq!(t[..x.byte_end].chars().count(), x.char_end);
        }
        assert_eq!(clauses(t, range_of(t), 1000).len(), 1);
        assert!(clauses("(a) x", range_of("(a) x"), 0)
            .iter()
            .all(|r| !r.is_empty()));
    }

    #[test]
    fn enumerators_open_list_items() {
        for yes in [
            "(a) keep",
            "  (iv) was",
            "b) the",
            "2. The",
            "1.6 shall",
            "(12) x",
            "c. Other",
        ] {
            assert!(starts_with_enumerator(yes), "{yes}");
        }
        for no in [
            "The party",
            "I agree",
            "2018 was",
            "(hereinafter the",
            "Section 2",
            "",
            "(a",
        ] {
            assert!(!starts_with_enumerator(no), "{no}");
        }
    }

    #[test]
    fn lexical_scores_prefer_the_matching_sentence() {
        let q = terms("reverse engineer confidential information");
        let s: Vec<Vec<String>> = [
            "The recipient shall not reverse engineer any product.",
            "This agreement is governed by the laws of Delaware.",
            "Confidential information includes trade secrets.",
        ]
        .iter()
        .map(|t| terms(t))
        .collect();
        let l = lexical_scores(&q, &s);
        assert_eq!(l[0], 1.0);
        assert_eq!(l[1], 0.0);
        assert!(l[2] > 0.0 && l[2] < 1.0);
        assert_eq!(lexical_scores(&terms("zebra"), &s), vec![0.0; 3]);
    }
}
