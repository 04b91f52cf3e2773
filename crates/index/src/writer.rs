use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use excerpt_core::Document;
use tantivy::TantivyDocument;

use crate::ann::{self, AnnOptions, ANN_DIR};
use crate::bm25::{self, Bm25Reader, Fields};
use crate::manifest::sync_dir;
use crate::segment::{read_segment, write_segment, write_sentence_vectors};
use crate::{IndexConfig, IndexError, Manifest, Snapshot, FORMAT_VERSION};

/// What a commit did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CommitStats {
    /// The generation now visible (unchanged when there was nothing to commit).
    pub generation: u64,
    /// Documents written.
    pub written: usize,
    /// Documents removed (deletions and replaced versions).
    pub removed: usize,
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
        let lock_path = dir.join("LOCK");
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(IndexError::io("opening", &lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(IndexError::Locked {
                    dir: dir.to_path_buf(),
                    lock: lock_path,
                });
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(IndexError::io("locking", &lock_path)(e))
            }
        }
        let bm25_dir = dir.join("bm25");
        let manifest = match Manifest::load(dir)? {
            Some(m) => {
                check_config(dir, &m.config, &config)?;
                m
            }
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
        // The BM25 files are checked (tantivy's checksums) as the segments are below:
        // damaged ones are dropped and rebuilt from the segments, which hold every chunk.
        let open_bm25 = || -> Result<_, IndexError> {
            let (tindex, fields) = bm25::open_or_create(&bm25_dir)?;
            let damaged = tindex.validate_checksum()?;
            if !damaged.is_empty() {
                return Err(IndexError::Corrupt {
                    dir: bm25_dir.clone(),
                    detail: format!("{} BM25 file(s) fail their checksum", damaged.len()),
                });
            }
            let tantivy = tindex.writer_with_num_threads(1, 64_000_000)?;
            let generation = bm25::committed_generation(&tindex)?;
            Ok((tantivy, fields, generation))
        };
        let (mut tantivy, fields, bm25_generation) = match open_bm25() {
            Ok(opened) => opened,
            Err(_) => {
                fs::remove_dir_all(&bm25_dir).map_err(IndexError::io("removing", &bm25_dir))?;
                open_bm25()?
            }
        };
        let mut live = HashMap::new();
        let in_sync = bm25_generation == Some(manifest.generation);
        if !in_sync {
            tantivy.delete_all_documents()?;
        }
        for meta in &manifest.segments {
            let (docs, _) = read_segment(dir, meta, manifest.config.dimension)?;
            for d in docs {
                if meta.deleted.binary_search(&d.id).is_ok() {
                    continue;
                }
                if !in_sync {
                    bm25::add_document(&tantivy, fields, &d, manifest.config.headers)?;
                }
                live.insert(d.id, (meta.name.clone(), d.hash));
            }
        }
        if !in_sync {
            let mut prepared = tantivy.prepare_commit()?;
            prepared.set_payload(&manifest.generation.to_string());
            prepared.commit()?;
        }
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

    /// Makes everything staged visible as a new generation, atomically.
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
        let generation = self.manifest.generation + 1;
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
            let mut meta = write_segment(&self.dir, &name, &docs, &vectors, dim)?;
            meta.svec_hash = write_sentence_vectors(&self.dir, &name, &docs, &sentences, dim)?;
            Some(meta)
        };

        // 2. Old versions become deleted in their segments.
        let mut removed = 0;
        for id in &touched {
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
        next.segments.retain(|m| m.deleted.len() < m.docs);
        if let Some(seg) = new_segment {
            next.segments.push(seg);
        }

        // 2b. ANN files for the new segment (or new centroids), when the collection is
        // large enough; named by the manifest like the segments.
        next.ann = ann::update(&self.dir, &next, generation, &self.ann)?;

        // 3. BM25, tagged with the generation it belongs to.
        let Some(tantivy) = self.tantivy.as_mut() else {
            unreachable!("the BM25 writer is taken only on drop");
        };
        for id in &touched {
            bm25::delete_document(tantivy, self.fields, id);
        }
        for d in &docs {
            bm25::add_document(tantivy, self.fields, d, next.config.headers)?;
        }
        let mut prepared = tantivy.prepare_commit()?;
        prepared.set_payload(&generation.to_string());
        prepared.commit()?;

        // 4. The switch. The new files are synced (`write_durably`); their directory
        // entries are made durable before the manifest that names them, so a power loss
        // cannot leave a manifest naming files that are not there.
        for sub in ["segments", ANN_DIR] {
            let d = self.dir.join(sub);
            if d.is_dir() {
                sync_dir(&d)?;
            }
        }
        next.store(&self.dir)?;
        self.manifest = next;
        for id in &staged_deletes {
            self.live.remove(id);
        }
        for d in docs {
            self.live.insert(d.id, (name.clone(), d.hash));
        }
        self.collect_garbage();
        Ok(CommitStats {
            generation,
            written,
            removed,
        })
    }

    /// Removes segment and ANN files no manifest names (left by crashes, dropped
    /// segments or retrained centroids). Failures are ignored: garbage is harmless.
    fn collect_garbage(&mut self) {
        let ann_dir = self.dir.join(ANN_DIR);
        if let Ok(rd) = fs::read_dir(&ann_dir) {
            let keep = ann::file_names(self.manifest.ann.as_ref());
            for e in rd.flatten() {
                if !keep.iter().any(|k| *k == *e.file_name().to_string_lossy()) {
                    let _ = fs::remove_file(e.path());
                }
            }
            let _ = sync_dir(&ann_dir);
        }
        let seg_dir = self.dir.join("segments");
        let Ok(rd) = fs::read_dir(&seg_dir) else {
            return;
        };
        let keep: BTreeSet<&str> = self
            .manifest
            .segments
            .iter()
            .map(|m| m.name.as_str())
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
}

fn check_config(
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
