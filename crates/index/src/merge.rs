//! Merging segments after commits.
//!
//! Every commit adds a segment, and a document replaced or deleted stays in its segment,
//! named deleted by the manifest. Without merges, an index written a document at a time
//! (a server's or an agent's ingests) ends with as many segments as writes: every
//! snapshot and writer opens each segment's files, so a write costs more the more were
//! made before it, and the old versions of replaced documents stay on disk for good.
//!
//! After a commit, the writer merges segments of like size, as log-structured stores do:
//! the segments whose live chunks fall in one tier (at most [`MergePolicy::floor_chunks`],
//! then each tier [`MergePolicy::factor`] times the one below) are merged, the oldest
//! `factor` of a tier at a time, once a tier holds that many. Each chunk is copied about
//! once per tier it climbs, and an index of `n` chunks keeps fewer than `factor` segments
//! per tier: `factor` × log(`n`) at most. A segment with most of its documents deleted
//! is rewritten alone. Merged segments never exceed [`MergePolicy::max_chunks`].
//!
//! A merge is a commit of its own (a new generation whose manifest names the merged
//! segment instead of its sources): the documents, their vectors, sentence vectors and
//! IVF lists are copied as they are, so every search gives the same results before and
//! after it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use excerpt_core::Document;

use crate::in_place::{read_checked_segment, SegmentDocs, SegmentVectors};
use crate::segment::write_segment;
use crate::svec::{read_sentence_vectors, write_sentence_rows, SentenceRows};
use crate::{IndexError, Manifest, SegmentMeta};

/// When commits merge segments (see the module). The default keeps an index of a
/// million chunks written a document at a time to a few dozen segments.
#[derive(Debug, Clone, PartialEq)]
pub struct MergePolicy {
    /// How many segments of one tier are merged at once, and how much larger each tier
    /// is than the one below. Below 2, segments are never merged.
    pub factor: usize,
    /// Live chunks up to which a segment is in the lowest tier.
    pub floor_chunks: usize,
    /// The most chunks a merge writes: segments of more than half of it are never merged
    /// with others.
    pub max_chunks: usize,
    /// A segment with a larger share of its documents deleted (replaced versions
    /// included) is rewritten without them.
    pub max_deleted_share: f64,
}

impl Default for MergePolicy {
    fn default() -> Self {
        MergePolicy {
            factor: 10,
            floor_chunks: 1_000,
            max_chunks: 1 << 18,
            max_deleted_share: 0.5,
        }
    }
}

impl MergePolicy {
    /// A policy that never merges: every commit's segment stays as it was written.
    pub fn never() -> MergePolicy {
        MergePolicy {
            factor: 0,
            ..MergePolicy::default()
        }
    }

    /// The tier of a segment of `live` chunks: 0 up to the floor, then one more each
    /// time the size is `factor` times larger.
    fn tier(&self, live: usize) -> u32 {
        let mut tier = 0;
        let mut bound = self.floor_chunks.max(1);
        while live > bound {
            tier += 1;
            bound = bound.saturating_mul(self.factor);
        }
        tier
    }

    /// The segments (positions in `segments`, oldest first) the next merge takes, if
    /// any: the oldest `factor` of the lowest tier that holds that many and fits in
    /// [`MergePolicy::max_chunks`]; else the oldest segment whose deleted share is above
    /// [`MergePolicy::max_deleted_share`], alone.
    pub(crate) fn plan(&self, segments: &[SegmentMeta]) -> Option<Vec<usize>> {
        if self.factor < 2 {
            return None;
        }
        let mut tiers: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, seg) in segments.iter().enumerate() {
            let live = live_chunks(seg);
            if live.saturating_mul(2) <= self.max_chunks {
                tiers.entry(self.tier(live)).or_default().push(i);
            }
        }
        for members in tiers.values() {
            if members.len() < self.factor {
                continue;
            }
            let pick = &members[..self.factor];
            let total: usize = pick.iter().map(|&i| live_chunks(&segments[i])).sum();
            if total <= self.max_chunks {
                return Some(pick.to_vec());
            }
        }
        segments
            .iter()
            .position(|s| {
                !s.deleted.is_empty()
                    && s.deleted.len() as f64 > self.max_deleted_share * s.docs as f64
            })
            .map(|i| vec![i])
    }
}

/// The chunks of a segment's live documents, estimated from the manifest alone (its
/// chunks in proportion to the documents not deleted).
fn live_chunks(seg: &SegmentMeta) -> usize {
    if seg.docs == 0 {
        return 0;
    }
    let live_docs = seg.docs.saturating_sub(seg.deleted.len());
    (seg.chunks * live_docs).div_ceil(seg.docs)
}

/// A segment written by [`write_merged`].
pub(crate) struct Merged {
    /// Its manifest entry.
    pub meta: SegmentMeta,
    /// Its rows in order, as runs (source: position in the sources, first row in the
    /// source, number of rows).
    pub rows: Vec<(usize, usize, usize)>,
    /// Its documents' ids and content hashes, in its order.
    pub ids: Vec<(String, String)>,
}

/// One segment merged: its documents, mapped vectors and sentence vectors as read.
struct Source {
    docs: Arc<SegmentDocs>,
    vectors: SegmentVectors,
    sentences: Vec<Option<SentenceRows>>,
}

/// Writes segment `name` with the live documents of `manifest`'s segments at positions
/// `picks`, in id order, with their vectors, sentence vectors and chunks as stored.
/// `Ok(None)` when a source's sentence vectors cannot be read: readers already leave
/// them out and report it, and a merge would drop them silently (`excerpt repair` is
/// what drops them, saying so).
pub(crate) fn write_merged(
    dir: &Path,
    manifest: &Manifest,
    picks: &[usize],
    name: &str,
) -> Result<Option<Merged>, IndexError> {
    let dim = manifest.config.dimension;
    let mut sources = Vec::with_capacity(picks.len());
    for &i in picks {
        let meta = &manifest.segments[i];
        let (docs, vectors) = read_checked_segment(dir, meta, dim)?;
        let sentences = if meta.svec_hash.is_some() {
            match read_sentence_vectors(dir, meta, docs.documents(), dim) {
                Ok(s) => s,
                Err(_) => return Ok(None),
            }
        } else {
            Vec::new()
        };
        sources.push(Source {
            docs,
            vectors,
            sentences,
        });
    }
    // Live documents as (source, position in it, first row).
    let mut live: Vec<(usize, usize, usize)> = Vec::new();
    for (s, (src, &i)) in sources.iter().zip(picks).enumerate() {
        let deleted = &manifest.segments[i].deleted;
        let mut row = 0;
        for (k, d) in src.docs.documents().iter().enumerate() {
            if deleted.binary_search(&d.id).is_err() {
                live.push((s, k, row));
            }
            row += d.chunks.len();
        }
    }
    let doc = |&(s, k, _): &(usize, usize, usize)| -> &Document {
        sources[s].docs.documents()[k].as_ref()
    };
    live.sort_by(|a, b| doc(a).id.cmp(&doc(b).id));
    let docs: Vec<&Document> = live.iter().map(doc).collect();
    let rows: Vec<(usize, usize, usize)> = live
        .iter()
        .map(|e| (e.0, e.2, doc(e).chunks.len()))
        .collect();
    let vectors = rows.iter().flat_map(|&(s, first, n)| {
        sources[s].vectors.rows()[first * dim..(first + n) * dim].chunks_exact(dim.max(1))
    });
    let mut meta = write_segment(dir, name, &docs, vectors, dim)?;
    let sentences: Vec<Option<&SentenceRows>> = live
        .iter()
        .map(|&(s, k, _)| sources[s].sentences.get(k).and_then(Option::as_ref))
        .collect();
    meta.svec_hash = write_sentence_rows(dir, name, &docs, &sentences, dim)?;
    let ids = docs
        .iter()
        .map(|d| (d.id.clone(), d.hash.clone()))
        .collect();
    Ok(Some(Merged { meta, rows, ids }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(docs: usize, chunks: usize, deleted: usize) -> SegmentMeta {
        SegmentMeta {
            name: String::new(),
            docs,
            chunks,
            docs_hash: String::new(),
            vec_hash: String::new(),
            deleted: (0..deleted).map(|i| format!("d{i}")).collect(),
            format: crate::FORMAT_VERSION,
            svec_hash: None,
            ids_hash: None,
        }
    }

    #[test]
    fn tiers_grow_by_the_factor_above_the_floor() {
        let p = MergePolicy::default();
        assert_eq!(p.tier(0), 0);
        assert_eq!(p.tier(1_000), 0);
        assert_eq!(p.tier(1_001), 1);
        assert_eq!(p.tier(10_000), 1);
        assert_eq!(p.tier(10_001), 2);
        assert!(p.tier(usize::MAX) > 2);
    }

    #[test]
    fn the_oldest_segments_of_the_lowest_full_tier_are_merged() {
        let p = MergePolicy::default();
        // Nine small segments: nothing to merge yet.
        let mut segs: Vec<SegmentMeta> = (0..9).map(|_| seg(1, 40, 0)).collect();
        segs.insert(3, seg(10, 5_000, 0));
        assert_eq!(p.plan(&segs), None);
        // A tenth small one fills tier 0; the tier-1 segment between them stays.
        segs.push(seg(1, 40, 0));
        assert_eq!(p.plan(&segs), Some(vec![0, 1, 2, 4, 5, 6, 7, 8, 9, 10]));
        // Eleven: the oldest ten.
        segs.push(seg(1, 40, 0));
        assert_eq!(p.plan(&segs).unwrap().len(), 10);
        assert_eq!(MergePolicy::never().plan(&segs), None);
    }

    #[test]
    fn large_segments_are_left_alone_and_mostly_deleted_ones_rewritten() {
        let p = MergePolicy {
            max_chunks: 100_000,
            ..MergePolicy::default()
        };
        // Ten segments of 60k chunks are over half the largest merge.
        let segs: Vec<SegmentMeta> = (0..10).map(|_| seg(10, 60_000, 0)).collect();
        assert_eq!(p.plan(&segs), None);
        // Ten of 40k fit one by one but not together.
        let mut segs: Vec<SegmentMeta> = (0..10).map(|_| seg(10, 40_000, 0)).collect();
        assert_eq!(p.plan(&segs), None);
        // Half deleted is not yet more than half.
        segs[4] = seg(10, 40_000, 5);
        assert_eq!(p.plan(&segs), None);
        segs[6] = seg(10, 40_000, 6);
        assert_eq!(p.plan(&segs), Some(vec![6]));
        // Deleted documents do not count in a segment's size.
        let segs: Vec<SegmentMeta> = (0..10).map(|_| seg(10, 60_000, 2)).collect();
        assert_eq!(live_chunks(&segs[0]), 48_000);
        assert_eq!(p.plan(&segs), None);
    }
}
