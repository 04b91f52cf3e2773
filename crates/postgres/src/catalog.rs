//! What the index holds, read for listings rather than queries: the document list
//! (summaries counted in SQL, no text fetched), one document by id, figures about the
//! index, and every document with its chunk vectors (for evaluation runs).
//!
//! Documents are listed in id order by byte value (`COLLATE "C"`), the order of the
//! embedded index whatever the database's collation.

use excerpt_core::Document;
use pgvector::Vector;
use postgres::Row;

use excerpt_core::DocumentSummary;

use crate::error::PgError;
use crate::index::PgIndex;

/// Figures about a PostgreSQL index.
#[derive(Debug, Clone, PartialEq)]
pub struct PgStats {
    /// Committed documents.
    pub documents: usize,
    /// Committed chunks.
    pub chunks: usize,
    /// Bytes of document text (UTF-8).
    pub text_bytes: usize,
    /// Bytes the index's tables take, with their indexes and TOAST
    /// (`pg_total_relation_size`).
    pub disk_bytes: u64,
    /// Stored sentence vectors.
    pub sentence_vectors: usize,
    /// Documents with stored sentence vectors.
    pub sentence_vector_documents: usize,
}

/// A document with its chunk vectors (row-major, in chunk order).
pub type DocumentWithVectors = (Document, Vec<f32>);

/// The tables of the index, for their sizes.
const TABLES: [&str; 6] = [
    "excerpt_schema",
    "excerpt_config",
    "excerpt_documents",
    "excerpt_chunks",
    "excerpt_lexicon",
    "excerpt_totals",
];

/// The columns [`document_from_row`] reads, in its order.
/// The jsonb columns come as text and are parsed straight into their types (through a
/// `serde_json::Value` first, a query fetching a few large documents spent about twice
/// as long parsing).
pub(crate) const DOCUMENT_COLUMNS: &str =
    "id, title, source, metadata, text, hash, sections::text, sentences::text, pages::text, chunks::text";

fn object(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match v {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

impl PgIndex {
    fn format_error(&self, what: &str, e: impl std::fmt::Display) -> PgError {
        PgError::Format {
            url: self.url.clone(),
            message: format!("stored {what} does not parse: {e}"),
        }
    }

    /// A [`Document`] from a row of [`DOCUMENT_COLUMNS`] starting at column `at`.
    pub(crate) fn document_from_row(&self, r: &Row, at: usize) -> Result<Document, PgError> {
        let json = |i: usize| r.get::<_, &str>(at + i);
        Ok(Document {
            id: r.get(at),
            title: r.get(at + 1),
            source: r.get(at + 2),
            metadata: object(r.get(at + 3)),
            text: r.get::<_, String>(at + 4).into(),
            hash: r.get(at + 5),
            sections: serde_json::from_str(json(6))
                .map_err(|e| self.format_error("sections", e))?,
            sentences: serde_json::from_str(json(7))
                .map_err(|e| self.format_error("sentences", e))?,
            pages: serde_json::from_str(json(8)).map_err(|e| self.format_error("pages", e))?,
            chunks: serde_json::from_str(json(9)).map_err(|e| self.format_error("chunks", e))?,
        })
    }

    /// Summaries of the committed documents whose id starts with `prefix` (all with an
    /// empty one), in id order. Sizes and counts are computed in SQL: no text leaves
    /// the server.
    pub fn list_documents(&self, prefix: &str) -> Result<Vec<DocumentSummary>, PgError> {
        crate::storable::check_text("prefix", prefix)?;
        let mut conn = self.conn()?;
        let rows = conn
            .query(
                "SELECT id, title, source, char_length(text)::bigint, octet_length(text)::bigint,
                        jsonb_array_length(chunks)::bigint, jsonb_array_length(sections)::bigint,
                        hash, metadata
                 FROM excerpt_documents
                 WHERE starts_with(id, $1)
                 ORDER BY id COLLATE \"C\"",
                &[&prefix],
            )
            .map_err(|e| self.db(e))?;
        let n = |r: &Row, i: usize| r.get::<_, i64>(i).max(0) as usize;
        Ok(rows
            .iter()
            .map(|r| DocumentSummary {
                id: r.get(0),
                title: r.get(1),
                source: r.get(2),
                chars: n(r, 3),
                bytes: n(r, 4),
                chunks: n(r, 5),
                sections: n(r, 6),
                hash: r.get(7),
                metadata: object(r.get(8)),
            })
            .collect())
    }

    /// The committed document `id`, whole; `None` when there is none.
    pub fn document(&self, id: &str) -> Result<Option<Document>, PgError> {
        crate::storable::check_text("document id", id)?;
        let mut conn = self.conn()?;
        let row = conn
            .query_opt(
                &*format!("SELECT {DOCUMENT_COLUMNS} FROM excerpt_documents WHERE id = $1"),
                &[&id],
            )
            .map_err(|e| self.db(e))?;
        row.map(|r| self.document_from_row(&r, 0)).transpose()
    }

    /// Figures about the index, read in one snapshot of the database. Fails with
    /// [`PgError::NoIndex`] before the first ingest (no config row), as the embedded
    /// index does without a manifest.
    pub fn stats(&self) -> Result<PgStats, PgError> {
        let dim = self
            .config
            .as_ref()
            .map(|c| c.dimension.max(1))
            .ok_or_else(|| PgError::NoIndex {
                url: self.url.clone(),
            })?;
        let mut conn = self.conn()?;
        let db = |e| self.db(e);
        let mut tx = self.read_snapshot(&mut conn)?;
        let docs = tx
            .query_one(
                "SELECT count(*), coalesce(sum(octet_length(text)), 0)::bigint,
                        coalesce(sum(cardinality(sentence_vectors)), 0)::bigint,
                        count(*) FILTER (WHERE cardinality(sentence_vectors) > 0)
                 FROM excerpt_documents",
                &[],
            )
            .map_err(db)?;
        let chunks: i64 = tx
            .query_one("SELECT chunks FROM excerpt_totals", &[])
            .map_err(db)?
            .get(0);
        let tables: Vec<&str> = TABLES.to_vec();
        let disk: i64 = tx
            .query_one(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
                 FROM pg_class c
                 WHERE c.relname::text = ANY($1::text[]) AND c.relkind = 'r'
                   AND pg_table_is_visible(c.oid)",
                &[&tables],
            )
            .map_err(db)?
            .get(0);
        tx.commit().map_err(db)?;
        let n = |v: i64| v.max(0) as usize;
        Ok(PgStats {
            documents: n(docs.get(0)),
            chunks: n(chunks),
            text_bytes: n(docs.get(1)),
            disk_bytes: disk.max(0) as u64,
            sentence_vectors: n(docs.get(2)) / dim,
            sentence_vector_documents: n(docs.get(3)),
        })
    }

    /// Every committed document with its chunk vectors, in id order, read in one
    /// snapshot of the database (two statements). Holds the whole index in memory:
    /// meant for evaluation corpora, not for listing a large index.
    pub fn all_documents(&self) -> Result<Vec<DocumentWithVectors>, PgError> {
        if self.config.is_none() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn()?;
        let db = |e| self.db(e);
        let mut tx = self.read_snapshot(&mut conn)?;
        let rows = tx
            .query(
                &*format!(
                    "SELECT pk, {DOCUMENT_COLUMNS} FROM excerpt_documents ORDER BY id COLLATE \"C\""
                ),
                &[],
            )
            .map_err(db)?;
        let mut out: Vec<DocumentWithVectors> = Vec::with_capacity(rows.len());
        let mut position = std::collections::HashMap::with_capacity(rows.len());
        for r in &rows {
            let pk: i32 = r.get(0);
            position.insert(pk, out.len());
            out.push((self.document_from_row(r, 1)?, Vec::new()));
        }
        drop(rows);
        let rows = tx
            .query(
                "SELECT doc, ordinal, embedding FROM excerpt_chunks ORDER BY doc, ordinal",
                &[],
            )
            .map_err(db)?;
        for r in rows {
            let pk: i32 = r.get(0);
            let ordinal: i32 = r.get(1);
            let Some(&i) = position.get(&pk) else {
                continue;
            };
            let (doc, vectors) = &mut out[i];
            let v: Vector = r.get(2);
            if vectors.len() != ordinal as usize * v.as_slice().len() {
                return Err(self.format_error(
                    "chunk vectors",
                    format!(
                        "document {:?} is missing chunk rows before {ordinal}",
                        doc.id
                    ),
                ));
            }
            vectors.extend_from_slice(v.as_slice());
        }
        tx.commit().map_err(db)?;
        for (doc, vectors) in &out {
            let dim = self.config.as_ref().map_or(0, |c| c.dimension);
            if vectors.len() != doc.chunks.len() * dim {
                return Err(self.format_error(
                    "chunk vectors",
                    format!(
                        "document {:?} has {} chunks but {} vector values",
                        doc.id,
                        doc.chunks.len(),
                        vectors.len()
                    ),
                ));
            }
        }
        Ok(out)
    }
}
