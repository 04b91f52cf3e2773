//! The exhaustive BM25 scorer ([`Scoring::Exhaustive`](super::Scoring::Exhaustive)):
//! every posting of every query term scored, one term after the other, into a sum per
//! chunk of a segment, the best kept in a heap ([`Bm25Reader::top_by_terms`]). The
//! scores of tantivy's buffered union of the terms, bit for bit, 1.5× faster; the
//! buffers of the sums are kept by the reader between searches ([`TermSums`]).

use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::Bm25Weight;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocAddress, SegmentReader, Term};

use super::Bm25Reader;
use crate::dense::TopK;
use crate::IndexError;

/// The kept `((segment, doc), score)` pairs of `top` as search hits, best first.
pub(super) fn addressed(top: TopK<(u32, u32)>) -> Vec<(f32, DocAddress)> {
    top.into_sorted()
        .into_iter()
        .map(|((segment, doc), score)| (score, DocAddress::new(segment, doc)))
        .collect()
}

/// The buffers of one [`Bm25Reader::top_by_terms`]: a sum per chunk (all zero between
/// searches), and bitsets of the chunks reached and permitted.
#[derive(Default)]
pub(super) struct TermSums {
    sums: Vec<f32>,
    reached: Vec<u64>,
    permitted: Vec<u64>,
}

/// One term's weight and a segment's norms: what adds a block of the term's postings
/// into the sums of [`Bm25Reader::top_by_terms`].
struct BlockSums<'a> {
    weight: &'a Bm25Weight,
    norms: &'a FieldNormReader,
}

/// Postings whose scores [`BlockSums::add`] computes before adding them: a block of
/// tantivy's postings.
const SCORED_AT_ONCE: usize = 128;

impl BlockSums<'_> {
    /// Adds the scores of the postings `docs` (their term frequencies `freqs`, or 1
    /// each) into `sums`; with `MARK`, marks each chunk in `reached`; with `SCOPED`,
    /// skips the chunks not marked in `permitted`. One loop per case, so the postings'
    /// loop tests nothing it need not.
    #[inline(always)]
    fn add<const MARK: bool, const SCOPED: bool>(
        &self,
        docs: &[u32],
        freqs: Option<&[u32]>,
        sums: &mut [f32],
        reached: &mut [u64],
        permitted: &[u64],
    ) {
        if SCOPED {
            // Most postings of a scoped search are outside the scope: tested first,
            // their scores are never computed.
            let mut one = |doc: u32, tf: u32| {
                let (word, bit) = (doc as usize / 64, 1u64 << (doc % 64));
                if permitted[word] & bit == 0 {
                    return;
                }
                sums[doc as usize] += self.weight.score(self.norms.fieldnorm_id(doc), tf);
                if MARK {
                    reached[word] |= bit;
                }
            };
            match freqs {
                Some(freqs) => docs.iter().zip(freqs).for_each(|(&doc, &tf)| one(doc, tf)),
                None => docs.iter().for_each(|&doc| one(doc, 1)),
            }
            return;
        }
        // Else a block's scores first, then its sums (with the floor test of
        // `top_by_terms` made in its loops, 6 % faster than one pass: p50 1.72 → 1.61 ms
        // on financebench-dev's questions at 105k chunks, `examples/bm25_scoring.rs`).
        let mut scores = [0f32; SCORED_AT_ONCE];
        for (at, docs) in docs.chunks(SCORED_AT_ONCE).enumerate() {
            let scores = &mut scores[..docs.len()];
            match freqs {
                Some(freqs) => {
                    let freqs = &freqs[at * SCORED_AT_ONCE..][..docs.len()];
                    for ((score, &doc), &tf) in scores.iter_mut().zip(docs).zip(freqs) {
                        *score = self.weight.score(self.norms.fieldnorm_id(doc), tf);
                    }
                }
                None => {
                    for (score, &doc) in scores.iter_mut().zip(docs) {
                        *score = self.weight.score(self.norms.fieldnorm_id(doc), 1);
                    }
                }
            }
            for (&doc, &score) in docs.iter().zip(scores.iter()) {
                sums[doc as usize] += score;
                if MARK {
                    reached[doc as usize / 64] |= 1u64 << (doc % 64);
                }
            }
        }
    }
}

impl Bm25Reader {
    /// The `limit` best-scored chunks of `terms`, scoring every posting term by term:
    /// each term's BM25 scores are added into one sum per chunk of a segment, then the
    /// chunks any term reached are offered to the top `limit` in chunk order. The same
    /// scores as tantivy's union of the terms' scorers (`top_scored` on their
    /// `BooleanQuery`): the same per-term weight ([`Bm25Weight::for_terms`] on the
    /// searcher's statistics), and each chunk's terms added from zero in the query's
    /// order, as its buffered union adds them. A pass over one term's postings does not
    /// switch between terms at every chunk. With `allowed`, only the chunks of those
    /// document ids are scored.
    ///
    /// The sums live in a buffer kept by the reader for the next search ([`TermSums`]),
    /// at zero between searches. When a segment's postings are fewer than its chunks,
    /// the chunks reached are marked in a bitset and only they are read back: a
    /// search then costs its postings and a sixty-fourth of the segment's chunks, not
    /// a pass over every chunk of a million-chunk segment. Chunks scoring below the
    /// top so far are passed over without an offer.
    ///
    /// `marking` forces the bitset (`Some(true)`) or the pass over every sum
    /// (`Some(false)`) instead of the cheaper of the two, for the tests.
    pub(super) fn top_by_terms(
        &self,
        terms: &[String],
        allowed: Option<&[&str]>,
        limit: usize,
        marking: Option<bool>,
    ) -> Result<Vec<(f32, DocAddress)>, IndexError> {
        let body = self.fields.body;
        let weights = terms
            .iter()
            .map(|t| {
                let term = Term::from_field_text(body, t);
                let weight = Bm25Weight::for_terms(&self.searcher, std::slice::from_ref(&term))?;
                Ok((term, weight))
            })
            .collect::<Result<Vec<_>, IndexError>>()?;
        // Keyed by (segment, doc): of equal scores, the earlier document is kept.
        let mut top = TopK::new(limit, limit);
        // Given back only once every sum is zero again: a search that fails half-way
        // drops them.
        let mut buffers = self
            .sums
            .lock()
            .ok()
            .and_then(|mut kept| kept.pop())
            .unwrap_or_default();
        for (segment, reader) in self.searcher.segment_readers().iter().enumerate() {
            buffers.reset(reader.max_doc() as usize);
            if let Some(ids) = allowed {
                if !buffers.permit(reader, self.fields.doc_id, ids)? {
                    continue;
                }
            }
            let mark = buffers.add_postings(reader, body, &weights, marking, allowed.is_some())?;
            buffers.offer_sums(reader, segment as u32, mark, &mut top);
        }
        if let Ok(mut kept) = self.sums.lock() {
            if kept.len() < cores() {
                kept.push(buffers);
            }
        }
        Ok(addressed(top))
    }
}

impl TermSums {
    /// Ready for a segment of `max_doc` chunks: a sum for each (the sums are zero
    /// already), none reached.
    fn reset(&mut self, max_doc: usize) {
        if self.sums.len() < max_doc {
            self.sums.resize(max_doc, 0.0);
        }
        self.reached.clear();
        self.reached.resize(max_doc.div_ceil(64), 0);
    }

    /// Marks in `permitted` the chunks of `reader` whose document ids (field `doc_id`)
    /// are among `ids`; whether there is one.
    fn permit(
        &mut self,
        reader: &SegmentReader,
        doc_id: Field,
        ids: &[&str],
    ) -> Result<bool, IndexError> {
        let permitted = &mut self.permitted;
        let max_doc = reader.max_doc() as usize;
        // The segment's chunks of those documents, one bit each: only they are
        // scored (a scope is mostly a few documents' chunks of many).
        permitted.clear();
        permitted.resize(max_doc.div_ceil(64), 0);
        let id_postings = reader.inverted_index(doc_id)?;
        for id in ids {
            let term = Term::from_field_text(doc_id, id);
            let Some(info) = id_postings
                .get_term_info(&term)
                .map_err(tantivy::TantivyError::from)?
            else {
                continue;
            };
            let mut block = id_postings
                .read_block_postings_from_terminfo(&info, IndexRecordOption::Basic)
                .map_err(tantivy::TantivyError::from)?;
            while block.block_len() > 0 {
                for &doc in block.docs() {
                    permitted[doc as usize / 64] |= 1 << (doc % 64);
                }
                block.advance();
            }
        }
        Ok(!permitted.iter().all(|&bits| bits == 0))
    }

    /// Adds the scores of every posting of the terms `weights` in the `body` field of
    /// `reader` into the sums (only of permitted chunks when `scoped`); whether the
    /// chunks reached were marked (`marking` forces it either way, else the cheaper).
    fn add_postings(
        &mut self,
        reader: &SegmentReader,
        body: Field,
        weights: &[(Term, Bm25Weight)],
        marking: Option<bool>,
        scoped: bool,
    ) -> Result<bool, IndexError> {
        let TermSums {
            sums,
            reached,
            permitted,
        } = self;
        let max_doc = reader.max_doc() as usize;
        let postings = reader.inverted_index(body)?;
        let norms = match reader.fieldnorms_readers().get_field(body)? {
            Some(norms) => norms,
            None => FieldNormReader::constant(reader.max_doc(), 1),
        };
        let mut found = Vec::with_capacity(weights.len());
        for (term, weight) in weights {
            let info = postings
                .get_term_info(term)
                .map_err(tantivy::TantivyError::from)?;
            found.extend(info.map(|info| (info, weight)));
        }
        // Marking each chunk reached costs about a nanosecond a posting; reading
        // every sum back costs about that a chunk. The cheaper of the two.
        let postings_here: u64 = found.iter().map(|(info, _)| u64::from(info.doc_freq)).sum();
        let mark = marking.unwrap_or(postings_here < max_doc as u64);
        for (info, weight) in found {
            let mut block = postings
                .read_block_postings_from_terminfo(&info, IndexRecordOption::WithFreqs)
                .map_err(tantivy::TantivyError::from)?;
            while block.block_len() > 0 {
                let (docs, freqs) = (block.docs(), block.freqs());
                // A term stored without frequencies: each posting counts once.
                let freqs = (freqs.len() == docs.len()).then_some(freqs);
                let sums = &mut sums[..max_doc];
                let block_sums = BlockSums {
                    weight,
                    norms: &norms,
                };
                match (mark, scoped) {
                    (false, false) => {
                        block_sums.add::<false, false>(docs, freqs, sums, reached, permitted)
                    }
                    (true, false) => {
                        block_sums.add::<true, false>(docs, freqs, sums, reached, permitted)
                    }
                    (false, true) => {
                        block_sums.add::<false, true>(docs, freqs, sums, reached, permitted)
                    }
                    (true, true) => {
                        block_sums.add::<true, true>(docs, freqs, sums, reached, permitted)
                    }
                }
                block.advance();
            }
        }
        Ok(mark)
    }

    /// Offers the chunks of segment `segment` (read by `reader`) that a term reached to
    /// `top`, setting each sum read back to zero; the chunks `mark`ed, else every sum.
    fn offer_sums(
        &mut self,
        reader: &SegmentReader,
        segment: u32,
        mark: bool,
        top: &mut TopK<(u32, u32)>,
    ) {
        let TermSums { sums, reached, .. } = self;
        let max_doc = reader.max_doc() as usize;
        let alive = reader.alive_bitset();
        // Every BM25 score is above zero: a sum of zero is a chunk no term reached.
        // Each sum read is set back to zero. Most chunks score below the top so
        // far, and are passed over without an offer.
        // The loops test against the floor themselves (a call per chunk was an
        // eighth of a search's time); `offer` returns the new floor.
        let mut floor = top.floor();
        let mut offer = |doc: u32, score: f32| {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                top.offer((segment, doc), score);
            }
            top.floor()
        };
        if mark {
            for (word, bits) in reached.iter().enumerate() {
                let mut bits = *bits;
                while bits != 0 {
                    let doc = (word * 64) as u32 + bits.trailing_zeros();
                    bits &= bits - 1;
                    let score = std::mem::take(&mut sums[doc as usize]);
                    if score >= floor {
                        floor = offer(doc, score);
                    }
                }
            }
        } else {
            for (doc, sum) in sums[..max_doc].iter_mut().enumerate() {
                if *sum != 0.0 {
                    let score = std::mem::take(sum);
                    if score >= floor {
                        floor = offer(doc as u32, score);
                    }
                }
            }
        }
    }
}

/// The cores this process may use, read once (`available_parallelism` reads the
/// cgroup files at every call: seven system calls a search).
pub(super) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
}
