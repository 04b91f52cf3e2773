//! [`PgIndex`]: the connection pool, the schema and config checks, and the writes.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use excerpt_core::Document;
use excerpt_index::IndexConfig;
use pgvector::Vector;
use postgres::NoTls;
use r2d2_postgres::PostgresConnectionManager;

use crate::error::{one_line, redact, PgError};
use crate::schema::{self, Migrated, SCHEMA_VERSION};

/// Connections the pool keeps at most.
const POOL_SIZE: u32 = 16;

/// How long connecting may take before the server counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether `location` names a PostgreSQL database (`postgres://` or `postgresql://`)
/// rather than an index directory.
pub fn is_postgres_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

pub(crate) type Pool = r2d2::Pool<PostgresConnectionManager<NoTls>>;

/// An Excerpt index in a PostgreSQL database with pgvector: a pool of connections, the
/// schema checked or migrated at [`PgIndex::connect`], and the config row read then.
pub struct PgIndex {
    /// The URL, password hidden (every error names it).
    pub(crate) url: String,
    pub(crate) pool: Pool,
    pub(crate) config: Option<IndexConfig>,
    /// `hnsw.ef_search` of dense searches (at least the results asked for).
    pub(crate) ef_search: usize,
}

impl std::fmt::Debug for PgIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgIndex")
            .field("url", &self.url)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// One document written by [`PgIndex::replace`].
#[derive(Debug, Clone, Copy)]
pub struct DocumentWrite<'a> {
    /// The chunked document.
    pub doc: &'a Document,
    /// One unit vector per chunk, row-major.
    pub vectors: &'a [f32],
    /// Per chunk, the key of its embedding input (model and indexed text), by which
    /// later ingests find vectors to reuse.
    pub embed_keys: &'a [String],
    /// Per chunk, the indexed text (header, context and text).
    pub indexed: &'a [String],
    /// One vector per sentence, row-major, when sentence vectors are stored.
    pub sentence_vectors: Option<&'a [f32]>,
}

/// Creates the `vector` extension when the database lacks it (under the migration
/// lock: see [`PgIndex::connect`]).
fn create_vector(client: &mut postgres::Client, shown: &str) -> Result<(), PgError> {
    let has_vector = client
        .query_opt("SELECT 1 FROM pg_extension WHERE extname = 'vector'", &[])
        .map_err(|e| PgError::from_client(shown, &e))?
        .is_some();
    if has_vector {
        return Ok(());
    }
    client
        .batch_execute("CREATE EXTENSION IF NOT EXISTS vector")
        .map_err(|e| PgError::NoPgvector {
            url: shown.to_string(),
            message: e
                .as_db_error()
                .map(|d| one_line(d.message()))
                .unwrap_or_else(|| one_line(&e.to_string())),
        })
}

/// What [`PgIndex::replace_reporting`] did with a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replaced {
    /// It was not in the index: inserted.
    Added,
    /// Another version was there: replaced.
    Updated,
    /// The same content was there already: nothing written.
    Unchanged,
}

impl PgIndex {
    /// Connects to `url`, creates the `vector` extension when missing, creates or
    /// migrates the schema, and reads the config row. Each failure is one line naming
    /// the URL (without its password): unreachable, refused credentials, no pgvector, a
    /// newer schema.
    pub fn connect(url: &str) -> Result<PgIndex, PgError> {
        let shown = redact(url);
        let mut config: postgres::Config =
            url.parse().map_err(|e: postgres::Error| PgError::BadUrl {
                url: shown.clone(),
                message: one_line(&e.to_string()),
            })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("excerpt");
        let mut client = config
            .connect(NoTls)
            .map_err(|e| PgError::from_client(&shown, &e))?;
        let db = |e: postgres::Error| PgError::from_client(&shown, &e);
        // The extension is created under the migration lock, with the schema: processes
        // opening a fresh database at once raced on CREATE EXTENSION otherwise (the
        // losers failed on a duplicate key in pg_extension).
        client
            .execute("SELECT pg_advisory_lock($1)", &[&schema::MIGRATION_LOCK])
            .map_err(db)?;
        let prepared = create_vector(&mut client, &shown)
            .and_then(|()| schema::migrate_locked(&mut client).map_err(db));
        let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&schema::MIGRATION_LOCK]);
        let migrated = prepared?;
        unlocked.map_err(db)?;
        match migrated {
            Migrated::Current => {}
            Migrated::Newer(found) => {
                return Err(PgError::NewerSchema {
                    url: shown,
                    found,
                    supported: SCHEMA_VERSION,
                })
            }
        }
        let stored = read_config(&mut client, &shown)?;
        drop(client);
        let manager = PostgresConnectionManager::new(config, NoTls);
        let pool = r2d2::Pool::builder()
            .max_size(POOL_SIZE)
            .min_idle(Some(0))
            .connection_timeout(Duration::from_secs(10))
            .build_unchecked(manager);
        Ok(PgIndex {
            url: shown,
            pool,
            config: stored,
            ef_search: 100,
        })
    }

    /// The URL, password hidden.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The index's config, `None` before the first ingest.
    pub fn config(&self) -> Option<&IndexConfig> {
        self.config.as_ref()
    }

    /// Sets `hnsw.ef_search` for dense searches (the size of the HNSW candidate list;
    /// higher is slower and closer to exact). A search for more results uses that many.
    pub fn set_ef_search(&mut self, ef_search: usize) {
        self.ef_search = ef_search.clamp(1, 1000);
    }

    pub(crate) fn conn(
        &self,
    ) -> Result<r2d2::PooledConnection<PostgresConnectionManager<NoTls>>, PgError> {
        self.pool.get().map_err(|e| PgError::Unreachable {
            url: self.url.clone(),
            message: one_line(&e.to_string()),
        })
    }

    /// A read-only transaction on `conn` that sees one committed state of the database
    /// (repeatable read) for all its statements.
    pub(crate) fn read_snapshot<'c>(
        &self,
        conn: &'c mut postgres::Client,
    ) -> Result<postgres::Transaction<'c>, PgError> {
        conn.build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(|e| self.db(e))
    }

    pub(crate) fn db(&self, e: postgres::Error) -> PgError {
        PgError::from_client(&self.url, &e)
    }

    /// Writes `config` as the index's config when there is none (creating the chunk
    /// table for its dimension), else checks it matches the stored one exactly as the
    /// embedded index does (model, dimension, chunker, headers).
    pub fn ensure_config(&mut self, config: &IndexConfig) -> Result<(), PgError> {
        let mut conn = self.conn()?;
        let json = serde_json::to_value(config).map_err(|e| PgError::Format {
            url: self.url.clone(),
            message: e.to_string(),
        })?;
        let mut tx = conn.transaction().map_err(|e| self.db(e))?;
        tx.batch_execute("LOCK TABLE excerpt_config IN EXCLUSIVE MODE")
            .map_err(|e| self.db(e))?;
        let stored = read_config(&mut tx, &self.url)?;
        match stored {
            Some(existing) => {
                excerpt_index::check_config(Path::new(&self.url), &existing, config)?;
                tx.commit().map_err(|e| self.db(e))?;
                self.config = Some(existing);
            }
            None => {
                tx.batch_execute(&schema::chunk_table(config.dimension))
                    .map_err(|e| self.db(e))?;
                tx.execute(
                    "INSERT INTO excerpt_config (config, dimension) VALUES ($1, $2)",
                    &[&json, &(config.dimension as i32)],
                )
                .map_err(|e| self.db(e))?;
                tx.commit().map_err(|e| self.db(e))?;
                self.config = Some(config.clone());
            }
        }
        Ok(())
    }

    fn require_config(&self) -> Result<&IndexConfig, PgError> {
        self.config.as_ref().ok_or_else(|| PgError::NoIndex {
            url: self.url.clone(),
        })
    }

    /// The content hash of the committed document `id`, if there is one.
    pub fn committed_hash(&self, id: &str) -> Result<Option<String>, PgError> {
        crate::storable::check_text("document id", id)?;
        let mut conn = self.conn()?;
        let row = conn
            .query_opt("SELECT hash FROM excerpt_documents WHERE id = $1", &[&id])
            .map_err(|e| self.db(e))?;
        Ok(row.map(|r| r.get(0)))
    }

    /// Committed chunk vectors whose embedding-input key is one of `keys` (any one chunk
    /// per key), so unchanged chunk texts are not embedded again.
    pub fn vectors_by_key(&self, keys: &[String]) -> Result<HashMap<String, Vec<f32>>, PgError> {
        if keys.is_empty() || self.config.is_none() {
            return Ok(HashMap::new());
        }
        let mut conn = self.conn()?;
        let rows = conn
            .query(
                "SELECT DISTINCT ON (embed_key) embed_key, embedding FROM excerpt_chunks
                 WHERE embed_key = ANY($1)",
                &[&keys],
            )
            .map_err(|e| self.db(e))?;
        Ok(rows
            .into_iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, Vector>(1).to_vec()))
            .collect())
    }

    /// Replaces document `w.doc` (inserting it when new) in one transaction, under an
    /// advisory lock on its id, so two writers of the same document never interleave.
    /// Returns `false` (and writes nothing) when the committed document already has
    /// this content hash.
    pub fn replace(&self, w: &DocumentWrite<'_>) -> Result<bool, PgError> {
        Ok(self.replace_reporting(w)? != Replaced::Unchanged)
    }

    /// [`PgIndex::replace`], saying what the write did, as decided inside its
    /// transaction under the document's lock: exact when other processes write the
    /// same documents at the same time (a check made before the write is not).
    pub fn replace_reporting(&self, w: &DocumentWrite<'_>) -> Result<Replaced, PgError> {
        let config = self.require_config()?;
        let dim = config.dimension;
        let doc = w.doc;
        self.check_write(w, dim)?;
        let json = |v: serde_json::Result<serde_json::Value>| {
            v.map_err(|e| PgError::Format {
                url: self.url.clone(),
                message: e.to_string(),
            })
        };
        let sections = json(serde_json::to_value(&doc.sections))?;
        let sentences = json(serde_json::to_value(&doc.sentences))?;
        let pages = json(serde_json::to_value(&doc.pages))?;
        let chunks = json(serde_json::to_value(&doc.chunks))?;
        let metadata = serde_json::Value::Object(doc.metadata.clone());
        let sentence_vectors: Option<Vec<f32>> = w.sentence_vectors.map(<[f32]>::to_vec);

        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(|e| self.db(e))?;
        let db = |e| self.db(e);
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&doc.id],
        )
        .map_err(db)?;
        let existing = tx
            .query_opt(
                "SELECT hash FROM excerpt_documents WHERE id = $1",
                &[&doc.id],
            )
            .map_err(db)?;
        let outcome = match existing {
            Some(r) if r.get::<_, String>(0) == doc.hash => {
                tx.rollback().map_err(db)?;
                return Ok(Replaced::Unchanged);
            }
            Some(_) => Replaced::Updated,
            None => Replaced::Added,
        };
        let old = forget_statistics(&mut tx, std::slice::from_ref(&doc.id)).map_err(db)?;
        tx.execute("DELETE FROM excerpt_documents WHERE id = $1", &[&doc.id])
            .map_err(db)?;
        let pk: i32 = tx
            .query_one(
                "INSERT INTO excerpt_documents
                   (id, title, source, metadata, text, hash, sections, sentences, pages, chunks,
                    sentence_vectors)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING pk",
                &[
                    &doc.id,
                    &doc.title,
                    &doc.source,
                    &metadata,
                    &doc.text.as_str(),
                    &doc.hash,
                    &sections,
                    &sentences,
                    &pages,
                    &chunks,
                    &sentence_vectors,
                ],
            )
            .map_err(db)?
            .get(0);
        insert_chunks(&mut tx, pk, w, dim).map_err(db)?;
        record_statistics(&mut tx, pk, old).map_err(db)?;
        tx.commit().map_err(db)?;
        Ok(outcome)
    }

    /// Refuses a write whose document or indexed texts cannot be stored, or whose
    /// vectors, keys and texts do not count one per chunk (of dimension `dim`).
    fn check_write(&self, w: &DocumentWrite<'_>, dim: usize) -> Result<(), PgError> {
        let doc = w.doc;
        crate::storable::check_document(
            &doc.id,
            &doc.title,
            doc.source.as_deref(),
            &doc.text,
            &doc.metadata,
        )?;
        for text in w.indexed {
            crate::storable::check_text(&format!("document {:?}: indexed text", doc.id), text)?;
        }
        let n = doc.chunks.len();
        if w.vectors.len() != n * dim || w.embed_keys.len() != n || w.indexed.len() != n {
            return Err(PgError::Format {
                url: self.url.clone(),
                message: format!(
                    "document {:?}: {} chunks but {} vector values, {} keys, {} texts",
                    doc.id,
                    n,
                    w.vectors.len(),
                    w.embed_keys.len(),
                    w.indexed.len()
                ),
            });
        }
        Ok(())
    }

    /// Deletes documents by id in one transaction; returns the ids that existed.
    pub fn delete(&self, ids: &[String]) -> Result<Vec<String>, PgError> {
        for id in ids {
            crate::storable::check_text("document id", id)?;
        }
        let mut conn = self.conn()?;
        let db = |e| self.db(e);
        let mut tx = conn.transaction().map_err(db)?;
        // Statistics read first, the rows then deleted, the statistics updated last: the
        // lock order of a replace (document rows, lexemes, totals), so no deadlock.
        // The documents' write locks first (sorted, as a replace takes one), so a replace
        // of one of them is committed before its statistics are read.
        tx.execute(
            "SELECT pg_advisory_xact_lock(k)
             FROM (SELECT DISTINCT hashtextextended(i, 0) AS k FROM unnest($1::text[]) AS i
                   ORDER BY k) AS s",
            &[&ids],
        )
        .map_err(db)?;
        let old = forget_statistics(&mut tx, ids).map_err(db)?;
        let rows = tx
            .query(
                "DELETE FROM excerpt_documents WHERE id = ANY($1) RETURNING id",
                &[&ids],
            )
            .map_err(db)?;
        apply_statistics(&mut tx, &old.lexemes, &old.counts, old.chunks, old.tokens).map_err(db)?;
        tx.commit().map_err(db)?;
        let mut out: Vec<String> = rows.into_iter().map(|r| r.get(0)).collect();
        out.sort();
        Ok(out)
    }

    /// Drops the HNSW index on the chunk vectors, for a bulk load: rows then go in without
    /// the graph being maintained, and [`PgIndex::build_ann_index`] builds it once at the
    /// end (pgvector's advice for large loads). Dense searches scan every vector until then.
    pub fn drop_ann_index(&self) -> Result<(), PgError> {
        self.require_config()?;
        let mut conn = self.conn()?;
        conn.batch_execute("DROP INDEX IF EXISTS excerpt_chunks_hnsw")
            .map_err(|e| self.db(e))
    }

    /// Builds the HNSW index on the chunk vectors when it is missing (after
    /// [`PgIndex::drop_ann_index`]), with `maintenance_work_mem` set to `memory_mib` for
    /// the build (the graph should fit in it, else the build slows down several-fold) and
    /// PostgreSQL's parallel maintenance workers.
    pub fn build_ann_index(&self, memory_mib: usize) -> Result<(), PgError> {
        self.require_config()?;
        let mut conn = self.conn()?;
        conn.batch_execute(&format!(
            "SET maintenance_work_mem = '{memory_mib}MB';
             {}",
            schema::ANN_INDEX
        ))
        .map_err(|e| self.db(e))
    }

    /// Number of committed documents.
    pub fn document_count(&self) -> Result<usize, PgError> {
        let mut conn = self.conn()?;
        let n: i64 = conn
            .query_one("SELECT count(*) FROM excerpt_documents", &[])
            .map_err(|e| self.db(e))?
            .get(0);
        Ok(n as usize)
    }

    /// Ids of every committed document, sorted.
    pub fn document_ids(&self) -> Result<Vec<String>, PgError> {
        let mut conn = self.conn()?;
        let rows = conn
            .query("SELECT id FROM excerpt_documents ORDER BY id", &[])
            .map_err(|e| self.db(e))?;
        Ok(rows.into_iter().map(|r| r.get(0)).collect())
    }
}

/// What documents about to be deleted contributed to the BM25 statistics, negated.
pub(crate) struct Removed {
    lexemes: Vec<String>,
    counts: Vec<i64>,
    chunks: i64,
    tokens: i64,
}

/// Reads the (negated) contribution of documents `ids` to the statistics, before they
/// are deleted.
fn forget_statistics(
    tx: &mut postgres::Transaction<'_>,
    ids: &[String],
) -> Result<Removed, postgres::Error> {
    let rows = tx.query(
        "SELECT u.lexeme, -count(*) FROM excerpt_documents d
           JOIN excerpt_chunks c ON c.doc = d.pk, unnest(c.tsv) AS u
         WHERE d.id = ANY($1) GROUP BY u.lexeme",
        &[&ids],
    )?;
    let (lexemes, counts) = rows
        .into_iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1)))
        .unzip();
    let totals = tx.query_one(
        "SELECT -count(*), -coalesce(sum(c.tokens), 0)::bigint FROM excerpt_documents d
           JOIN excerpt_chunks c ON c.doc = d.pk WHERE d.id = ANY($1)",
        &[&ids],
    )?;
    Ok(Removed {
        lexemes,
        counts,
        chunks: totals.get(0),
        tokens: totals.get(1),
    })
}

/// Adds document `pk`'s chunks to the statistics, minus what `old` (the document it
/// replaces) contributed, in one pass over the lexemes in sorted order.
fn record_statistics(
    tx: &mut postgres::Transaction<'_>,
    pk: i32,
    old: Removed,
) -> Result<(), postgres::Error> {
    let rows = tx.query(
        "SELECT lexeme, sum(n)::bigint FROM (
             SELECT u.lexeme, 1::bigint AS n FROM excerpt_chunks c, unnest(c.tsv) AS u
             WHERE c.doc = $1
             UNION ALL
             SELECT l, n FROM unnest($2::text[], $3::bigint[]) AS o(l, n)) AS x
         GROUP BY lexeme HAVING sum(n) <> 0",
        &[&pk, &old.lexemes, &old.counts],
    )?;
    let (lexemes, counts): (Vec<String>, Vec<i64>) = rows
        .into_iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1)))
        .unzip();
    let totals = tx.query_one(
        "SELECT count(*), coalesce(sum(tokens), 0)::bigint FROM excerpt_chunks WHERE doc = $1",
        &[&pk],
    )?;
    apply_statistics(
        tx,
        &lexemes,
        &counts,
        totals.get::<_, i64>(0) + old.chunks,
        totals.get::<_, i64>(1) + old.tokens,
    )
}

/// Adds `counts` to the document frequencies of `lexemes` (rows locked in lexeme order,
/// so concurrent writers never deadlock) and the deltas to the totals.
fn apply_statistics(
    tx: &mut postgres::Transaction<'_>,
    lexemes: &[String],
    counts: &[i64],
    chunks: i64,
    tokens: i64,
) -> Result<(), postgres::Error> {
    if !lexemes.is_empty() {
        tx.execute(
            "INSERT INTO excerpt_lexicon AS x (lexeme, df)
             SELECT l, n FROM unnest($1::text[], $2::bigint[]) AS u(l, n) ORDER BY l COLLATE \"C\"
             ON CONFLICT (lexeme) DO UPDATE SET df = x.df + EXCLUDED.df",
            &[&lexemes, &counts],
        )?;
    }
    if chunks != 0 || tokens != 0 {
        tx.execute(
            "UPDATE excerpt_totals SET chunks = chunks + $1, tokens = tokens + $2",
            &[&chunks, &tokens],
        )?;
    }
    Ok(())
}

/// The config row, if any.
fn read_config(
    client: &mut impl postgres::GenericClient,
    url: &str,
) -> Result<Option<IndexConfig>, PgError> {
    let row = client
        .query_opt("SELECT config FROM excerpt_config", &[])
        .map_err(|e| PgError::from_client(url, &e))?;
    row.map(|r| {
        serde_json::from_value(r.get::<_, serde_json::Value>(0)).map_err(|e| PgError::Format {
            url: url.to_string(),
            message: format!("the stored config does not parse: {e}"),
        })
    })
    .transpose()
}

/// Inserts the chunks of write `w` under document row `pk` in one statement (arrays
/// unnested), each with its vector of dimension `dim` and its token count for BM25.
fn insert_chunks(
    tx: &mut postgres::Transaction<'_>,
    pk: i32,
    w: &DocumentWrite<'_>,
    dim: usize,
) -> Result<(), postgres::Error> {
    let doc = w.doc;
    let ordinals: Vec<i32> = doc.chunks.iter().map(|c| c.ordinal as i32).collect();
    let starts: Vec<i32> = doc
        .chunks
        .iter()
        .map(|c| c.range.char_start as i32)
        .collect();
    let ends: Vec<i32> = doc.chunks.iter().map(|c| c.range.char_end as i32).collect();
    let vectors: Vec<Vector> = w
        .vectors
        .chunks(dim.max(1))
        .map(|v| Vector::from(v.to_vec()))
        .collect();
    tx.execute(
        "INSERT INTO excerpt_chunks
           (doc, ordinal, char_start, char_end, indexed, embed_key, embedding, tokens)
         SELECT $1, o, s, e, t, k, v,
                (SELECT coalesce(sum(coalesce(array_length(x.positions, 1), 1)), 0)
                 FROM unnest(to_tsvector('english', t)) AS x)
         FROM unnest($2::integer[], $3::integer[], $4::integer[], $5::text[], $6::text[], $7::vector[])
              AS u(o, s, e, t, k, v)",
        &[&pk, &ordinals, &starts, &ends, &w.indexed, &w.embed_keys, &vectors],
    )?;
    Ok(())
}
