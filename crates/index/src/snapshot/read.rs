//! Reading a generation's live documents for a [`Snapshot`](super::Snapshot): every
//! segment of the manifest read in place on threads of its own ([`read_live_documents`]),
//! damaged segments left out and named, and the segments' vectors checked ahead of the
//! first search ([`check_ahead`]).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use excerpt_core::Document;

use crate::health::{self, Damage};
use crate::in_place::{segment_documents, SegmentDocs, SegmentVectors, VectorsCheck};
use crate::svec::{read_sentence_vectors, SentenceRows};
use crate::{IndexError, Manifest};

/// A live document as a snapshot reads it: the document, its segment's index in the
/// manifest, its first row in that segment's vectors, its sentence vectors.
pub(super) type LiveDocument = (Arc<Document>, usize, usize, Option<SentenceRows>);

/// What [`read_live_documents`] read: the live documents and, in manifest order, every
/// segment's vectors, documents and vectors check; and the damage found.
pub(super) struct LiveRead {
    pub(super) entries: Vec<LiveDocument>,
    pub(super) segments: Vec<SegmentVectors>,
    pub(super) segment_docs: Vec<Option<Arc<SegmentDocs>>>,
    pub(super) checks: Vec<VectorsCheck>,
    pub(super) damage: Damage,
}

/// `f` of every item, in the items' order, computed on up to one scoped thread per core:
/// threads of its own, not rayon's pool. Snapshots are opened by callers that hold a
/// lock (an engine's cached snapshot) on rayon's workers, where queries run: a worker
/// that waits for rayon work runs other queued jobs meanwhile, and a query among them
/// that asks for the same lock waits for its own thread forever. Under queries and
/// writes together, that hung a server's workers one after the other.
fn map_on_threads<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, f(item)));
        }
    };
    let mut all: Vec<(usize, R)> = std::thread::scope(|scope| {
        // A thread that cannot be started leaves its share to the others.
        let helpers: Vec<_> = (1..threads)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("excerpt-open".into())
                    .spawn_scoped(scope, work)
                    .ok()
            })
            .collect();
        let mut all = work();
        for h in helpers {
            match h.join() {
                Ok(done) => all.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// Reads the segments of `manifest` for a snapshot: the live documents (by id, each from
/// the newest segment holding it), every segment's vectors and documents in manifest
/// order (empty and `None` for one that cannot be read) and the damage found (segments
/// left out with the documents lost, sentence vectors left out).
pub(super) fn read_live_documents(dir: &Path, manifest: &Manifest) -> LiveRead {
    let dim = manifest.config.dimension;
    let mut entries: Vec<LiveDocument> = Vec::new();
    let mut segments: Vec<SegmentVectors> = Vec::new();
    let mut segment_docs: Vec<Option<Arc<SegmentDocs>>> = Vec::new();
    let mut checks: Vec<VectorsCheck> = Vec::new();
    let mut damage = Damage::default();
    // Segments are read (documents decoded, vectors files checked and mapped) in
    // parallel, then gathered in manifest order.
    let read = map_on_threads(&manifest.segments, |meta| {
        read_segment_in_place(dir, meta, dim)
    });
    for (si, (meta, read)) in manifest.segments.iter().zip(read).enumerate() {
        let (docs, (vectors, check), sentences) = match read {
            Ok(read) => read,
            Err(e) => {
                damage
                    .segments
                    .push(health::lost_of(dir, meta, health::describe(&e)));
                segments.push(SegmentVectors::empty());
                segment_docs.push(None);
                checks.push(VectorsCheck::sound());
                continue;
            }
        };
        let sentences = match sentences {
            Ok(s) => s,
            Err(e) => {
                damage.degraded.push(format!(
                    "{} (its documents are read without sentence vectors)",
                    health::describe(&e)
                ));
                vec![None; docs.documents().len()]
            }
        };
        let mut row = 0usize;
        for (d, sv) in docs.documents().iter().zip(sentences) {
            let n = d.chunks.len();
            if meta.deleted.binary_search(&d.id).is_err() {
                entries.push((Arc::clone(d), si, row, sv));
            }
            row += n;
        }
        segments.push(vectors);
        segment_docs.push(Some(docs));
        checks.push(check);
    }
    // By id, then newest segment first: a document live in two segments (only
    // after a manifest was recovered) is read from the newest, as writers do.
    entries.sort_by(|a, b| a.0.id.cmp(&b.0.id).then(b.1.cmp(&a.1)));
    entries.dedup_by(|later, first| later.0.id == first.0.id);
    // Documents of a lost segment that are live elsewhere (replaced) are not lost.
    for seg in &mut damage.segments {
        seg.lost.retain(|id| {
            entries
                .binary_search_by(|e| e.0.id.as_str().cmp(id))
                .is_err()
        });
    }
    LiveRead {
        entries,
        segments,
        segment_docs,
        checks,
        damage,
    }
}

/// Runs the vectors checks of a new snapshot on a thread of their own, one after the
/// other, ahead of the readers (which wait for a check still running, or run it
/// themselves if this thread has not reached it). Stops when the snapshot is dropped.
pub(super) fn check_ahead(checks: &Arc<[VectorsCheck]>) {
    if checks.iter().all(|c| c.found().is_some()) {
        return;
    }
    let checks = Arc::clone(checks);
    // Without the thread, readers run the checks themselves.
    let _ = std::thread::Builder::new()
        .name("excerpt-check".into())
        .spawn(move || {
            for check in checks.iter() {
                // Only this thread holds the checks: the snapshot is gone.
                if Arc::strong_count(&checks) == 1 {
                    return;
                }
                let _ = check.result();
            }
        });
}

/// A segment's documents, its mapped vectors with their check, and its sentence vectors
/// (per document; their own result, as losing them only degrades the segment).
type SegmentRead = (
    Arc<SegmentDocs>,
    (SegmentVectors, VectorsCheck),
    Result<Vec<Option<SentenceRows>>, IndexError>,
);

/// Reads segment `meta` for a snapshot: documents decoded (or shared, when this process
/// holds them already: [`segment_documents`]), vectors mapped, both checked.
fn read_segment_in_place(
    dir: &Path,
    meta: &crate::SegmentMeta,
    dim: usize,
) -> Result<SegmentRead, IndexError> {
    let docs = segment_documents(dir, meta)?;
    let vectors = SegmentVectors::open(dir, meta, dim, docs.rows())?;
    let sentences = read_sentence_vectors(dir, meta, docs.documents(), dim);
    Ok((docs, vectors, sentences))
}

pub(super) fn dir_size(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}
