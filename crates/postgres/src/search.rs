//! [`PgIndex`] as a [`Store`]: both searches and the fetch of the documents they name,
//! in one read-only repeatable-read transaction (so one committed state).
//!
//! - Dense: the HNSW index (cosine), `hnsw.ef_search` at least the results asked for,
//!   iterative scans (`relaxed_order`) so a filter still yields enough rows; the rows are
//!   re-sorted by score, ties by key.
//! - Lexical: BM25 over PostgreSQL full text: the query's English lexemes; statistics
//!   (chunks, tokens, document frequencies) of the chunks the filter allows, or of the
//!   whole index from the tables every write keeps; candidates the chunks holding the
//!   rarest lexemes (as many as fit in [`CANDIDATE_ROWS`] postings), each scored by BM25
//!   from its lexeme frequencies and stored token count. Stems and stop words are
//!   PostgreSQL's `english` configuration, not tantivy's (docs/EVAL.md has the
//!   difference).
//! - Filters: ids, id prefixes and metadata conditions in SQL (numbers as numbers, other
//!   values by containment through the GIN index on `metadata`), the selected rows'
//!   metadata then checked by the conditions themselves (so SQL only has to select a
//!   superset); the allowed documents are passed to both searches.
//! - Keys: [`ChunkKey::doc`] is the document's `pk`.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use excerpt_core::{ChunkKey, Corpus, Derived, Document, ErrorKind};
use excerpt_retrieve::{
    Filter, Found, MetaCondition, SearchRequest, SearchTimes, Store, StoreError,
};
use pgvector::Vector;
use postgres::types::ToSql;
use postgres::Transaction;

use crate::catalog::DOCUMENT_COLUMNS;
use crate::error::PgError;
use crate::index::{PgIndex, Pool};
use crate::storable::{check_json, check_text};

impl From<PgError> for StoreError {
    fn from(e: PgError) -> Self {
        StoreError::Backend {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

/// A fetched document and its sentence vectors (row-major).
type Fetched = (Document, Option<Vec<f32>>);

/// The documents a query's results name, with their sentence vectors; chunk vectors are
/// read on first use, for every document at once (only some strategies read them, and
/// they are most of the bytes). A document's `pk` names one version of it (a replace inserts a new
/// row), so a late read finds that version's vectors or, once it was replaced or
/// deleted, none: never another version's.
#[derive(Default)]
pub struct PgCorpus {
    dim: usize,
    docs: HashMap<u32, Fetched>,
    pool: Option<Pool>,
    vectors: OnceLock<HashMap<u32, Vec<f32>>>,
    /// What assembly derives from the fetched documents: for this query only, as the
    /// documents are.
    derived: Derived,
}

impl std::fmt::Debug for PgCorpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgCorpus")
            .field("dim", &self.dim)
            .field("documents", &self.docs.len())
            .finish_non_exhaustive()
    }
}

impl PgCorpus {
    /// The chunk vectors of every document, row-major, by `pk`. When they cannot be read
    /// (the pool or the statement failed), a warning is logged and every document lacks
    /// them: strategies then value unretrieved chunks as they do without a query vector.
    fn read_vectors(&self) -> HashMap<u32, Vec<f32>> {
        let mut out: HashMap<u32, Vec<f32>> = HashMap::new();
        let Some(pool) = &self.pool else {
            return out;
        };
        let pks: Vec<i32> = self.docs.keys().map(|&k| k as i32).collect();
        let rows = pool.get().map_err(|e| e.to_string()).and_then(|mut conn| {
            conn.query(
                "SELECT doc, embedding FROM excerpt_chunks WHERE doc = ANY($1) ORDER BY doc, ordinal",
                &[&pks],
            )
            .map_err(|e| e.to_string())
        });
        let rows = match rows {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!("chunk vectors of {} documents not read: {e}", pks.len());
                return out;
            }
        };
        for r in rows {
            let pk: i32 = r.get(0);
            out.entry(pk as u32)
                .or_default()
                .extend_from_slice(r.get::<_, Vector>(1).as_slice());
        }
        out
    }
}

impl Corpus for PgCorpus {
    fn document(&self, doc: u32) -> Option<&Document> {
        self.docs.get(&doc).map(|d| &d.0)
    }
    fn chunk_vector(&self, key: ChunkKey) -> Option<&[f32]> {
        let (d, _) = self.docs.get(&key.doc)?;
        let v = self
            .vectors
            .get_or_init(|| self.read_vectors())
            .get(&key.doc)?;
        if v.len() != d.chunks.len() * self.dim {
            return None;
        }
        let i = key.ordinal as usize;
        v.get(i * self.dim..(i + 1) * self.dim)
    }
    fn sentence_vector(&self, doc: u32, sentence: usize) -> Option<Cow<'_, [f32]>> {
        let sv = self.docs.get(&doc)?.1.as_ref()?;
        sv.get(sentence * self.dim..(sentence + 1) * self.dim)
            .map(Cow::Borrowed)
    }
    fn derived(&self) -> &Derived {
        &self.derived
    }
}

/// Escapes `%`, `_` and `\` for a LIKE pattern.
fn like_prefix(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// Chunks ranked by BM25 when the rarest query lexeme alone is in more than
/// [`CANDIDATE_ROWS`] chunks (the best of them by `ts_rank`; more when ten times the
/// results asked for is more).
const LEXICAL_POOL: usize = 2000;

/// Postings the candidate search reads at most (see [`PgIndex::lexical`]).
const CANDIDATE_ROWS: i64 = 20_000;

/// Largest filter (in chunks) whose own statistics BM25 uses; past it, the index's.
const SCOPED_STATS_MAX: i64 = 50_000;

/// A candidate chunk for BM25: its length in tokens and its (lexeme, frequency) pairs.
type Candidate = (f64, Vec<(String, f64)>);

/// BM25's collection statistics: chunks, their tokens, and each lexeme's document
/// frequency.
#[derive(Debug, Default)]
struct Statistics {
    n: i64,
    tokens: i64,
    df: HashMap<String, i64>,
}

/// BM25 (k1 = 1.2, b = 0.75, the parameters tantivy uses) of each candidate chunk, given
/// as its length in tokens and its (lexeme, frequency) pairs for the query's lexemes.
fn bm25(chunks: &HashMap<ChunkKey, Candidate>, stats: &Statistics) -> Vec<(ChunkKey, f32)> {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    let n = stats.n as f64;
    let avg = (stats.tokens as f64 / n.max(1.0)).max(1.0);
    chunks
        .iter()
        .map(|(key, (len, terms))| {
            let score: f64 = terms
                .iter()
                .map(|(lexeme, tf)| {
                    let d = stats.df.get(lexeme).copied().unwrap_or(0) as f64;
                    let idf = (1.0 + (n - d + 0.5) / (d + 0.5)).ln();
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg))
                })
                .sum();
            (*key, score as f32)
        })
        .collect()
}

/// A SQL condition on `metadata` that holds for every document `c` matches (and maybe a
/// few more, which [`MetaCondition::matches`] then drops), with its parameters appended
/// to `params`. Numbers compare as numbers (`1` equals `1.0`, as in `matches`); other
/// values by containment, which the GIN index on `metadata` serves.
fn metadata_sql(c: &MetaCondition, params: &mut Vec<Box<dyn ToSql + Sync>>) -> String {
    let mut param = |v: Box<dyn ToSql + Sync>| {
        params.push(v);
        format!("${}", params.len())
    };
    let number = |key: &str, param: &mut dyn FnMut(Box<dyn ToSql + Sync>) -> String| {
        let k = param(Box::new(key.to_string()));
        format!(
            "(CASE WHEN jsonb_typeof(metadata -> {k}::text) = 'number'
                   THEN (metadata ->> {k}::text)::float8 END)"
        )
    };
    let equal = |key: &str,
                 value: &serde_json::Value,
                 param: &mut dyn FnMut(Box<dyn ToSql + Sync>) -> String| {
        match value.as_f64() {
            Some(x) => {
                let n = number(key, param);
                let v = param(Box::new(x));
                format!("{n} = {v}::float8")
            }
            None => {
                let mut object = serde_json::Map::new();
                object.insert(key.to_string(), value.clone());
                let v = param(Box::new(serde_json::Value::Object(object)));
                format!("metadata @> {v}::jsonb")
            }
        }
    };
    match c {
        MetaCondition::Eq { key, value } => equal(key, value, &mut param),
        MetaCondition::OneOf { key, values } if values.is_empty() => {
            let _ = key;
            "false".to_string()
        }
        MetaCondition::OneOf { key, values } => {
            let any: Vec<String> = values.iter().map(|v| equal(key, v, &mut param)).collect();
            format!("({})", any.join(" OR "))
        }
        MetaCondition::Range { key, min, max } => {
            let n = number(key, &mut param);
            let mut parts = vec![format!("{n} IS NOT NULL")];
            if let Some(m) = min {
                let v = param(Box::new(*m));
                parts.push(format!("{n} >= {v}::float8"));
            }
            if let Some(m) = max {
                let v = param(Box::new(*m));
                parts.push(format!("{n} <= {v}::float8"));
            }
            format!("({})", parts.join(" AND "))
        }
    }
}

fn sort_results(list: &mut [(ChunkKey, f32)]) {
    list.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
}

impl PgIndex {
    /// The `pk`s of the documents `filter` allows (`None`: no restriction).
    fn allowed(
        &self,
        tx: &mut Transaction<'_>,
        filter: &Filter,
    ) -> Result<Option<Vec<i32>>, StoreError> {
        if filter.is_empty() {
            return Ok(None);
        }
        let db = |e| StoreError::from(self.db(e));
        if !filter.doc_ids.is_empty() {
            let rows = tx
                .query(
                    "SELECT id FROM excerpt_documents WHERE id = ANY($1)",
                    &[&filter.doc_ids],
                )
                .map_err(db)?;
            let found: BTreeSet<String> = rows.into_iter().map(|r| r.get(0)).collect();
            if let Some(id) = filter.doc_ids.iter().find(|id| !found.contains(*id)) {
                return Err(StoreError::UnknownDocument(id.clone()));
            }
        }
        let ids: Option<&Vec<String>> = (!filter.doc_ids.is_empty()).then_some(&filter.doc_ids);
        let prefixes: Option<Vec<String>> = (!filter.path_prefixes.is_empty()).then(|| {
            filter
                .path_prefixes
                .iter()
                .map(|p| like_prefix(p))
                .collect()
        });
        let mut params: Vec<Box<dyn ToSql + Sync>> =
            vec![Box::new(ids.cloned()), Box::new(prefixes)];
        let mut sql = String::from(
            "SELECT pk, metadata FROM excerpt_documents
             WHERE ($1::text[] IS NULL OR id = ANY($1))
               AND ($2::text[] IS NULL OR id LIKE ANY($2))",
        );
        for c in &filter.metadata {
            sql.push_str(" AND ");
            sql.push_str(&metadata_sql(c, &mut params));
        }
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let rows = tx.query(sql.as_str(), &refs).map_err(db)?;
        let mut out = Vec::new();
        for r in rows {
            let pk: i32 = r.get(0);
            if filter.metadata.is_empty() {
                out.push(pk);
                continue;
            }
            // SQL selected a superset (see `metadata_sql`); the conditions decide.
            let meta: serde_json::Value = r.get(1);
            let empty = serde_json::Map::new();
            let map = meta.as_object().unwrap_or(&empty);
            if filter.metadata.iter().all(|c| c.matches(map)) {
                out.push(pk);
            }
        }
        Ok(Some(out))
    }

    fn dense(
        &self,
        tx: &mut Transaction<'_>,
        query: &[f32],
        k: usize,
        allowed: Option<&Vec<i32>>,
    ) -> Result<Vec<(ChunkKey, f32)>, StoreError> {
        let db = |e| StoreError::from(self.db(e));
        let ef = self.ef_search.max(k).min(1000);
        tx.batch_execute(&format!(
            "SET LOCAL hnsw.ef_search = {ef}; SET LOCAL hnsw.iterative_scan = relaxed_order"
        ))
        .map_err(db)?;
        let q = Vector::from(query.to_vec());
        let rows = tx
            .query(
                "SELECT doc, ordinal, (1 - (embedding <=> $1))::real FROM excerpt_chunks
                 WHERE ($2::integer[] IS NULL OR doc = ANY($2))
                 ORDER BY embedding <=> $1 LIMIT $3",
                &[&q, &allowed, &(k as i64)],
            )
            .map_err(db)?;
        let mut out: Vec<(ChunkKey, f32)> = rows
            .into_iter()
            .map(|r| {
                let (d, o, s): (i32, i32, f32) = (r.get(0), r.get(1), r.get(2));
                (ChunkKey::new(d as u32, o as u32), s)
            })
            .collect();
        sort_results(&mut out);
        Ok(out)
    }

    fn lexical(
        &self,
        tx: &mut Transaction<'_>,
        text: &str,
        k: usize,
        allowed: Option<&Vec<i32>>,
    ) -> Result<Vec<(ChunkKey, f32)>, StoreError> {
        let db = |e| StoreError::from(self.db(e));
        // The query's lexemes, as the chunks' tsvectors spell them.
        let lexemes: Vec<String> = tx
            .query(
                "SELECT lexeme FROM unnest(to_tsvector('english', $1)) ORDER BY lexeme",
                &[&text],
            )
            .map_err(db)?
            .into_iter()
            .map(|r| r.get(0))
            .collect();
        if lexemes.is_empty() {
            return Ok(Vec::new());
        }
        let stats = self.statistics(tx, &lexemes, allowed)?;
        // Candidates: the chunks holding one of the rarest lexemes, as many lexemes as
        // fit in CANDIDATE_ROWS postings (at least the rarest). A chunk holding only
        // the others scores low (their idf is small), and reading every posting of a
        // word half the collection holds would cost more than the rest of the query.
        let mut by_rarity: Vec<(&String, i64)> = lexemes
            .iter()
            .map(|l| (l, stats.df.get(l).copied().unwrap_or(0)))
            .filter(|(_, df)| *df > 0)
            .collect();
        by_rarity.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(b.0)));
        let mut chosen: Vec<&String> = Vec::new();
        let mut postings = 0i64;
        for (l, df) in &by_rarity {
            if !chosen.is_empty() && postings + df > CANDIDATE_ROWS {
                break;
            }
            postings += df;
            chosen.push(l);
        }
        if chosen.is_empty() {
            return Ok(Vec::new());
        }
        // Past CANDIDATE_ROWS (the rarest lexeme alone is that common), the best
        // LEXICAL_POOL of them by ts_rank are scored.
        let pool: Option<i64> =
            (postings > CANDIDATE_ROWS).then(|| (k * 10).max(LEXICAL_POOL) as i64);
        // Each candidate's frequencies of the query's lexemes: its tsvector cut down to
        // them in C (marked with weight A, the only weight `to_tsvector` does not give)
        // before it is unnested, three times faster than unnesting every lexeme.
        let rows = tx
            .query(
                "WITH q AS (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS tq
                            FROM unnest($1::text[]) AS l),
                 cand AS (
                    SELECT c.doc, c.ordinal, c.tokens, c.tsv FROM excerpt_chunks c, q
                    WHERE c.tsv @@ q.tq AND ($2::integer[] IS NULL OR c.doc = ANY($2))
                    ORDER BY CASE WHEN $4::bigint IS NULL THEN 0 ELSE ts_rank(c.tsv, q.tq, 1) END DESC,
                             c.doc, c.ordinal
                    LIMIT $4)
                 SELECT cand.doc, cand.ordinal, cand.tokens,
                        u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
                 FROM cand CROSS JOIN LATERAL
                      unnest(ts_filter(setweight(cand.tsv, 'A', $3), '{a}')) AS u",
                &[&chosen, &allowed, &lexemes, &pool],
            )
            .map_err(db)?;
        let mut chunks: HashMap<ChunkKey, Candidate> = HashMap::new();
        for r in rows {
            let (d, o, len, lexeme, tf): (i32, i32, i32, String, i32) =
                (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
            chunks
                .entry(ChunkKey::new(d as u32, o as u32))
                .or_insert_with(|| (f64::from(len), Vec::new()))
                .1
                .push((lexeme, f64::from(tf)));
        }
        let mut out = bm25(&chunks, &stats);
        sort_results(&mut out);
        out.truncate(k);
        Ok(out)
    }

    /// BM25's collection statistics for `lexemes`: over the chunks the filter allows
    /// when it allows at most SCOPED_STATS_MAX of them (counted through the GIN index, so
    /// a scoped answer does not move when other documents are written), else over the
    /// whole index from the statistics every write keeps (`excerpt_lexicon`,
    /// `excerpt_totals`).
    fn statistics(
        &self,
        tx: &mut Transaction<'_>,
        lexemes: &[String],
        allowed: Option<&Vec<i32>>,
    ) -> Result<Statistics, StoreError> {
        let db = |e| StoreError::from(self.db(e));
        if let Some(allowed) = allowed {
            let row = tx
                .query_one(
                    "SELECT count(*), coalesce(sum(tokens), 0)::bigint FROM excerpt_chunks
                     WHERE doc = ANY($1)",
                    &[allowed],
                )
                .map_err(db)?;
            let (n, tokens): (i64, i64) = (row.get(0), row.get(1));
            if n <= SCOPED_STATS_MAX {
                let df = tx
                    .query(
                        "SELECT l, (SELECT count(*) FROM excerpt_chunks c
                                    WHERE c.tsv @@ quote_literal(l)::tsquery AND c.doc = ANY($2))
                         FROM unnest($1::text[]) AS l",
                        &[&lexemes, allowed],
                    )
                    .map_err(db)?
                    .into_iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect();
                return Ok(Statistics { n, tokens, df });
            }
        }
        let row = tx
            .query_one("SELECT chunks, tokens FROM excerpt_totals", &[])
            .map_err(db)?;
        let df = tx
            .query(
                "SELECT lexeme, df FROM excerpt_lexicon WHERE lexeme = ANY($1)",
                &[&lexemes],
            )
            .map_err(db)?
            .into_iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        Ok(Statistics {
            n: row.get(0),
            tokens: row.get(1),
            df,
        })
    }

    /// Reads documents `pks` (one statement of the caller's transaction); their chunk
    /// vectors are read when first asked for.
    fn fetch(&self, tx: &mut Transaction<'_>, pks: &[i32]) -> Result<PgCorpus, StoreError> {
        let dim = self.config.as_ref().map_or(0, |c| c.dimension);
        let mut corpus = PgCorpus {
            dim,
            docs: HashMap::with_capacity(pks.len()),
            pool: Some(self.pool.clone()),
            vectors: OnceLock::new(),
            derived: Derived::new(),
        };
        if pks.is_empty() {
            return Ok(corpus);
        }
        let db = |e| StoreError::from(self.db(e));
        let rows = tx
            .query(
                &*format!(
                    "SELECT pk, {DOCUMENT_COLUMNS}, sentence_vectors
                     FROM excerpt_documents WHERE pk = ANY($1)"
                ),
                &[&pks],
            )
            .map_err(db)?;
        for r in rows {
            let pk: i32 = r.get(0);
            let doc = self.document_from_row(&r, 1)?;
            let sentence_vectors: Option<Vec<f32>> = r.get(11);
            corpus.docs.insert(pk as u32, (doc, sentence_vectors));
        }
        Ok(corpus)
    }
}

impl Store for PgIndex {
    fn model_id(&self) -> &str {
        self.config.as_ref().map_or("", |c| c.model_id.as_str())
    }

    fn headers(&self) -> bool {
        self.config.as_ref().is_some_and(|c| c.headers)
    }

    fn search(&self, req: &SearchRequest<'_>) -> Result<Found, StoreError> {
        if self.config.is_none() {
            return Err(StoreError::Backend {
                kind: ErrorKind::NotFound,
                message: PgError::NoIndex {
                    url: self.url.clone(),
                }
                .to_string(),
            });
        }
        check_request(req)?;
        let mut conn = self.conn()?;
        let db = |e| StoreError::from(self.db(e));
        let mut tx = self.read_snapshot(&mut conn)?;
        let allowed = self.allowed(&mut tx, req.filter)?;
        let nothing_allowed = allowed.as_ref().is_some_and(Vec::is_empty);
        let started = Instant::now();
        let dense = match req.dense {
            Some(q) if !nothing_allowed && req.k > 0 => {
                self.dense(&mut tx, q, req.k, allowed.as_ref())?
            }
            _ => Vec::new(),
        };
        let dense_time = started.elapsed();
        let started = Instant::now();
        let lexical = match req.lexical {
            Some(t) if !nothing_allowed && req.k > 0 => {
                self.lexical(&mut tx, t, req.k, allowed.as_ref())?
            }
            _ => Vec::new(),
        };
        let lexical_time = started.elapsed();
        let pks: Vec<i32> = dense
            .iter()
            .chain(&lexical)
            .map(|(k, _)| k.doc as i32)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let corpus = self.fetch(&mut tx, &pks)?;
        tx.commit().map_err(db)?;
        Ok(Found {
            dense,
            lexical,
            corpus: Arc::new(corpus),
            times: SearchTimes {
                dense: dense_time,
                lexical: lexical_time,
                ..SearchTimes::default()
            },
        })
    }
}

/// Refuses a query whose text or filter holds what PostgreSQL cannot store (a NUL):
/// the server would fail on it.
fn check_request(req: &SearchRequest<'_>) -> Result<(), PgError> {
    if let Some(text) = req.lexical {
        check_text("query", text)?;
    }
    let filter = req.filter;
    for id in &filter.doc_ids {
        check_text("filter document id", id)?;
    }
    for prefix in &filter.path_prefixes {
        check_text("prefix", prefix)?;
    }
    for c in &filter.metadata {
        let (MetaCondition::Eq { key, .. }
        | MetaCondition::OneOf { key, .. }
        | MetaCondition::Range { key, .. }) = c;
        check_text("metadata filter key", key)?;
        match c {
            MetaCondition::Eq { value, .. } => check_json("metadata filter value", value)?,
            MetaCondition::OneOf { values, .. } => {
                for value in values {
                    check_json("metadata filter value", value)?;
                }
            }
            MetaCondition::Range { .. } => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bm25_prefers_rare_terms_and_short_chunks() {
        let key = |o| ChunkKey::new(1, o);
        let mut chunks = HashMap::new();
        chunks.insert(key(0), (10.0, vec![("rare".to_string(), 1.0)]));
        chunks.insert(key(1), (10.0, vec![("common".to_string(), 1.0)]));
        chunks.insert(key(2), (40.0, vec![("rare".to_string(), 1.0)]));
        let stats = Statistics {
            n: 100,
            tokens: 2000,
            df: [("rare".to_string(), 2), ("common".to_string(), 50)]
                .into_iter()
                .collect(),
        };
        let mut out = bm25(&chunks, &stats);
        sort_results(&mut out);
        let order: Vec<u32> = out.iter().map(|(k, _)| k.ordinal).collect();
        assert_eq!(order, [0, 2, 1]);
        assert!(bm25(&HashMap::new(), &stats).is_empty());
    }

    #[test]
    fn prefixes_match_literally() {
        assert_eq!(like_prefix("a_b%c\\"), "a\\_b\\%c\\\\%");
        assert_eq!(like_prefix(""), "%");
    }
}
