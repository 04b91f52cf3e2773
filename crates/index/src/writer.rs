//! The single writer of an index directory ([`IndexWriter`]): documents staged with
//! their vectors, committed as a new generation (segment files, BM25 and ANN files
//! synced before the manifest that names them), segments merged, and the check that an
//! index's config can be written with another ([`check_config`]). Its repair is in
//! `maintenance`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use excerpt_core::Document;
use tantivy::TantivyDocument;

use crate::ann::{self, AnnOptions, ANN_DIR};
use crate::bm25::{self, Bm25Reader, Fields};
use crate::health;
use crate::in_place::read_checked_segment_documents;
use crate::manifest::sync_dir;
use crate::merge::{self, MergePolicy};
use crate::segment::{read_segment_ids, write_segment};
use crate::svec::write_sentence_vectors;
use crate::{IndexConfig, IndexError, Manifest, SegmentMeta, Snapshot, FORMAT_VERSION};

/// What a commit did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CommitStats {
    /// The generation now visible (unchanged when there was nothing to commit).
    pub generation: u64,
    /// Documents written.
    pub written: usize,
    /// Documents removed (deletions and replaced versions).
    pub removed: usize,
    /// Segments merged into others after the commit ([`MergePolicy`]), each merge a
    /// generation of its own.
    pub merged: usize,
}

/// A staged document: chunk vectors and, optionally, one vector per sentence.
type Staged = (Document, Vec<f32>, Option<Vec<f32>>);

/// The single writer of an index directory. Stage documents with [`IndexWriter::put`] and
/// [`IndexWriter::delete`]; nothing is visible to readers until [`IndexWriter::commit`].
/// Dropping a writer without committing discards what was staged.
pub struct IndexWriter {
    dir: PathBuf,
    manifest: Manifest,
    _lock: fs::File,
    /// Always `Some` until the writer is dropped (see the `Drop` impl).
    tantivy: Option<tantivy::IndexWriter<TantivyDocument>>,
    fields: Fields,
    /// Committed live documents: id -> (segment name, content hash).
    live: HashMap<String, (String, String)>,
    staged: BTreeMap<String, Staged>,
    staged_deletes: BTreeSet<String>,
    ann: AnnOptions,
    merge: MergePolicy,
}

impl Drop for IndexWriter {
    /// Waits for the BM25 merges the commits started, while the directory lock is still
    /// held: a merge finishing after the lock is released would collect files that the
    /// next writer, or a reader, has just read named in the BM25 metadata.
    fn drop(&mut self) {
        if let Some(w) = self.tantivy.take() {
            let _ = w.wait_merging_threads();
        }
    }
}

impl std::fmt::Debug for IndexWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexWriter")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl IndexWriter {
    /// Opens (creating if needed) the index in `dir` for writing with `config`. An
    /// existing index must have been created with the same config. Repairs a BM25 index
    /// left behind by a crash.
    pub fn open(dir: &Path, config: IndexConfig) -> Result<IndexWriter, IndexError> {
        fs::create_dir_all(dir).map_err(IndexError::io("creating", dir))?;
        let lock = lock_dir(dir)?;
        let bm25_dir = dir.join("bm25");
        let manifest = match Manifest::load(dir)? {
            Some(m) => {
                check_config(dir, &m.config, &config)?;
                m
            }
            // Segments or a previous manifest without a manifest: the manifest was
            // lost. Starting a new index here would replace every document; `repair`
            // recovers them.
            None if health::has_index_files(dir) => return Err(health::missing_manifest(dir)),
            None => {
                // A new index (or one whose first commit never happened): start clean.
                if bm25_dir.exists() {
                    fs::remove_dir_all(&bm25_dir).map_err(IndexError::io("removing", &bm25_dir))?;
                }
                Manifest {
                    format: FORMAT_VERSION,
                    generation: 0,
                    config,
                    segments: Vec::new(),
                    ann: None,
                }
            }
        };
        // Every segment is read before anything is changed on disk: a writer that
        // refuses a damaged index leaves it as it found it.
        let live = live_documents(dir, &manifest)?;
        check_writable(dir, &manifest)?;
        let (tantivy, fields) = open_bm25(dir, &manifest)?;
        if Manifest::load(dir)?.is_none() {
            manifest.store(dir)?;
        }
        let mut w = IndexWriter {
            dir: dir.to_path_buf(),
            manifest,
            _lock: lock,
            tantivy: Some(tantivy),
            fields,
            live,
            staged: BTreeMap::new(),
            staged_deletes: BTreeSet::new(),
            ann: AnnOptions::default(),
            merge: MergePolicy::default(),
        };
        w.collect_garbage();
        Ok(w)
    }

    /// The index's creation settings.
    pub fn config(&self) -> &IndexConfig {
        &self.manifest.config
    }

    /// Sets when commits build the ANN index (default: [`AnnOptions::default`]). Takes
    /// effect at the next commit that changes something.
    pub fn set_ann_options(&mut self, options: AnnOptions) {
        self.ann = options;
    }

    /// When commits build the ANN index.
    pub fn ann_options(&self) -> &AnnOptions {
        &self.ann
    }

    /// Sets when commits merge segments (default: [`MergePolicy::default`]); takes effect
    /// at the next commit.
    pub fn set_merge_policy(&mut self, policy: MergePolicy) {
        self.merge = policy;
    }

    /// The committed generation.
    pub fn generation(&self) -> u64 {
        self.manifest.generation
    }

    /// The content hash of the committed version of a document, if it is live.
    pub fn committed_hash(&self, id: &str) -> Option<&str> {
        self.live.get(id).map(|(_, h)| h.as_str())
    }

    /// Ids of committed live documents, sorted.
    pub fn committed_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.live.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Number of staged documents.
    pub fn staged(&self) -> usize {
        self.staged.len()
    }

    /// A reader view of the committed state.
    pub fn snapshot(&self) -> Result<Snapshot, IndexError> {
        let (tindex, fields) = bm25::open_or_create(&self.dir.join("bm25"))?;
        let reader = Bm25Reader::new(tindex, fields)?;
        Snapshot::load(&self.dir, self.manifest.clone(), Some(reader))
    }

    /// Stages a document with one vector per chunk (concatenated), replacing any
    /// committed or staged document with the same id.
    pub fn put(&mut self, doc: Document, vectors: Vec<f32>) -> Result<(), IndexError> {
        self.put_with_sentences(doc, vectors, None)
    }

    /// [`IndexWriter::put`] with, optionally, one vector per sentence of the document
    /// (concatenated, in sentence order): the `window` strategy reads them instead of
    /// embedding sentences at query time.
    pub fn put_with_sentences(
        &mut self,
        doc: Document,
        vectors: Vec<f32>,
        sentence_vectors: Option<Vec<f32>>,
    ) -> Result<(), IndexError> {
        let bad = |reason: String| IndexError::BadDocument {
            doc_id: doc.id.clone(),
            reason,
        };
        doc.validate().map_err(|e| bad(e.to_string()))?;
        let dim = self.manifest.config.dimension;
        // `values` must hold `rows` finite rows of the index's dimension.
        let check = |values: &[f32], rows: usize, what: &str| {
            if values.len() != rows * dim {
                return Err(bad(format!(
                    "{} {what} vector values for {rows} {what}s of dimension {dim}",
                    values.len()
                )));
            }
            if values.iter().any(|x| !x.is_finite()) {
                return Err(bad(format!("{what} vector values must be finite")));
            }
            Ok(())
        };
        check(&vectors, doc.chunks.len(), "chunk")?;
        if let Some(sv) = &sentence_vectors {
            check(sv, doc.sentences.len(), "sentence")?;
        }
        self.staged_deletes.remove(&doc.id);
        self.staged
            .insert(doc.id.clone(), (doc, vectors, sentence_vectors));
        Ok(())
    }

    /// Stages the deletion of a document; returns whether it existed (committed or
    /// staged).
    pub fn delete(&mut self, id: &str) -> bool {
        let was_staged = self.staged.remove(id).is_some();
        let committed = self.live.contains_key(id);
        if committed {
            self.staged_deletes.insert(id.to_string());
        }
        was_staged || committed
    }

    /// Makes everything staged visible as a new generation, atomically, then merges
    /// segments as the merge policy asks ([`IndexWriter::merge_segments`]). An error
    /// while merging is returned after the commit was made: the documents are in.
    pub fn commit(&mut self) -> Result<CommitStats, IndexError> {
        let touched: BTreeSet<String> = self
            .staged
            .keys()
            .chain(self.staged_deletes.iter())
            .cloned()
            .collect();
        if touched.is_empty() {
            return Ok(CommitStats {
                generation: self.manifest.generation,
                ..Default::default()
            });
        }
        let generation = self.next_generation();
        let mut next = self.manifest.clone();
        next.generation = generation;
        // Older segments keep their own format (recorded per segment); the index as a
        // whole is now only readable by builds that read this one's.
        next.format = FORMAT_VERSION;
        let staged = std::mem::take(&mut self.staged);
        let staged_deletes = std::mem::take(&mut self.staged_deletes);

        // 1. The new segment (documents in id order).
        let name = format!("g{generation:010}");
        let dim = next.config.dimension;
        let mut docs = Vec::with_capacity(staged.len());
        let mut vectors = Vec::new();
        let mut sentences = Vec::with_capacity(staged.len());
        for (_, (d, v, sv)) in staged {
            vectors.extend_from_slice(&v);
            docs.push(d);
            sentences.push(sv);
        }
        let written = docs.len();
        let new_segment = if docs.is_empty() {
            None
        } else {
            let rows = vectors.chunks_exact(dim.max(1));
            let mut meta = write_segment(&self.dir, &name, &docs, rows, dim)?;
            meta.svec_hash = write_sentence_vectors(&self.dir, &name, &docs, &sentences, dim)?;
            Some(meta)
        };

        // 2. Old versions become deleted in their segments.
        let removed = self.delete_old_versions(&mut next, &touched, &docs);
        next.segments.retain(|m| m.deleted.len() < m.docs);
        if let Some(seg) = new_segment {
            next.segments.push(seg);
        }

        // 2b. ANN files for the new segment (or new centroids), when the collection is
        // large enough; named by the manifest like the segments.
        next.ann = ann::update(&self.dir, &next, generation, &self.ann)?;

        // 3. BM25, tagged with the generation it belongs to.
        self.commit_bm25(&touched, &docs, generation, next.config.headers)?;

        // 4. The switch. The new files are synced (`write_durably`); their directory
        // entries are made durable before the manifest that names them, so a power loss
        // cannot leave a manifest naming files that are not there.
        sync_new_entries(&self.dir)?;
        next.store(&self.dir)?;
        self.manifest = next;
        for id in &staged_deletes {
            self.live.remove(id);
        }
        for d in docs {
            self.live.insert(d.id, (name.clone(), d.hash));
        }
        self.collect_garbage();
        let merged = self.merge_segments()?;
        Ok(CommitStats {
            generation: self.manifest.generation,
            written,
            removed,
            merged,
        })
    }

    /// Merges segments while the merge policy finds some to merge, each merge committed
    /// as a generation of its own; returns how many segments were merged into others.
    /// Commits call it; the segments of an index written by an older build are merged
    /// at its first commit.
    pub fn merge_segments(&mut self) -> Result<usize, IndexError> {
        let mut merged = 0;
        while let Some(picks) = self.merge.plan(&self.manifest.segments) {
            if !self.commit_merge(&picks)? {
                break;
            }
            merged += picks.len();
        }
        Ok(merged)
    }

    /// Replaces the segments at `picks` by one holding their live documents, as a new
    /// generation. `false` when they could not be merged as they are (sentence vectors
    /// that cannot be read) and nothing was changed.
    fn commit_merge(&mut self, picks: &[usize]) -> Result<bool, IndexError> {
        let generation = self.next_generation();
        let name = format!("g{generation:010}");
        let Some(merged) = merge::write_merged(&self.dir, &self.manifest, picks, &name)? else {
            return Ok(false);
        };
        let mut next = self.manifest.clone();
        next.generation = generation;
        next.format = FORMAT_VERSION;
        let sources: Vec<&SegmentMeta> =
            picks.iter().map(|&i| &self.manifest.segments[i]).collect();
        if let Some(meta) = next.ann.as_mut() {
            ann::carry_assignments(&self.dir, meta, &name, &sources, &merged.rows)?;
        }
        next.segments = self
            .manifest
            .segments
            .iter()
            .enumerate()
            .filter(|(i, _)| !picks.contains(i))
            .map(|(_, s)| s.clone())
            .collect();
        if merged.meta.docs > 0 {
            next.segments.push(merged.meta);
        }
        next.ann = ann::update(&self.dir, &next, generation, &self.ann)?;
        // The BM25 index holds documents, not segments: only its generation moves.
        self.commit_bm25(&BTreeSet::new(), &[], generation, next.config.headers)?;
        sync_new_entries(&self.dir)?;
        next.store(&self.dir)?;
        self.manifest = next;
        for (id, hash) in merged.ids {
            self.live.insert(id, (name.clone(), hash));
        }
        self.collect_garbage();
        Ok(true)
    }

    /// The generation the next commit (or merge) writes: above the manifest's and above
    /// every generation a file on disk is named by (files of a commit that failed, or
    /// that the manifest does not know), so that no commit names its files like
    /// existing ones. Its files are created new all the same (`O_EXCL`).
    fn next_generation(&self) -> u64 {
        health::highest_generation(&self.dir, &self.manifest) + 1
    }

    /// Marks the committed versions of the documents `touched` deleted in their segments
    /// of `next`; returns how many of them are removed (not rewritten among `docs`).
    fn delete_old_versions(
        &self,
        next: &mut Manifest,
        touched: &BTreeSet<String>,
        docs: &[Document],
    ) -> usize {
        let mut removed = 0;
        for id in touched {
            if let Some((seg, _)) = self.live.get(id) {
                if let Some(meta) = next.segments.iter_mut().find(|m| &m.name == seg) {
                    if let Err(pos) = meta.deleted.binary_search(id) {
                        meta.deleted.insert(pos, id.clone());
                    }
                }
                if !docs.iter().any(|d| &d.id == id) {
                    removed += 1;
                }
            }
        }
        removed
    }

    /// Replaces the documents `touched` in the BM25 index by `docs` and commits it,
    /// tagged with `generation`.
    fn commit_bm25(
        &mut self,
        touched: &BTreeSet<String>,
        docs: &[Document],
        generation: u64,
        headers: bool,
    ) -> Result<(), IndexError> {
        let Some(tantivy) = self.tantivy.as_mut() else {
            unreachable!("the BM25 writer is taken only on drop");
        };
        for id in touched {
            bm25::delete_document(tantivy, self.fields, id);
        }
        for d in docs {
            bm25::add_document(tantivy, self.fields, d, headers)?;
        }
        let mut prepared = tantivy.prepare_commit()?;
        prepared.set_payload(&generation.to_string());
        prepared.commit()?;
        Ok(())
    }

    /// Removes an index that was created by this writer's [`IndexWriter::open`] and never
    /// committed (generation 0, no segment): its manifest, BM25 files and lock file, and
    /// with `remove_dir` the directory itself when that leaves it empty. For an ingest
    /// that could read nothing, so that no empty index is left behind with its settings
    /// (model, chunker) fixed. Does nothing to an index with a commit.
    pub fn discard_uncommitted(mut self, remove_dir: bool) -> Result<(), IndexError> {
        if self.manifest.generation != 0 || !self.manifest.segments.is_empty() {
            return Ok(());
        }
        if let Some(w) = self.tantivy.take() {
            let _ = w.wait_merging_threads();
        }
        let manifest = self.dir.join(crate::MANIFEST_FILE);
        fs::remove_file(&manifest).map_err(IndexError::io("removing", &manifest))?;
        for sub in ["bm25", "segments", ANN_DIR] {
            let path = self.dir.join(sub);
            if path.exists() {
                fs::remove_dir_all(&path).map_err(IndexError::io("removing", &path))?;
            }
        }
        let _ = fs::remove_file(self.dir.join("LOCK"));
        if remove_dir {
            let _ = fs::remove_dir(&self.dir);
        }
        Ok(())
    }

    /// Removes segment and ANN files no manifest names (left by crashes, dropped
    /// segments or retrained centroids). Failures are ignored: garbage is harmless.
    fn collect_garbage(&mut self) {
        collect_garbage(&self.dir, &self.manifest);
    }
}

/// The live documents of the segments of `manifest` (id to segment name and content
/// hash), every segment read and checked; refused when a document is live in two.
fn live_documents(
    dir: &Path,
    manifest: &Manifest,
) -> Result<HashMap<String, (String, String)>, IndexError> {
    let mut live: HashMap<String, (String, String)> = HashMap::new();
    for meta in &manifest.segments {
        let docs = read_checked_segment_documents(dir, meta, manifest.config.dimension)?;
        for d in docs.documents() {
            if meta.deleted.binary_search(&d.id).is_err() {
                let entry = (meta.name.clone(), d.hash.clone());
                if let Some((other, _)) = live.insert(d.id.clone(), entry) {
                    return Err(refused(
                        dir,
                        format!(
                            "document {} is live in segments {other} and {}",
                            d.id, meta.name
                        ),
                    ));
                }
            }
        }
    }
    Ok(live)
}

/// The BM25 writer of the index in `dir`, in step with `manifest`: its files checked
/// (tantivy's checksums), damaged ones dropped and rebuilt from the segments, which
/// hold every chunk, as is an index committed for another generation.
fn open_bm25(
    dir: &Path,
    manifest: &Manifest,
) -> Result<(tantivy::IndexWriter<TantivyDocument>, Fields), IndexError> {
    let bm25_dir = dir.join("bm25");
    // The BM25 files are checked as the segments were: damaged ones are dropped.
    let open = || -> Result<_, IndexError> {
        let (tindex, fields) = bm25::open_or_create(&bm25_dir)?;
        let damaged = tindex.validate_checksum()?;
        if !damaged.is_empty() {
            return Err(IndexError::Corrupt {
                dir: bm25_dir.clone(),
                detail: format!("{} BM25 file(s) fail their checksum", damaged.len()),
            });
        }
        let tantivy = bm25::writer(&tindex)?;
        let generation = bm25::committed_generation(&tindex)?;
        Ok((tantivy, fields, generation))
    };
    let (mut tantivy, fields, bm25_generation) = match open() {
        Ok(opened) => opened,
        Err(_) => {
            fs::remove_dir_all(&bm25_dir).map_err(IndexError::io("removing", &bm25_dir))?;
            open()?
        }
    };
    let in_sync = bm25_generation == Some(manifest.generation);
    if !in_sync {
        // Rebuilt from the segments (read again: this is the rare path).
        tantivy.delete_all_documents()?;
        for meta in &manifest.segments {
            let docs = read_checked_segment_documents(dir, meta, manifest.config.dimension)?;
            for d in docs.documents() {
                if meta.deleted.binary_search(&d.id).is_err() {
                    bm25::add_document(&tantivy, fields, d, manifest.config.headers)?;
                }
            }
        }
    }
    if !in_sync {
        let mut prepared = tantivy.prepare_commit()?;
        prepared.set_payload(&manifest.generation.to_string());
        prepared.commit()?;
    }
    Ok((tantivy, fields))
}

/// The refusal of a writer on an index that `verify` reports damaged: what is wrong,
/// and what to run.
fn refused(dir: &Path, problem: String) -> IndexError {
    IndexError::Corrupt {
        dir: dir.to_path_buf(),
        detail: format!("{problem}; writes are refused until `excerpt repair` is run"),
    }
}

/// Refuses to write the index in `dir` at `manifest` (its segments already read) while
/// [`crate::verify`] would report damage other than what a writer heals itself (a BM25
/// index out of step with the manifest, or damaged, is rebuilt from the segments; ANN
/// files are rebuilt): the previous generation's manifest must parse (it is what a
/// damaged manifest is recovered from), and every segment's id list must match its
/// checksum (it names the documents of a segment that is lost).
fn check_writable(dir: &Path, manifest: &Manifest) -> Result<(), IndexError> {
    if let Err(e) = Manifest::load_file(dir, crate::PREVIOUS_MANIFEST_FILE) {
        return Err(refused(dir, health::describe(&e)));
    }
    for meta in manifest.segments.iter().filter(|m| m.ids_hash.is_some()) {
        if let Err(p) = read_segment_ids(dir, meta) {
            return Err(refused(dir, format!("segment {}: {p}", meta.name)));
        }
    }
    Ok(())
}

/// Takes the writer lock of `dir` (the file `LOCK`), or fails when another writer holds it.
pub(crate) fn lock_dir(dir: &Path) -> Result<fs::File, IndexError> {
    let lock_path = dir.join("LOCK");
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(IndexError::io("opening", &lock_path))?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(fs::TryLockError::WouldBlock) => Err(IndexError::Locked {
            dir: dir.to_path_buf(),
            lock: lock_path,
        }),
        Err(fs::TryLockError::Error(e)) => Err(IndexError::io("locking", &lock_path)(e)),
    }
}

/// Makes the directory entries of the files a commit wrote durable (`segments/`, `ann/`),
/// before the manifest that names them is stored: a power loss cannot leave a manifest
/// naming files that are not there.
pub(crate) fn sync_new_entries(dir: &Path) -> Result<(), IndexError> {
    for sub in ["segments", ANN_DIR] {
        let d = dir.join(sub);
        if d.is_dir() {
            sync_dir(&d)?;
        }
    }
    Ok(())
}

/// Removes the segment and ANN files of `dir` that neither `manifest` nor the previous
/// generation's ([`crate::PREVIOUS_MANIFEST_FILE`]) names. The previous generation's
/// files stay until the next commit: a damaged manifest is recovered from that
/// generation (the segments merged away in this one hold documents it names), and a
/// reader that has just read that manifest still finds them.
pub(crate) fn collect_garbage(dir: &Path, manifest: &Manifest) {
    let previous = Manifest::load_file(dir, crate::PREVIOUS_MANIFEST_FILE)
        .ok()
        .flatten();
    let manifests = std::iter::once(manifest).chain(previous.as_ref());
    let ann_dir = dir.join(ANN_DIR);
    if let Ok(rd) = fs::read_dir(&ann_dir) {
        let keep: BTreeSet<String> = manifests
            .clone()
            .flat_map(|m| ann::file_names(m.ann.as_ref()))
            .collect();
        for e in rd.flatten() {
            if !keep.contains(&*e.file_name().to_string_lossy()) {
                let _ = fs::remove_file(e.path());
            }
        }
        let _ = sync_dir(&ann_dir);
    }
    let seg_dir = dir.join("segments");
    let Ok(rd) = fs::read_dir(&seg_dir) else {
        return;
    };
    let keep: BTreeSet<&str> = manifests
        .flat_map(|m| m.segments.iter().map(|s| s.name.as_str()))
        .collect();
    for e in rd.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let stem = name.split('.').next().unwrap_or("");
        if !keep.contains(stem) {
            let _ = fs::remove_file(e.path());
        }
    }
    let _ = sync_dir(&seg_dir);
}

/// Checks that an index made with `existing` can be written with `requested`: the same
/// model, dimension, chunker and headers (`dir` names the index in the error).
pub fn check_config(
    dir: &Path,
    existing: &IndexConfig,
    requested: &IndexConfig,
) -> Result<(), IndexError> {
    let mismatch = |field, e: String, r: String| IndexError::ConfigMismatch {
        dir: dir.to_path_buf(),
        field,
        existing: e,
        requested: r,
    };
    if existing.model_id != requested.model_id {
        return Err(mismatch(
            "model",
            existing.model_id.clone(),
            requested.model_id.clone(),
        ));
    }
    if existing.dimension != requested.dimension {
        return Err(mismatch(
            "dimension",
            existing.dimension.to_string(),
            requested.dimension.to_string(),
        ));
    }
    if existing.chunker != requested.chunker {
        return Err(mismatch(
            "chunker",
            existing.chunker.to_string(),
            requested.chunker.to_string(),
        ));
    }
    if existing.headers != requested.headers {
        return Err(mismatch(
            "headers",
            existing.headers.to_string(),
            requested.headers.to_string(),
        ));
    }
    if existing.contextualizer != requested.contextualizer {
        let show = |c: &Option<crate::ContextualizerConfig>| {
            c.as_ref()
                .map_or_else(|| "none".to_string(), |c| c.to_string())
        };
        return Err(mismatch(
            "contextualizer",
            show(&existing.contextualizer),
            show(&requested.contextualizer),
        ));
    }
    Ok(())
}
