//! A reader's view of one committed generation ([`Snapshot`]): its live documents and
//! their vectors read in place, the BM25 reader, the ANN index when there is one, and
//! the damage found; the dense search (exact, or ANN with an exact pass over a filtered
//! subset) and the BM25 search. Reading the generation is in `read`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use excerpt_core::{ChunkKey, Derived, Document};

use crate::ann::{AnnStatus, IvfIndex, DEFAULT_PROBE};
use crate::bm25::{self, Bm25Reader};
use crate::health::{self, Damage};
use crate::in_place::{SegmentDocs, SegmentVectors, VectorsCheck};
use crate::quant::{self, QuantRows};
use crate::svec::SentenceRows;
use crate::{dense, IndexConfig, IndexError, Manifest};
use read::{check_ahead, dir_size, read_live_documents, LiveRead};

mod read;

/// An ANN search takes at least this many candidates per result asked for.
const MIN_CANDIDATES_PER_RESULT: usize = 10;

/// A filtered search scans the allowed chunks exactly when they are at most this many
/// times the rows an unfiltered ANN search scores (centroids and candidates).
const EXACT_SUBSET_FACTOR: usize = 4;

/// Which documents of a snapshot a search may return (indexed like
/// [`Snapshot::documents`]). Applied inside both searches, never as a post-filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocMask(pub Vec<bool>);

impl DocMask {
    /// Whether document `doc` is allowed.
    pub fn allows(&self, doc: u32) -> bool {
        self.0.get(doc as usize).copied().unwrap_or(false)
    }
    /// Number of allowed documents.
    pub fn count(&self) -> usize {
        self.0.iter().filter(|&&b| b).count()
    }
}

/// Figures about one snapshot.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SnapshotStats {
    /// Manifest generation.
    pub generation: u64,
    /// Live documents.
    pub documents: usize,
    /// Live chunks.
    pub chunks: usize,
    /// Bytes of document text.
    pub text_bytes: usize,
    /// Segments named by the manifest.
    pub segments: usize,
    /// Bytes the index directory takes on disk.
    pub disk_bytes: u64,
    /// Whether BM25 had to be rebuilt in memory (the on-disk one did not match).
    pub bm25_rebuilt_in_memory: bool,
    /// Whether dense search uses the ANN index, and if not, why.
    pub ann: AnnStatus,
    /// Documents ingested with sentence vectors (`--sentence-vectors`).
    pub sentence_vector_documents: usize,
    /// Sentence vectors stored.
    pub sentence_vectors: usize,
    /// What could not be read (empty when the index is sound).
    pub damage: Damage,
}

/// An immutable view of one committed generation of an index.
pub struct Snapshot {
    dir: PathBuf,
    manifest: Manifest,
    docs: Vec<Arc<Document>>,
    by_id: HashMap<String, u32>,
    /// `first_row[d]..first_row[d + 1]` are document `d`'s rows in the snapshot's row
    /// numbering (documents in id order, the numbering the ANN lists use).
    first_row: Vec<usize>,
    /// Per document, its segment (in `segments`) and its first row there.
    doc_rows: Vec<(u32, usize)>,
    /// Each segment's vectors, mapped from its file (empty for a segment left out).
    segments: Vec<SegmentVectors>,
    /// Each segment's documents, live and deleted (`None` for a segment left out):
    /// held so that the next snapshot of a changed index, and writers, share them
    /// instead of reading the unchanged segments again ([`SegmentDocs`]).
    segment_docs: Vec<Option<Arc<SegmentDocs>>>,
    /// Each segment's check of its vectors file (see [`crate::in_place`]): its rows
    /// are read only once it has passed. Shared with the thread that runs the checks
    /// ahead of the readers.
    vector_checks: Arc<[VectorsCheck]>,
    /// Per document, its first row in `sentence_vectors` and its row count (0: none).
    sentence_rows: Vec<(usize, usize)>,
    sentence_vectors: SentenceRows,
    bm25: Bm25Reader,
    bm25_in_ram: bool,
    /// An in-memory BM25 index built from the segments the first time the one on disk
    /// failed under a search (`None` inside: the rebuild failed too).
    bm25_rebuilt: std::sync::OnceLock<Option<Bm25Reader>>,
    ann: Option<IvfIndex>,
    ann_status: AnnStatus,
    damage: Damage,
    /// Every row at 8 bits a component, read first by dense scans ([`quant`]): built
    /// at the second scan of at least [`quant::MIN_ROWS`] rows (a process that answers
    /// one query does not pay for it), when the index has at most [`quant::MAX_ROWS`]
    /// rows; on a thread of its own when the snapshot is [`Snapshot::shared`].
    quant: OnceLock<QuantRows>,
    /// Scans of at least [`quant::MIN_ROWS`] rows so far (counted until `quant` is built).
    long_scans: AtomicUsize,
    /// Whether a thread has been started to build `quant`.
    quant_started: AtomicBool,
    /// What context assembly derived from this snapshot's documents (see [`Derived`]):
    /// it lives and dies with the snapshot, so a changed index never reads what an
    /// earlier state's documents gave.
    derived: Derived,
    /// This snapshot, once [`Snapshot::shared`] has put it in an `Arc`: what the thread
    /// that builds `quant` holds on to.
    me: OnceLock<Weak<Snapshot>>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("dir", &self.dir)
            .field("generation", &self.manifest.generation)
            .field("docs", &self.docs.len())
            .finish_non_exhaustive()
    }
}

/// `reader`, told the languages of `docs` when its index is analysed per language.
fn with_document_languages<'a>(
    reader: Bm25Reader,
    docs: impl Iterator<Item = &'a Document>,
) -> Bm25Reader {
    match reader.analysis() {
        excerpt_analysis::Analysis::English => reader,
        excerpt_analysis::Analysis::PerLanguage => {
            let languages = bm25::languages_of(docs);
            reader.with_languages(languages)
        }
    }
}

impl Snapshot {
    /// Opens the latest committed generation of the index in `dir`.
    ///
    /// A damaged index still opens: segments whose files are missing or fail their
    /// checksum are left out, and a manifest that does not parse is recovered in memory
    /// from the previous generation's (an error only when there is none). What is
    /// missing is in [`Snapshot::damage`].
    pub fn open(dir: &Path) -> Result<Snapshot, IndexError> {
        for _attempt in 0..5 {
            let Some((manifest, recovered)) = health::load_manifest(dir, None)? else {
                return Err(IndexError::NotFound {
                    dir: dir.to_path_buf(),
                });
            };
            if recovered.is_some() {
                // The BM25 files belong to a generation no manifest names now.
                let mut s = Self::load(dir, manifest, None)?;
                s.damage.manifest = recovered;
                return Ok(s);
            }
            let bm25_dir = dir.join("bm25");
            let opened = bm25::open_existing(&bm25_dir).and_then(|found| {
                found
                    .map(|(index, fields)| {
                        let before = bm25::committed_generation(&index)?;
                        // tantivy can panic on a damaged file as it opens the segments'
                        // columns: that is damage too.
                        let reader = crate::quiet::catch_quietly(|| Bm25Reader::new(index, fields))
                            .unwrap_or_else(|_| {
                                Err(IndexError::Corrupt {
                                    dir: bm25_dir.clone(),
                                    detail: "the BM25 index failed while opening (damaged files)"
                                        .into(),
                                })
                            })?;
                        let after = reader.generation()?;
                        Ok((reader, before, after))
                    })
                    .transpose()
            });
            let opened = match opened {
                Ok(o) => o,
                // A writer's merge collected a file just named: look again.
                Err(e) if e.is_transient() => continue,
                // Damaged on disk: the segments hold every chunk, so rebuild it in
                // memory (`stats` says so); the next writer repairs the files.
                Err(_) => return Self::load(dir, manifest, None),
            };
            let generation = manifest.generation;
            let moved =
                || Manifest::load(dir).ok().flatten().map(|m| m.generation) != Some(generation);
            let loaded = match opened {
                Some((reader, before, after)) if before == Some(generation) && after == before => {
                    Self::load(dir, manifest, Some(reader))?
                }
                // A writer may have committed in between: look again.
                Some(_) if moved() => continue,
                _ => Self::load(dir, manifest, None)?,
            };
            // A segment file missing because a writer committed after the manifest was
            // read (merged away, or all its documents replaced) is not damage: look again.
            if !loaded.damage.segments.is_empty() && moved() {
                continue;
            }
            return Ok(loaded);
        }
        // Still moving after several attempts: take whatever is committed and rebuild.
        let (manifest, recovered) =
            health::load_manifest(dir, None)?.ok_or_else(|| IndexError::NotFound {
                dir: dir.to_path_buf(),
            })?;
        let mut s = Self::load(dir, manifest, None)?;
        s.damage.manifest = recovered;
        Ok(s)
    }

    /// Loads the segments of `manifest`; with no matching BM25 reader, rebuilds one in
    /// memory. Segments that cannot be read are left out and recorded in the damage;
    /// a document live in several segments is read from the newest.
    pub(crate) fn load(
        dir: &Path,
        manifest: Manifest,
        bm25_reader: Option<Bm25Reader>,
    ) -> Result<Snapshot, IndexError> {
        let dim = manifest.config.dimension;
        let LiveRead {
            entries,
            segments,
            segment_docs,
            checks: vector_checks,
            damage,
        } = read_live_documents(dir, &manifest);
        let vector_checks: Arc<[VectorsCheck]> = vector_checks.into();
        check_ahead(&vector_checks);
        let total_rows: usize = entries.iter().map(|e| e.0.chunks.len()).sum();
        let mut doc_rows = Vec::with_capacity(entries.len());
        let mut first_row = Vec::with_capacity(entries.len() + 1);
        let mut docs = Vec::with_capacity(entries.len());
        let mut by_id = HashMap::with_capacity(entries.len());
        let spans: Vec<(usize, usize, usize)> = entries
            .iter()
            .map(|(d, si, row, _)| (*si, *row, d.chunks.len()))
            .collect();
        let (ann, ann_status) = IvfIndex::load(dir, &manifest, &spans);
        drop(spans);
        let mut sentence_rows = Vec::with_capacity(entries.len());
        let mut sentence_vectors = SentenceRows::new(dim);
        let mut rows = 0usize;
        for (i, (d, si, row, sv)) in entries.into_iter().enumerate() {
            first_row.push(rows);
            let n_sentences = sv.as_ref().map_or(0, |_| d.sentences.len());
            sentence_rows.push((sentence_vectors.len(), n_sentences));
            if let Some(sv) = sv {
                sentence_vectors.append(&sv);
            }
            rows += d.chunks.len();
            doc_rows.push((si as u32, row));
            by_id.insert(d.id.clone(), i as u32);
            docs.push(d);
        }
        first_row.push(total_rows);
        let (bm25, bm25_in_ram) = match bm25_reader {
            Some(r) => (r, false),
            None => {
                let (index, fields) =
                    bm25::build_in_ram(docs.iter().map(|d| d.as_ref()), manifest.config.headers)?;
                (Bm25Reader::new(index, fields)?, true)
            }
        };
        let bm25 = with_document_languages(bm25, docs.iter().map(|d| d.as_ref()));
        Ok(Snapshot {
            dir: dir.to_path_buf(),
            manifest,
            docs,
            by_id,
            first_row,
            doc_rows,
            segments,
            segment_docs,
            vector_checks,
            sentence_rows,
            sentence_vectors,
            bm25,
            bm25_in_ram,
            bm25_rebuilt: std::sync::OnceLock::new(),
            ann,
            ann_status,
            damage,
            quant: OnceLock::new(),
            long_scans: AtomicUsize::new(0),
            quant_started: AtomicBool::new(false),
            derived: Derived::new(),
            me: OnceLock::new(),
        })
    }

    /// What could not be read: segments left out (with the documents lost), a
    /// recovered manifest, sentence vectors left out, and the vectors of segments whose
    /// files failed their check so far (their documents are still found by BM25).
    /// Empty when the index is sound. Vectors files are checked after the open
    /// (on a thread of the snapshot's); [`Snapshot::check_vectors`] waits for every
    /// check.
    pub fn damage(&self) -> Damage {
        let mut damage = self.damage.clone();
        for (meta, check) in self.manifest.segments.iter().zip(self.vector_checks.iter()) {
            if let Some(Err(problem)) = check.found() {
                damage.degraded.push(format!(
                    "segment {}: {problem} (its vectors are left out: its documents are \
                     found by BM25 only)",
                    meta.name
                ));
            }
        }
        damage
    }

    /// Checks every segment's vectors file now (each is checked once; this waits for
    /// checks already running), so that [`Snapshot::damage`] reports all of them.
    pub fn check_vectors(&self) {
        for check in self.vector_checks.iter() {
            let _ = check.result();
        }
    }

    /// The index directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// Creation settings.
    pub fn config(&self) -> &IndexConfig {
        &self.manifest.config
    }
    /// The committed manifest this snapshot reads.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }
    /// Live documents, sorted by id; [`ChunkKey::doc`] indexes this slice.
    pub fn documents(&self) -> &[Arc<Document>] {
        &self.docs
    }
    /// What context assembly derived from this snapshot's documents (empty until a
    /// query fills it; see [`Derived`]).
    pub fn derived(&self) -> &Derived {
        &self.derived
    }
    /// Document at position `doc`.
    pub fn doc(&self, doc: u32) -> Option<&Arc<Document>> {
        self.docs.get(doc as usize)
    }
    /// Position of the document with this id.
    pub fn doc_index(&self, id: &str) -> Option<u32> {
        self.by_id.get(id).copied()
    }

    /// Each readable segment's documents, live and deleted, in the manifest's order
    /// (the newest segment last). The same [`SegmentDocs`] are shared by the snapshots
    /// and writers of this process that read the same segment, so what a caller derives
    /// from one (keyed by its `Arc`) holds for as long as it exists.
    pub fn segment_documents(&self) -> impl Iterator<Item = &Arc<SegmentDocs>> + '_ {
        self.segment_docs.iter().flatten()
    }

    /// The index of `doc` among [`Snapshot::documents`] when it is the version this
    /// snapshot reads (the same `Arc`, from [`Snapshot::segment_documents`]); `None`
    /// for a deleted or replaced version.
    pub fn live_index(&self, doc: &Arc<Document>) -> Option<u32> {
        let d = *self.by_id.get(&doc.id)?;
        Arc::ptr_eq(self.docs.get(d as usize)?, doc).then_some(d)
    }
    /// Number of live chunks.
    pub fn chunk_count(&self) -> usize {
        self.first_row.last().copied().unwrap_or(0)
    }
    /// The vector of a chunk (unit length), if the key is valid.
    pub fn vector(&self, key: ChunkKey) -> Option<&[f32]> {
        let dim = self.manifest.config.dimension;
        let at = key.ordinal as usize * dim;
        self.doc_vectors(key.doc)?.get(at..at + dim)
    }
    /// All chunk vectors of document `doc`, row-major.
    pub fn doc_vectors(&self, doc: u32) -> Option<&[f32]> {
        let d = doc as usize;
        let dim = self.manifest.config.dimension;
        let n = self.first_row.get(d + 1)? - self.first_row.get(d)?;
        let &(segment, first) = self.doc_rows.get(d)?;
        // No row is read before its file passed its check.
        self.vector_checks
            .get(segment as usize)?
            .result()
            .as_ref()
            .ok()?;
        self.segments
            .get(segment as usize)?
            .rows()
            .get(first * dim..(first + n) * dim)
    }

    /// The rows numbered `rows`, sorted, with their vectors (rows out of range are left
    /// out).
    fn rows_in_order(&self, mut rows: Vec<usize>) -> Vec<(usize, &[f32])> {
        rows.sort_unstable();
        let dim = self.manifest.config.dimension;
        let mut out = Vec::with_capacity(rows.len());
        let mut d = 0usize;
        let mut vectors: &[f32] = &[];
        for row in rows {
            if row >= self.first_row[d + 1] || vectors.is_empty() {
                // The owner: the last document starting at or before `row`, from `d` on.
                d += self.first_row[d..].partition_point(|&r| r <= row) - 1;
                if d + 1 >= self.first_row.len() {
                    break;
                }
                vectors = self.doc_vectors(d as u32).unwrap_or_default();
            }
            let at = (row - self.first_row[d]) * dim;
            if let Some(v) = vectors.get(at..at + dim) {
                out.push((row, v));
            }
        }
        out
    }

    /// The rows of the documents `docs` yields, with their numbers.
    fn doc_rows_of<'a>(
        &'a self,
        docs: impl Iterator<Item = usize> + 'a,
    ) -> impl Iterator<Item = (usize, &'a [f32])> + 'a {
        let dim = self.manifest.config.dimension.max(1);
        docs.flat_map(move |d| {
            let first = self.first_row[d];
            self.doc_vectors(d as u32)
                .unwrap_or_default()
                .chunks_exact(dim)
                .enumerate()
                .map(move |(i, v)| (first + i, v))
        })
    }

    /// The vector of sentence `sentence` of document `doc`, when the document was
    /// ingested with sentence vectors: read back from its 8-bit row ([`SentenceRows`]).
    pub fn sentence_vector(&self, doc: u32, sentence: usize) -> Option<Vec<f32>> {
        let &(first, n) = self.sentence_rows.get(doc as usize)?;
        if sentence >= n {
            return None;
        }
        self.sentence_vectors.row(first + sentence)
    }

    /// Whether dense search uses the ANN index, and if not, why.
    pub fn ann_status(&self) -> &AnnStatus {
        &self.ann_status
    }

    /// Dense search: the `k` chunks with the highest cosine to `query` (a unit vector),
    /// best first, ties by key; only in documents `mask` allows. Approximate (the ANN
    /// index at [`DEFAULT_PROBE`]) when the snapshot has one and the mask allows many
    /// chunks, exact otherwise.
    pub fn dense_search(
        &self,
        query: &[f32],
        k: usize,
        mask: Option<&DocMask>,
    ) -> Vec<(ChunkKey, f32)> {
        self.dense_search_ann(query, k, mask, DEFAULT_PROBE)
            .unwrap_or_else(|| self.dense_search_exact(query, k, mask))
    }

    /// Approximate dense search with the ANN index: scores the centroids, then exactly
    /// the rows of the best lists until about `probe` average lists' worth of allowed rows
    /// (and at least ten per result) have been seen. Results are ordered as exact search
    /// orders them. `None` when there is no usable ANN index, or when exact search is as
    /// cheap (a mask that allows few chunks).
    pub fn dense_search_ann(
        &self,
        query: &[f32],
        k: usize,
        mask: Option<&DocMask>,
        probe: f64,
    ) -> Option<Vec<(ChunkKey, f32)>> {
        let ivf = self.ann.as_ref()?;
        let dim = self.manifest.config.dimension;
        let n = self.chunk_count();
        if query.len() != dim || k == 0 || ivf.lists() == 0 {
            return None;
        }
        let target = ((probe.max(0.0) * n as f64 / ivf.lists() as f64).ceil() as usize)
            .max(k.saturating_mul(MIN_CANDIDATES_PER_RESULT));
        let work = ivf.lists() + target;
        let rows = match mask {
            None if work >= n => return None,
            None => ivf.candidates(query, target, None),
            Some(m) => {
                let allowed: usize = (0..self.docs.len())
                    .filter(|&d| m.allows(d as u32))
                    .map(|d| self.first_row[d + 1] - self.first_row[d])
                    .sum();
                if allowed <= work.saturating_mul(EXACT_SUBSET_FACTOR) {
                    return None;
                }
                let ok = |row: usize| m.allows(self.doc_of_row(row));
                ivf.candidates(query, target, Some(&ok))
            }
        };
        Some(
            // In row order, the rows are read front to back through the segment files.
            self.top_k_rows(query, k, &self.rows_in_order(rows))
                .into_iter()
                .map(|(row, s)| (self.key_of_row(row), s))
                .collect(),
        )
    }

    /// Exact dense search: the `k` chunks with the highest cosine to `query` (a unit
    /// vector), best first, ties by key; only in documents `mask` allows. Scans every
    /// allowed chunk.
    pub fn dense_search_exact(
        &self,
        query: &[f32],
        k: usize,
        mask: Option<&DocMask>,
    ) -> Vec<(ChunkKey, f32)> {
        let dim = self.manifest.config.dimension;
        if query.len() != dim {
            return Vec::new();
        }
        let docs = (0..self.docs.len()).filter(|&d| mask.is_none_or(|m| m.allows(d as u32)));
        let rows: Vec<(usize, &[f32])> = self.doc_rows_of(docs).collect();
        self.top_k_rows(query, k, &rows)
            .into_iter()
            .map(|(row, s)| (self.key_of_row(row), s))
            .collect()
    }

    /// The `k` of `rows` with the highest dot product with `query`, best first, ties by
    /// row: through the 8-bit rows when the scan is long enough for them to pay
    /// ([`quant`]; the same answer, bit for bit), else by [`dense::top_k_rows_split`].
    fn top_k_rows(&self, query: &[f32], k: usize, rows: &[(usize, &[f32])]) -> Vec<(usize, f32)> {
        self.quant_rows(rows.len())
            .and_then(|q| quant::top_k_quantized(query, k, rows, q))
            .unwrap_or_else(|| dense::top_k_rows_split(query, k, rows))
    }

    /// The 8-bit rows for a scan of `scanned` rows; `None` when the scan is short, the
    /// index too large, or the rows are not built yet. The second long scan has them
    /// built: on a thread of its own when the snapshot is [`Snapshot::shared`] (scans
    /// read the f32 rows until they are ready), else right there.
    fn quant_rows(&self, scanned: usize) -> Option<&QuantRows> {
        if scanned < quant::MIN_ROWS || self.chunk_count() > quant::MAX_ROWS {
            return None;
        }
        if let Some(q) = self.quant.get() {
            return Some(q);
        }
        if self.long_scans.fetch_add(1, Ordering::Relaxed) == 0 {
            return None;
        }
        if let Some(me) = self.me.get().and_then(Weak::upgrade) {
            if self.quant_started.swap(true, Ordering::AcqRel) {
                return None;
            }
            // The build reads every row and writes a new copy of them (about 0.2 s at
            // 100,000 rows on two cores, most of it the kernel handing over fresh
            // pages): done in the scan, it stalled that query by as much. One thread,
            // not rayon's pool, so the queries that run meanwhile keep their threads.
            let started = std::thread::Builder::new()
                .name("excerpt-quant".into())
                .spawn(move || {
                    me.quant.get_or_init(|| me.build_quant(false));
                });
            if started.is_ok() {
                return None;
            }
        }
        // Built before the cell is entered, not inside `get_or_init`: the build waits on
        // rayon's pool, whose waiting worker may run a queued scan of this snapshot,
        // which would ask for the cell being filled on its own thread (a deadlock).
        // Scans at once may build it twice; the first stored is kept.
        let built = self.build_quant(true);
        Some(self.quant.get_or_init(|| built))
    }

    /// The 8-bit copy of every row, built on rayon's threads when `parallel`.
    fn build_quant(&self, parallel: bool) -> QuantRows {
        let all: Vec<(usize, &[f32])> = self.doc_rows_of(0..self.docs.len()).collect();
        QuantRows::build(
            self.manifest.config.dimension,
            self.chunk_count(),
            &all,
            parallel,
        )
    }

    /// This snapshot in an `Arc` that lets it do its own upkeep on threads of its own
    /// rather than in the searches that need it: the 8-bit copy of the rows that exact
    /// scans read first is built on a thread (scans read the f32 rows meanwhile, with
    /// the same answers). A long-lived reader (a server) should open snapshots this way.
    pub fn shared(self) -> Arc<Self> {
        let me = Arc::new(self);
        let _ = me.me.set(Arc::downgrade(&me));
        me
    }

    /// Whether exact scans read the 8-bit copy of the rows first yet: it is
    /// built at the second scan of at least 2,048 rows, for indexes of at most 2^18
    /// rows.
    pub fn scan_rows_ready(&self) -> bool {
        self.quant.get().is_some()
    }

    fn key_of_row(&self, row: usize) -> ChunkKey {
        let d = self.doc_of_row(row);
        ChunkKey::new(d, (row - self.first_row[d as usize]) as u32)
    }

    fn doc_of_row(&self, row: usize) -> u32 {
        // first_row is sorted; the owner is the last document starting at or before
        // `row` (documents without chunks share their start with the next one).
        (self.first_row.partition_point(|&r| r <= row) - 1) as u32
    }

    /// BM25 search: the `k` best chunks for `text`, best first, ties by key; only in
    /// documents `mask` allows.
    pub fn bm25_search(
        &self,
        text: &str,
        k: usize,
        mask: Option<&DocMask>,
    ) -> Result<Vec<(ChunkKey, f32)>, IndexError> {
        let allowed: Option<Vec<&str>> = mask.map(|m| {
            self.docs
                .iter()
                .enumerate()
                .filter(|(i, _)| m.allows(*i as u32))
                .map(|(_, d)| d.id.as_str())
                .collect()
        });
        let hits = match self.bm25_search_guarded(&self.bm25, text, k, allowed.as_deref()) {
            Ok(h) => h,
            Err(_) if !self.bm25_in_ram => {
                // The files on disk fail under search (tantivy found them damaged, or
                // panicked reading them): answer from an index rebuilt from the segments.
                let rebuilt = self.bm25_rebuilt.get_or_init(|| {
                    bm25::build_in_ram(
                        self.docs.iter().map(|d| d.as_ref()),
                        self.manifest.config.headers,
                    )
                    .and_then(|(index, fields)| Bm25Reader::new(index, fields))
                    .map(|r| with_document_languages(r, self.docs.iter().map(|d| d.as_ref())))
                    .ok()
                });
                match rebuilt {
                    Some(r) => self.bm25_search_guarded(r, text, k, allowed.as_deref())?,
                    None => self.bm25_search_guarded(&self.bm25, text, k, allowed.as_deref())?,
                }
            }
            Err(e) => return Err(e),
        };
        let mut out: Vec<(ChunkKey, f32)> = hits
            .into_iter()
            .filter_map(|(id, ord, s)| {
                let d = self.doc_index(&id)?;
                ((ord as usize) < self.docs[d as usize].chunks.len())
                    .then_some((ChunkKey::new(d, ord), s))
            })
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(out)
    }

    /// One BM25 search in which a panic of the search library (on damaged files) becomes
    /// an error.
    fn bm25_search_guarded(
        &self,
        reader: &Bm25Reader,
        text: &str,
        k: usize,
        allowed: Option<&[&str]>,
    ) -> Result<Vec<(String, u32, f32)>, IndexError> {
        crate::quiet::catch_quietly(|| reader.search(text, k, allowed)).unwrap_or_else(|_| {
            Err(IndexError::Corrupt {
                dir: self.dir.join("bm25"),
                detail: "the BM25 index failed while searching (damaged files)".into(),
            })
        })
    }

    /// The analysed query terms BM25 searches for.
    pub fn bm25_terms(&self, text: &str) -> Result<Vec<String>, IndexError> {
        self.bm25.terms(text)
    }

    /// How the BM25 index analyses text: [`excerpt_analysis::Analysis::English`] for an
    /// index made before analysis per language (rebuild it, in a new index directory, to
    /// analyse each document in its language).
    pub fn bm25_analysis(&self) -> excerpt_analysis::Analysis {
        self.bm25.analysis()
    }

    /// Figures about this snapshot, its damage complete: every vectors file is
    /// checked first ([`Snapshot::check_vectors`]).
    pub fn stats(&self) -> SnapshotStats {
        SnapshotStats {
            generation: self.manifest.generation,
            documents: self.docs.len(),
            chunks: self.chunk_count(),
            text_bytes: self.docs.iter().map(|d| d.text.len()).sum(),
            segments: self.manifest.segments.len(),
            disk_bytes: dir_size(&self.dir),
            bm25_rebuilt_in_memory: self.bm25_in_ram
                || self.bm25_rebuilt.get().is_some_and(Option::is_some),
            ann: self.ann_status.clone(),
            sentence_vector_documents: self.sentence_rows.iter().filter(|r| r.1 > 0).count(),
            sentence_vectors: self.sentence_vectors.len(),
            damage: {
                self.check_vectors();
                self.damage()
            },
        }
    }
}
