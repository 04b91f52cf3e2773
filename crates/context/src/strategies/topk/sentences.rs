//! `topk`'s sentence route: the sentences (and blocks kept whole) of the best retrieved
//! chunks, each valued by its chunk's relevance and its own match with the query.

use std::collections::{BTreeMap, BTreeSet};

use excerpt_core::{ChunkKey, Document, TextRange};

use crate::context::AssembleRequest;
use crate::memo::Memo;
use crate::near::{chunk_near, sentence_near};
use crate::selection::cosine;
use crate::sentences::clauses::{clauses, starts_with_enumerator};
use crate::sentences::lexical::{terms, weighted_id_scores};
use crate::sentences::min_max_scaled;
use crate::sentences::term_ids::{Locked, Numbering};

/// How [`best_sentences`] values sentences (from `topk`'s parameters).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentenceScoring {
    /// Share of its chunk's relevance a sentence keeps with no query term.
    pub floor: f32,
    /// The floor instead when the query is long (`None`: it is not), unless stored
    /// sentence similarity counts.
    pub floor_for_long: Option<f32>,
    /// Weight of stored sentence similarity against the lexical score.
    pub dense_weight: f32,
    /// Stored sentence similarity counts only for queries of this many distinct terms.
    pub dense_min_terms: usize,
    /// Sentences are cut into clauses of at least this many characters (0: whole).
    pub clause_chars: usize,
    /// A sentence of more tokens than this is cut into clauses whatever `clause_chars`.
    pub long_sentence: Option<usize>,
    /// The most characters of a pooled chunk's paragraph read on past its end (0: none).
    pub continuation: usize,
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
/// candidate, see [`block_spans`](crate::sentences::units::block_spans)): a sentence in a paragraph about the query rises with
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
/// with the weighted feedback terms (BM25 as [`weighted_id_scores`], divided by the best),
/// divided again by the best sum, so still in `[0, 1]`.
/// (`feedback`: the terms by their numbers in `texts`' numbering, with their weights.)
fn with_feedback(feedback: &[(u32, f64)], texts: &[Vec<u32>], s: &[f32], w: f32) -> Vec<f32> {
    let e = weighted_id_scores(feedback, texts);
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

/// The cosine to the query vector `q` of a candidate's stored sentence vectors: its
/// sentence's, or for a unit of several sentences (a table, a code block) their sum's.
/// `None` when a vector is missing or of another dimension.
fn unit_similarity(req: &AssembleRequest<'_>, c: &SentenceHit, q: &[f32]) -> Option<f32> {
    let doc = req.corpus.document(c.doc)?;
    let mut sum: Option<Vec<f32>> = None;
    let mut i = c.sentence;
    loop {
        let v = req
            .corpus
            .sentence_vector(c.doc, i)
            .filter(|v| v.len() == q.len())?;
        match &mut sum {
            None => sum = Some(v.into_owned()),
            Some(s) => s.iter_mut().zip(v.iter()).for_each(|(a, b)| *a += b),
        }
        i += 1;
        match doc.sentences.get(i) {
            Some(r) if r.byte_start < c.range.byte_end => {}
            _ => break,
        }
    }
    sum.map(|s| cosine(&s, q))
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
/// `floor` is `floor_for_long` instead for a long query (see `TopkParams::long_terms`)
/// when no stored sentence similarity counted in `s` (the two stand in for each other:
/// meaning beyond the words, from the sentence's own vector or from its chunk's
/// relevance).
/// `s` is the sentence's BM25 score against the query over the pooled sentences, divided
/// by the best (see [`crate::sentences::lexical::lexical_scores`]); with stored sentence
/// vectors for every pooled sentence, it is `dense_weight · d + (1 − dense_weight) · s`, `d` the sentence's cosine
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
        mut floor,
        floor_for_long,
        dense_weight,
        dense_min_terms,
        clause_chars,
        long_sentence,
        continuation,
        neighbour_weight,
        heading_terms,
        feedback_weight,
    } = *scoring;
    let mut chunk_rel: BTreeMap<ChunkKey, f32> = BTreeMap::new();
    for &(k, r) in pool {
        chunk_rel.entry(k).or_insert(r);
    }
    // The candidates' terms, the query's and the feedback terms as numbers of one
    // numbering, read from the collection's table of sentence terms.
    let memo = Memo::of(req.corpus);
    let mut table = memo.sentence_terms();
    let mut numbering = table.numbering();
    let (mut cands, texts) = candidates(
        req,
        &chunk_rel,
        Cuts {
            clause_chars,
            long_sentence,
        },
        continuation,
        heading_terms,
        &mut table,
        &mut numbering,
    );
    let query_terms = terms(req.query);
    // Distinct, in the order of their text: `lexical_scores`'s order, so the same sums.
    let mut sorted: Vec<&str> = query_terms.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let query: Vec<(u32, f64)> = sorted
        .into_iter()
        .map(|t| (table.stem_in(t, &mut numbering), 1.0))
        .collect();
    let feedback: Vec<(u32, f64)> = req
        .feedback
        .iter()
        .map(|(t, x)| (table.stem_in(t, &mut numbering), f64::from(*x)))
        .collect();
    drop(table);
    let mut s = weighted_id_scores(&query, &texts);
    if feedback_weight > 0.0 && !req.feedback.is_empty() {
        s = with_feedback(&feedback, &texts, &s, feedback_weight);
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
    let distinct: BTreeSet<&String> = query_terms.iter().collect();
    let meaning_used =
        distinct.len() >= dense_min_terms && with_meaning(req, &cands, &mut s, dense_weight, notes);
    // A long question without sentence meaning: its chunk's relevance counts for more.
    if let Some(long_floor) = floor_for_long.filter(|&f| f != floor && !meaning_used) {
        floor = long_floor;
        notes.push(format!(
            "topk: a question of {} terms: lexical floor {long_floor}",
            distinct.len()
        ));
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

/// Mixes into each candidate's lexical match `s` its similarity with the query vector
/// (min-max scaled, weight `dense_weight`) when every candidate has a stored sentence
/// vector; whether the meaning was used.
fn with_meaning(
    req: &AssembleRequest<'_>,
    cands: &[SentenceHit],
    s: &mut [f32],
    dense_weight: f32,
    notes: &mut Vec<String>,
) -> bool {
    let Some(q) = req.query_vector else {
        return false;
    };
    let sims: Vec<f32> = cands
        .iter()
        .map_while(|c| unit_similarity(req, c, q))
        .collect();
    if sims.len() != cands.len() || sims.is_empty() {
        return false;
    }
    for (x, d) in s.iter_mut().zip(min_max_scaled(&sims)) {
        *x = dense_weight * d + (1.0 - dense_weight) * *x;
    }
    notes.push("topk: sentence similarity from stored sentence vectors".into());
    dense_weight > 0.0
}

/// The candidate units of the pooled chunks (`chunk_rel`: each pooled chunk's
/// relevance), each valued by the best pooled chunk it overlaps, with its terms (and its
/// section's heading terms with `heading_terms`); sentences cut into clauses of at least
/// `clause_chars` characters when above 0.
fn candidates(
    req: &AssembleRequest<'_>,
    chunk_rel: &BTreeMap<ChunkKey, f32>,
    cuts: Cuts,
    continuation: usize,
    heading_terms: bool,
    table: &mut Locked<'_>,
    numbering: &mut Numbering,
) -> (Vec<SentenceHit>, Vec<Vec<u32>>) {
    let mut docs: Vec<u32> = chunk_rel.keys().map(|k| k.doc).collect();
    docs.dedup();
    let mut cands: Vec<SentenceHit> = Vec::new();
    let mut texts: Vec<Vec<u32>> = Vec::new();
    let memo = Memo::of(req.corpus);
    for d in docs {
        let Some(doc) = req.corpus.document(d) else {
            continue;
        };
        let blocks = memo.block_units(doc);
        // Heading terms per section, stemmed once.
        let mut heading: BTreeMap<Option<u32>, Vec<u32>> = BTreeMap::new();
        let mut pooled_ranges: Vec<TextRange> = chunk_rel
            .range(ChunkKey::new(d, 0)..=ChunkKey::new(d, u32::MAX))
            .filter_map(|(k, _)| doc.chunks.get(k.ordinal as usize).map(|c| c.range))
            .collect();
        let continued = continuations(doc, d, chunk_rel, continuation);
        pooled_ranges.extend(continued.iter().map(|c| c.0));
        pooled_ranges.sort_by_key(|r| r.byte_start);
        let visit = units_to_visit(doc, &blocks, &pooled_ranges);
        for i in visit {
            // A code block or table is one unit; any other sentence is its own.
            let (range, whole_block) = match blocks.get(&i) {
                Some(&last) => (doc.sentences[i].cover(&doc.sentences[last]), true),
                None => (doc.sentences[i], false),
            };
            let range = &range;
            // The pooled chunks the sentence overlaps; the best one values it.
            let first = chunk_near(doc, range.byte_start, |c| {
                c.range.byte_end <= range.byte_start
            });
            let pooled: Vec<(u32, f32)> = doc.chunks[first..]
                .iter()
                .take_while(|c| c.range.byte_start < range.byte_end)
                .enumerate()
                .filter_map(|(j, _)| {
                    let o = (first + j) as u32;
                    chunk_rel.get(&ChunkKey::new(d, o)).map(|&r| (o, r))
                })
                .collect();
            // A unit no pooled chunk holds opens the rest of a pooled chunk's paragraph.
            let r = pooled.iter().map(|p| p.1).reduce(f32::max).or_else(|| {
                continued
                    .iter()
                    .find(|c| c.0.byte_start <= range.byte_start && range.byte_start < c.0.byte_end)
                    .map(|c| c.1)
            });
            if let Some(r) = r {
                let parts = match cuts.clause_chars_of(req, doc, range, whole_block) {
                    Some(min) => clauses(&doc.text, *range, min),
                    None => vec![*range],
                };
                for part in parts {
                    let mut t = table.sentence_in(part.slice(&doc.text), numbering);
                    if heading_terms {
                        let section = doc.chunks[first].section;
                        t.extend_from_slice(heading.entry(section).or_insert_with(|| {
                            table.text_in(&doc.section_path(section), numbering)
                        }));
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
    (cands, texts)
}

/// The most characters of the line a pooled chunk ends in that its continuation reads.
const FIRST_LINE_CHARS: usize = 2000;

/// The rest of the paragraph of each pooled chunk of document `d` (position) that ends
/// inside one, when the next chunk is not pooled: from the chunk's end to the end of its
/// line (at most [`FIRST_LINE_CHARS`]), then further whole lines up to the first blank
/// line, heading or list item while under `max_chars` characters in all (none when 0),
/// with the chunk's relevance. A chunk cut by the chunker's length mid-paragraph leaves the end
/// of what it began to say to the next chunk, which retrieval may rank far lower.
fn continuations(
    doc: &Document,
    d: u32,
    chunk_rel: &BTreeMap<ChunkKey, f32>,
    max_chars: usize,
) -> Vec<(TextRange, f32)> {
    let text = doc.text.as_str();
    let mut out = Vec::new();
    if max_chars == 0 {
        return out;
    }
    for (k, &r) in chunk_rel.range(ChunkKey::new(d, 0)..=ChunkKey::new(d, u32::MAX)) {
        let Some(chunk) = doc.chunks.get(k.ordinal as usize) else {
            continue;
        };
        if chunk_rel.contains_key(&ChunkKey::new(d, k.ordinal + 1)) {
            continue;
        }
        let at = chunk.range.byte_end;
        if at >= text.len() {
            continue;
        }
        // Mid-line, the first line goes on whatever it holds; after a line end, it is
        // judged as the others are.
        let mid_line = !text[..at].ends_with('\n');
        let mut end = at;
        let mut chars = 0usize;
        for line in text[at..].split_inclusive('\n') {
            let t = line.trim_start();
            if !(mid_line && end == at)
                && (t.is_empty()
                    || t.starts_with(['#', '-', '*', '+', '|', '>'])
                    || starts_with_enumerator(t))
            {
                break;
            }
            // The line the chunk ends in goes on to its end (a paragraph on one line),
            // cut at FIRST_LINE_CHARS (a unit that starts before the cut is still read
            // whole), so a document on one line never becomes candidates whole; the
            // lines after it, whole, while under `max_chars` in all.
            let room = if end == at {
                FIRST_LINE_CHARS.max(max_chars)
            } else {
                usize::MAX
            };
            let take = line.char_indices().nth(room).map_or(line.len(), |(b, _)| b);
            end += take;
            chars += line[..take].chars().count();
            if chars >= max_chars {
                break;
            }
        }
        if end > at {
            let char_start = chunk.range.char_end;
            out.push((
                TextRange {
                    byte_start: at,
                    byte_end: end,
                    char_start,
                    char_end: char_start + text[at..end].chars().count(),
                },
                r,
            ));
        }
    }
    out
}

/// How candidate sentences are cut into clauses.
#[derive(Debug, Clone, Copy)]
struct Cuts {
    /// Every sentence, into clauses of at least this many characters (0: none).
    clause_chars: usize,
    /// A sentence of more tokens than this, into clauses of at least `clause_chars`
    /// characters (or [`LONG_CLAUSE_CHARS`]).
    long_sentence: Option<usize>,
}

/// The shortest clause of a long sentence cut when `clause_chars` is 0.
const LONG_CLAUSE_CHARS: usize = 250;

impl Cuts {
    /// The shortest clause `range` of `doc` is cut into, or `None` when it stays whole.
    fn clause_chars_of(
        &self,
        req: &AssembleRequest<'_>,
        doc: &Document,
        range: &TextRange,
        whole_block: bool,
    ) -> Option<usize> {
        if whole_block {
            return None;
        }
        if self.clause_chars > 0 {
            return Some(self.clause_chars);
        }
        let limit = self.long_sentence?;
        // A text has at least as many characters as tokens for the usual encodings:
        // only a sentence of more characters than the limit is counted.
        let long = range.char_len() > limit && req.tokens.count(range.slice(&doc.text)) > limit;
        long.then_some(LONG_CLAUSE_CHARS)
    }
}

/// The first sentences of the units of `doc` that overlap the chunk ranges `pooled` (in
/// reading order), each once. Only those units become candidates, so only those are
/// visited: for each pooled chunk, from the unit holding the first sentence that ends
/// inside or after it, to the last unit that starts before its end. A document of
/// thousands of sentences costs what its pooled chunks hold.
fn units_to_visit(
    doc: &Document,
    blocks: &BTreeMap<usize, usize>,
    pooled: &[TextRange],
) -> Vec<usize> {
    let unit_end = |i: usize| blocks.get(&i).map_or(i, |&last| last);
    let mut next = 0usize;
    let mut visit: Vec<usize> = Vec::new();
    for chunk in pooled {
        let first = sentence_near(doc, chunk.byte_start, |s| s.byte_end <= chunk.byte_start);
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
    visit
}
