//! The index directory: the embedded index of `excerpt_index`, read through cached
//! snapshots and written through its `IndexWriter`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use excerpt_core::{indexed_text, ChunkKey, Document};
use excerpt_index::{
    AnnOptions, IndexConfig, IndexError, IndexWriter, Manifest, RepairReport, SegmentDocs,
    Snapshot, VerifyReport, MANIFEST_FILE,
};
use excerpt_ingest::ParsedDocument;
use excerpt_retrieve::SnapshotStore;

use super::{described, Backend, Catalog, OpenStore, Sink, Written};
use crate::contents::IndexContents;
use crate::spec::{DocumentSummary, IndexStats};
use crate::EngineError;

/// Ids named in a query's damage warning before the rest are counted.
const WARNING_IDS: usize = 20;

/// What a query on `snapshot` may be missing: its damage in one line each.
pub(crate) fn damage_warnings(snapshot: &Snapshot) -> Vec<String> {
    let damage = snapshot.damage();
    if damage.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Some(m) = &damage.manifest {
        out.push(format!("the index manifest is damaged: {m}"));
    }
    if !damage.segments.is_empty() {
        out.push(format!(
            "the index is damaged, {}; run `excerpt repair`",
            damage.summary(WARNING_IDS)
        ));
    } else if damage.manifest.is_some() {
        out.push("run `excerpt repair`".into());
    }
    out.extend(damage.degraded.iter().cloned());
    out
}

/// An index directory, and the snapshot of it last opened.
pub(super) struct DirBackend {
    dir: PathBuf,
    /// The snapshot last opened, and the manifest file's bytes when they were last
    /// found to name its generation, undamaged.
    snapshot: Mutex<Option<Checked>>,
}

/// A snapshot and the manifest bytes last found to name it ([`DirBackend::snapshot`]).
type Checked = (Arc<Snapshot>, Option<Vec<u8>>);

impl DirBackend {
    pub(super) fn new(dir: PathBuf) -> Self {
        DirBackend {
            dir,
            snapshot: Mutex::new(None),
        }
    }

    /// Opens the latest generation. A writer in another thread or process may commit
    /// while the segments of `generation` are read, and its BM25 merges collect files
    /// a reader has just seen named: such failures are retried (immediately while the
    /// generation moves, after a short pause for a BM25 file that went away), and
    /// reported only when they persist (then the damage is real).
    fn open_latest(&self, mut generation: u64) -> Result<Snapshot, EngineError> {
        let mut attempts = 0;
        loop {
            match Snapshot::open(&self.dir) {
                Ok(s) => return Ok(s),
                Err(e) => {
                    attempts += 1;
                    let now = Manifest::load(&self.dir)
                        .ok()
                        .flatten()
                        .map(|m| m.generation);
                    match now {
                        Some(g) if g != generation && attempts < 8 => generation = g,
                        Some(_) if e.is_transient() && attempts < 8 => {
                            std::thread::sleep(std::time::Duration::from_millis(5 << attempts));
                        }
                        _ => return Err(e.into()),
                    }
                }
            }
        }
    }
}

impl Backend for DirBackend {
    fn shown(&self) -> String {
        self.dir.display().to_string()
    }

    fn store(&self) -> Result<OpenStore, EngineError> {
        let snapshot = self.snapshot()?;
        // A query reads the vectors of every segment: its warnings name the files that
        // fail their check (each is checked once; see excerpt_index's `in_place`).
        snapshot.check_vectors();
        let warnings = damage_warnings(&snapshot);
        Ok((Arc::new(SnapshotStore(snapshot)), warnings))
    }

    /// Cached; reopened when a newer generation exists. A damaged index opens with what
    /// can be read ([`Snapshot::damage`] says what cannot); a damaged manifest is
    /// recovered again at every call, never cached.
    ///
    /// Every call reads the manifest file; when its bytes are those last found to name
    /// the cached snapshot's generation, the snapshot is current without parsing them
    /// again (a 100k-chunk index's manifest is some 20 KB of JSON, read at every query).
    fn snapshot(&self) -> Result<Arc<Snapshot>, EngineError> {
        let path = self.dir.join(MANIFEST_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(IndexError::io("reading", &path)(e).into()),
        };
        if let Some((s, Some(seen))) = self
            .snapshot
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            if bytes.as_ref() == Some(seen) {
                return Ok(s.clone());
            }
        }
        let current = match bytes
            .as_deref()
            .map(|b| Manifest::parse(&self.dir, MANIFEST_FILE, b))
        {
            Some(Ok(m)) => Some(m.generation),
            // No index, or a damaged one: the snapshot says which (and recovers what it
            // can of a damaged one).
            None | Some(Err(IndexError::Corrupt { .. })) => None,
            Some(Err(e)) => return Err(e.into()),
        };
        // `bytes` when they name `s`'s generation and `s` read its manifest whole.
        let seen = |s: &Snapshot| {
            (current == Some(s.manifest().generation) && s.damage().manifest.is_none())
                .then(|| bytes.clone())
                .flatten()
        };
        let mut guard = self.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((s, _)) = guard.as_ref() {
            if let Some(bytes) = seen(s) {
                let s = s.clone();
                *guard = Some((s.clone(), Some(bytes)));
                return Ok(s);
            }
        }
        let s = self.open_latest(current.unwrap_or(0))?.shared();
        *guard = Some((s.clone(), seen(&s)));
        Ok(s)
    }

    fn catalog(&self) -> Result<Box<dyn Catalog>, EngineError> {
        Ok(Box::new(DirCatalog {
            snap: self.snapshot()?,
            dir: self.dir.clone(),
        }))
    }

    fn committed_config(&self) -> Result<Option<IndexConfig>, EngineError> {
        Ok(Manifest::load(&self.dir)?.map(|m| m.config))
    }

    fn creates_index(&self) -> Option<bool> {
        (!self.dir.join(MANIFEST_FILE).exists()).then(|| self.dir.exists())
    }

    fn open_sink(&self, config: &IndexConfig) -> Result<Box<dyn Sink>, EngineError> {
        Ok(Box::new(DirSink::new(IndexWriter::open(
            &self.dir,
            config.clone(),
        )?)))
    }

    fn existing_sink(&self) -> Result<Box<dyn Sink>, EngineError> {
        let snap = self.snapshot()?;
        let writer = IndexWriter::open(&self.dir, snap.config().clone())?;
        Ok(Box::new(DirSink::new(writer)))
    }

    /// The index directory itself.
    fn context_cache_home(&self) -> PathBuf {
        self.dir.clone()
    }

    /// A directory index stores any text.
    fn check_storable(&self, _doc: &ParsedDocument) -> Result<(), EngineError> {
        Ok(())
    }

    fn verify(&self) -> Result<VerifyReport, EngineError> {
        Ok(excerpt_index::verify(&self.dir)?)
    }

    fn repair(
        &self,
        fallback: &dyn Fn() -> Option<IndexConfig>,
    ) -> Result<RepairReport, EngineError> {
        let report = IndexWriter::repair(&self.dir, fallback, &AnnOptions::default())?;
        // The cached snapshot names files the repair may have moved away.
        *self.snapshot.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(report)
    }
}

/// A text no chunk holds, whose key tells one way of keying chunks from another (a
/// model id is part of the key).
const KEY_PROBE: &str = "\u{0}excerpt: the key of this text names the way keys are made";

/// One segment's chunks by embedding-input key: `(hash of the key, document in the
/// segment, chunk position in the document)`, sorted. A hash may match another key:
/// [`stored_chunk`] checks the chunk's own key before it takes its vector.
struct SegmentKeys {
    docs: Arc<SegmentDocs>,
    by_key: Arc<Vec<(u64, u32, u32)>>,
}

/// A way of keying chunks: the key of [`KEY_PROBE`] and the headers setting.
type KeyTag = (String, bool);

/// The key indexes this process has built, by segment (the address of its shared
/// documents, held weakly: an entry lives while some snapshot holds the segment) and
/// way of keying. A server's ingests then hash the chunks of a segment once, not at
/// every write.
#[allow(clippy::type_complexity)]
static SEGMENT_KEYS: Mutex<
    Option<HashMap<(usize, KeyTag), (Weak<SegmentDocs>, Arc<Vec<(u64, u32, u32)>>)>>,
> = Mutex::new(None);

/// FNV-1a of a key: which entries of a [`SegmentKeys`] to look at.
fn key_hash(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The key index of the segment `docs` for the way of keying `tag`: the one this
/// process built already while the segment is held, else built now.
fn segment_keys(
    docs: &Arc<SegmentDocs>,
    tag: &KeyTag,
    key_of: &dyn Fn(&str) -> String,
    headers: bool,
) -> SegmentKeys {
    let id = (Arc::as_ptr(docs) as usize, tag.clone());
    {
        let guard = SEGMENT_KEYS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((held, by_key)) = guard.as_ref().and_then(|m| m.get(&id)) {
            if held.upgrade().is_some_and(|d| Arc::ptr_eq(&d, docs)) {
                return SegmentKeys {
                    docs: Arc::clone(docs),
                    by_key: Arc::clone(by_key),
                };
            }
        }
    }
    let mut by_key = Vec::new();
    for (j, doc) in docs.documents().iter().enumerate() {
        for (i, c) in doc.chunks.iter().enumerate() {
            let k = key_of(&indexed_text(doc, c, headers));
            by_key.push((key_hash(&k), j as u32, i as u32));
        }
    }
    by_key.sort_unstable();
    let by_key = Arc::new(by_key);
    let mut guard = SEGMENT_KEYS.lock().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    map.retain(|_, (held, _)| held.strong_count() > 0);
    map.insert(id, (Arc::downgrade(docs), Arc::clone(&by_key)));
    SegmentKeys {
        docs: Arc::clone(docs),
        by_key,
    }
}

/// The live chunk of `snap` whose embedding-input key is `key`, the first in the
/// snapshot's order (documents by id, chunks in reading order) when several are.
fn stored_chunk(
    snap: &Snapshot,
    segments: &[SegmentKeys],
    key: &str,
    key_of: &dyn Fn(&str) -> String,
    headers: bool,
) -> Option<ChunkKey> {
    let h = key_hash(key);
    let mut best: Option<(u32, u32, u32)> = None;
    for seg in segments {
        let from = seg.by_key.partition_point(|e| e.0 < h);
        for &(_, j, i) in seg.by_key[from..].iter().take_while(|e| e.0 == h) {
            let doc = &seg.docs.documents()[j as usize];
            let Some(d) = snap.live_index(doc) else {
                continue;
            };
            if best.is_some_and(|b| (b.0, b.1) <= (d, i)) {
                continue;
            }
            let c = &doc.chunks[i as usize];
            if key_of(&indexed_text(doc, c, headers)) == key {
                best = Some((d, i, c.ordinal));
            }
        }
    }
    best.map(|(d, _, ordinal)| ChunkKey::new(d, ordinal))
}

/// The embedded index's writer, staging documents until a commit. One per ingest run.
struct DirSink {
    writer: IndexWriter,
    /// The committed state whose vectors are reused, with each of its segments' key
    /// index (opened on first need).
    cache: Option<(Arc<Snapshot>, Vec<SegmentKeys>)>,
    /// The chunks this run has written, by embedding-input key: their document id and
    /// ordinal. A later batch of the same run reads their vectors once they are
    /// committed, instead of embedding the same text again (a copy of a file in
    /// another folder).
    written: HashMap<String, (Arc<str>, u32)>,
    /// The committed state `written` is read from, and its generation.
    recent: Option<(u64, Arc<Snapshot>)>,
}

impl DirSink {
    fn new(writer: IndexWriter) -> Self {
        DirSink {
            writer,
            cache: None,
            written: HashMap::new(),
            recent: None,
        }
    }

    /// Vectors of `keys` that this run wrote and committed, read from the latest
    /// committed state (opened again when a commit has happened since). A chunk is
    /// only reused when its text still gives the key (its document may have been
    /// written again since).
    fn written_vectors(
        &mut self,
        keys: &[&String],
        key_of: &dyn Fn(&str) -> String,
        headers: bool,
        out: &mut HashMap<String, Vec<f32>>,
    ) -> Result<(), EngineError> {
        let wanted: Vec<&String> = keys
            .iter()
            .copied()
            .filter(|k| !out.contains_key(*k) && self.written.contains_key(*k))
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let generation = self.writer.generation();
        let snap = match &self.recent {
            Some((g, snap)) if *g == generation => Arc::clone(snap),
            _ => {
                let snap = Arc::new(self.writer.snapshot()?);
                self.recent = Some((generation, Arc::clone(&snap)));
                snap
            }
        };
        for k in wanted {
            let (id, ordinal) = &self.written[k];
            let Some(d) = snap.doc_index(id) else {
                continue;
            };
            let Some(doc) = snap.doc(d) else {
                continue;
            };
            let Some(chunk) = doc.chunks.iter().find(|c| c.ordinal == *ordinal) else {
                continue;
            };
            if key_of(&indexed_text(doc, chunk, headers)) != *k {
                continue;
            }
            if let Some(v) = snap.vector(ChunkKey::new(d, *ordinal)) {
                out.insert(k.clone(), v.to_vec());
            }
        }
        Ok(())
    }
}

impl Sink for DirSink {
    fn delete(&mut self, ids: &[String]) -> Result<Vec<String>, EngineError> {
        Ok(ids
            .iter()
            .filter(|id| self.writer.delete(id))
            .cloned()
            .collect())
    }

    fn check_storable(&self, _doc: &ParsedDocument) -> Result<(), String> {
        Ok(())
    }

    fn counts_at_write(&self) -> bool {
        false
    }

    fn committed_hash(&self, id: &str) -> Result<Option<String>, EngineError> {
        Ok(self.writer.committed_hash(id).map(str::to_string))
    }

    fn stored_vectors(
        &mut self,
        keys: &[&String],
        key_of: &dyn Fn(&str) -> String,
        headers: bool,
    ) -> Result<HashMap<String, Vec<f32>>, EngineError> {
        if self.cache.is_none() {
            let snap = Arc::new(self.writer.snapshot()?);
            let tag = (key_of(KEY_PROBE), headers);
            let segments = snap
                .segment_documents()
                .map(|docs| segment_keys(docs, &tag, key_of, headers))
                .collect();
            self.cache = Some((snap, segments));
        }
        let mut out = HashMap::new();
        if let Some((snap, segments)) = self.cache.as_ref() {
            for k in keys {
                if let Some(key) = stored_chunk(snap, segments, k, key_of, headers) {
                    // A vector whose segment failed its check is not reused: the chunk
                    // is embedded again.
                    if let Some(v) = snap.vector(key) {
                        out.insert((*k).clone(), v.to_vec());
                    }
                }
            }
        }
        self.written_vectors(keys, key_of, headers, &mut out)?;
        Ok(out)
    }

    fn put(
        &mut self,
        doc: Document,
        vectors: Vec<f32>,
        chunks: &[(String, String)],
        sentence_vectors: Option<Vec<f32>>,
    ) -> Result<Option<Written>, EngineError> {
        let id: Arc<str> = Arc::from(doc.id.as_str());
        for (chunk, (key, _)) in doc.chunks.iter().zip(chunks) {
            self.written
                .entry(key.clone())
                .or_insert_with(|| (Arc::clone(&id), chunk.ordinal));
        }
        self.writer
            .put_with_sentences(doc, vectors, sentence_vectors)?;
        Ok(None)
    }

    fn commit(&mut self) -> Result<u64, EngineError> {
        Ok(self.writer.commit()?.generation)
    }

    fn generation(&self) -> u64 {
        self.writer.generation()
    }

    fn discard_new(self: Box<Self>, remove_dir: bool) -> Result<(), EngineError> {
        Ok(self.writer.discard_uncommitted(remove_dir)?)
    }

    fn document_count(&self) -> Result<usize, EngineError> {
        Ok(self.writer.committed_ids().len())
    }
}

/// An index directory's catalog: its snapshot, read in memory.
struct DirCatalog {
    snap: Arc<Snapshot>,
    dir: PathBuf,
}

impl Catalog for DirCatalog {
    fn page(
        &self,
        prefix: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(usize, Vec<DocumentSummary>), EngineError> {
        let matching: Vec<_> = self
            .snap
            .documents()
            .iter()
            .filter(|d| d.id.starts_with(prefix))
            .collect();
        let page = matching
            .iter()
            .skip(offset)
            .take(limit)
            .map(|d| DocumentSummary::of(d))
            .collect();
        Ok((matching.len(), page))
    }

    fn document(&self, id: &str) -> Result<Option<Arc<Document>>, EngineError> {
        let snap = &self.snap;
        Ok(snap.doc_index(id).and_then(|i| snap.doc(i)).cloned())
    }

    fn has_document(&self, id: &str) -> Result<bool, EngineError> {
        Ok(self.snap.doc_index(id).is_some())
    }

    fn generation_and_documents(&self) -> Result<(u64, usize), EngineError> {
        Ok((self.snap.manifest().generation, self.snap.documents().len()))
    }

    fn stats(&self) -> Result<IndexStats, EngineError> {
        let s = self.snap.stats();
        let cfg = self.snap.config();
        Ok(IndexStats {
            generation: s.generation,
            documents: s.documents,
            chunks: s.chunks,
            text_bytes: s.text_bytes,
            segments: s.segments,
            disk_bytes: s.disk_bytes,
            sentence_vectors: s.sentence_vectors,
            sentence_vector_documents: s.sentence_vector_documents,
            damaged: !s.damage.is_empty(),
            damage: s.damage.problems(),
            unavailable_documents: s.damage.lost_documents(),
            unavailable_unnamed: s.damage.lost_unnamed(),
            ..described(self.dir.clone(), cfg)
        })
    }

    fn contents(&self) -> Result<IndexContents, EngineError> {
        Ok(IndexContents::of_snapshot(self.snap.clone()))
    }
}
