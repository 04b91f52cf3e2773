//! The lexical side of the index: one tantivy document per chunk, holding the document
//! id (raw string, for deletion and filtering), the chunk ordinal, and the searched body
//! (chunk header and chunk text, analysed in the document's language by
//! `excerpt_analysis`). Scores are BM25 (k1 1.2, b 0.75).
//!
//! The body field's tokenizer records the analysis ([`Analysis`]): `en_stem` in indexes
//! made before analysis per language (every document English-stemmed, as they keep being
//! written and searched), [`PER_LANGUAGE_TOKENIZER`] since. In the latter the terms of
//! each chunk are given to tantivy pre-tokenized, analysed in the language of its
//! document ([`document_language`]); a query is analysed in its own language when it
//! says it clearly and the index holds documents in it, else in each language the index
//! holds, the terms joined ([`Bm25Reader::terms`]).
//!
//! The id and the ordinal are fast fields too (the id since 2026-11-26), so a search reads
//! a hit's key from columns instead of decompressing its stored document; an index made
//! before keeps its schema and is read from the document store.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use excerpt_analysis::{Analysis, Language};
use excerpt_core::{indexed_text, Document};
use tantivy::collector::TopDocs;
use tantivy::columnar::{Column, StrColumn};
use tantivy::indexer::LogMergePolicy;
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery, TermSetQuery};
use tantivy::schema::{
    Field, FieldType, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST,
    STORED, STRING,
};
use tantivy::tokenizer::{PreTokenizedStream, PreTokenizedString, TextAnalyzer, Token};
use tantivy::{doc, DocAddress, Index, IndexReader, ReloadPolicy, Searcher, TantivyDocument, Term};

#[cfg(test)]
use crate::dense::TopK;
use crate::IndexError;
use exhaustive::TermSums;
#[cfg(test)]
use exhaustive::{addressed, cores};

mod exhaustive;

/// Postings per query term that [`Scoring::Auto`] scores exhaustively: a query of `t`
/// terms whose terms hold at most `t` times this many postings in all. Scoring every
/// posting costs about 3 ns a posting on one core (7-10 ns through tantivy's buffered
/// union, before 2026-11-28); block-max WAND costs less the fewer the
/// terms (2-5 ms for four frequent words on a million chunks) and more the more there
/// are (4 ms at 11 terms, 20-27 ms at 23-33, on 105k chunks), so the allowance grows
/// with the terms (`examples/bm25_scoring.rs` measures both on an index).
pub const EXHAUSTIVE_POSTINGS_PER_TERM: u64 = 100_000;

/// How a search finds its best chunks. Both give the same chunks with the same scores
/// up to the order their terms' scores are added in (the last bit of a float).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scoring {
    /// [`Scoring::Exhaustive`] when the query's terms hold at most
    /// [`EXHAUSTIVE_POSTINGS_PER_TERM`] postings per term, else [`Scoring::Pruned`]
    /// (unless `EXCERPT_BM25_SCORING` says `pruned` or `exhaustive`).
    Auto,
    /// tantivy's block-max WAND: skips the blocks of postings that cannot reach the
    /// current top k. Fast for a few terms; for a question of many terms, common words
    /// included, it re-sorts its terms at every step and costs several times the
    /// exhaustive pass (financebench-dev's questions on 105k chunks: p50 6.4 ms
    /// against 2.9, slowest 47 ms against 9).
    Pruned,
    /// Every posting of every term scored, one term after the other, into a sum per
    /// chunk of a segment (`Bm25Reader::top_by_terms`: the scores of tantivy's
    /// buffered union, bit for bit, 1.5× faster), the best kept in a heap.
    Exhaustive,
}

/// The way of scoring `EXCERPT_BM25_SCORING` forces (`pruned` or `exhaustive`), read
/// once; `None` for `auto`, unset or anything else.
fn forced_scoring() -> Option<Scoring> {
    static FORCED: std::sync::OnceLock<Option<Scoring>> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| match std::env::var("EXCERPT_BM25_SCORING").as_deref() {
        Ok("pruned") => Some(Scoring::Pruned),
        Ok("exhaustive") => Some(Scoring::Exhaustive),
        _ => None,
    })
}

/// A segment's fast columns of document id and chunk ordinal.
type KeyColumns = (StrColumn, Column<u64>);

/// Fields of the BM25 schema, and the analysis its body was made with.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    /// Document id, raw.
    pub doc_id: Field,
    /// Chunk ordinal.
    pub ordinal: Field,
    /// Header and chunk text.
    pub body: Field,
    /// How the body is analysed (the body field's tokenizer says).
    pub analysis: Analysis,
}

/// The body tokenizer of indexes made before analysis per language: English stems.
pub const ENGLISH_TOKENIZER: &str = "en_stem";

/// The body tokenizer of indexes analysed per language. Chunks are indexed
/// pre-tokenized; the tokenizer itself (registered on every index opened) analyses a
/// text in its detected language.
pub const PER_LANGUAGE_TOKENIZER: &str = "excerpt_per_language";

fn schema() -> (Schema, Fields) {
    schema_with(STRING | STORED | FAST, PER_LANGUAGE_TOKENIZER)
}

/// The schema with the document id stored with `doc_id` options (indexes made before
/// 2026-11-26 lack `FAST`) and the body analysed by `tokenizer`.
fn schema_with(doc_id: TextOptions, tokenizer: &str) -> (Schema, Fields) {
    let mut b = Schema::builder();
    let doc_id = b.add_text_field("doc_id", doc_id);
    let ordinal = b.add_u64_field("ordinal", STORED | FAST);
    let body_opts = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(tokenizer)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let body = b.add_text_field("body", body_opts);
    let schema = b.build();
    let fields = Fields {
        doc_id,
        ordinal,
        body,
        analysis: analysis_of_tokenizer(tokenizer),
    };
    (schema, fields)
}

/// The analysis a body tokenizer's name records.
fn analysis_of_tokenizer(name: &str) -> Analysis {
    if name == PER_LANGUAGE_TOKENIZER {
        Analysis::PerLanguage
    } else {
        Analysis::English
    }
}

/// The fields of an opened index's schema, and its analysis.
fn fields_of(index: &Index) -> Result<Fields, IndexError> {
    let schema = index.schema();
    let field = |name: &str| {
        schema.get_field(name).map_err(|_| {
            IndexError::from(tantivy::TantivyError::SchemaError(format!(
                "the BM25 index has no field {name}"
            )))
        })
    };
    let body = field("body")?;
    let tokenizer = match schema.get_field_entry(body).field_type() {
        FieldType::Str(options) => options
            .get_indexing_options()
            .map(|i| i.tokenizer().to_string()),
        _ => None,
    };
    Ok(Fields {
        doc_id: field("doc_id")?,
        ordinal: field("ordinal")?,
        body,
        analysis: analysis_of_tokenizer(tokenizer.as_deref().unwrap_or(ENGLISH_TOKENIZER)),
    })
}

/// `index` with [`PER_LANGUAGE_TOKENIZER`] registered, and its fields.
fn registered(index: Index) -> Result<(Index, Fields), IndexError> {
    index.tokenizers().register(
        PER_LANGUAGE_TOKENIZER,
        TextAnalyzer::from(DetectingTokenizer),
    );
    let fields = fields_of(&index)?;
    Ok((index, fields))
}

/// The tokenizer of [`PER_LANGUAGE_TOKENIZER`]: a text analysed in its detected
/// language (chunks are indexed pre-tokenized in their document's language instead).
#[derive(Debug, Clone, Copy)]
struct DetectingTokenizer;

impl tantivy::tokenizer::Tokenizer for DetectingTokenizer {
    type TokenStream<'a> = PreTokenizedStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> PreTokenizedStream {
        PreTokenizedStream::from(pre_tokenized(
            text.to_string(),
            excerpt_analysis::detect(text),
        ))
    }
}

/// `text` analysed in `language`, as tantivy indexes a pre-tokenized value.
fn pre_tokenized(text: String, language: Language) -> PreTokenizedString {
    let tokens = excerpt_analysis::analyze(&text, language)
        .into_iter()
        .enumerate()
        .map(|(position, t)| Token {
            offset_from: t.start,
            offset_to: t.end,
            position,
            text: t.text,
            position_length: 1,
        })
        .collect();
    PreTokenizedString { text, tokens }
}

/// The language of document `d`: the one its metadata names ([`excerpt_analysis::LANGUAGE_KEY`],
/// set by a user or at ingest), else the one detected in its text.
pub fn document_language(d: &Document) -> Language {
    let set = d
        .metadata
        .get(excerpt_analysis::LANGUAGE_KEY)
        .and_then(|v| v.as_str());
    excerpt_analysis::language_of(set, d.text.as_str())
}

/// The languages of `docs`, each once, in order of first appearance.
pub fn languages_of<'a>(docs: impl Iterator<Item = &'a Document>) -> Vec<Language> {
    let mut out: Vec<Language> = Vec::new();
    for d in docs {
        let l = document_language(d);
        if !out.contains(&l) {
            out.push(l);
        }
    }
    out
}

/// Opens the on-disk BM25 index of `dir`, creating it when absent (analysed per
/// language; an existing index keeps the analysis it was made with).
pub fn open_or_create(dir: &Path) -> Result<(Index, Fields), IndexError> {
    let (schema, _) = schema();
    std::fs::create_dir_all(dir).map_err(IndexError::io("creating", dir))?;
    let has_meta = dir.join("meta.json").exists();
    let index = if has_meta {
        Index::open_in_dir(dir)?
    } else {
        Index::create_in_dir(dir, schema)?
    };
    registered(index)
}

/// Opens the on-disk BM25 index of `dir` read-only; `None` when there is none.
pub fn open_existing(dir: &Path) -> Result<Option<(Index, Fields)>, IndexError> {
    if !dir.join("meta.json").exists() {
        return Ok(None);
    }
    registered(Index::open_in_dir(dir)?).map(Some)
}

/// A fresh in-memory BM25 index holding `docs` (used when the on-disk one does not
/// match the manifest and cannot be repaired by a reader), analysed per language.
pub fn build_in_ram<'a>(
    docs: impl Iterator<Item = &'a Document>,
    headers: bool,
) -> Result<(Index, Fields), IndexError> {
    let (schema, _) = schema();
    let (index, fields) = registered(Index::create_in_ram(schema))?;
    let mut w: tantivy::IndexWriter<TantivyDocument> =
        index.writer_with_num_threads(1, 50_000_000)?;
    for d in docs {
        add_document(&w, fields, d, headers)?;
    }
    w.commit()?;
    Ok((index, fields))
}

/// Writer memory budget of the on-disk BM25 index.
const WRITER_MEMORY: usize = 64_000_000;

/// A writer of the on-disk BM25 index, merging its segments by size (`Bm25Merges`).
pub fn writer(index: &Index) -> Result<tantivy::IndexWriter<TantivyDocument>, IndexError> {
    let w = index.writer_with_num_threads(1, WRITER_MEMORY)?;
    w.set_merge_policy(Box::new(Bm25Merges::default()));
    Ok(w)
}

/// Segments of fewer chunks than this are merged among themselves ([`Bm25Merges`]).
const SMALL_SEGMENT: u32 = 10_000;

/// The merge policy of the on-disk BM25 index: two segments of a size level are merged
/// as soon as they exist (tantivy's default waits for eight). Every large segment costs
/// a search its own pass over its postings, so at 100k chunks one searched segment
/// instead of ten cut BM25's p50 from 10-11 to 6-7 ms (docs/BENCHMARKS.md). Scores do
/// not change: BM25's statistics are the searcher's, over every segment.
///
/// Segments of fewer than [`SMALL_SEGMENT`] chunks have levels of their own, a level
/// per doubling in size, from one chunk up: a commit of one document merges with
/// segments about its size, and its chunks are rewritten about once per doubling.
/// With one level for all of them (tantivy's smallest level is 10,000 documents),
/// every commit rewrote the pile of recent chunks below 10,000 with it: at 100k
/// chunks, 7,600 chunks merged for each document a server was sent.
#[derive(Debug)]
struct Bm25Merges {
    large: LogMergePolicy,
    small: LogMergePolicy,
}

impl Default for Bm25Merges {
    fn default() -> Self {
        let mut large = LogMergePolicy::default();
        large.set_min_num_segments(2);
        large.set_min_layer_size(SMALL_SEGMENT);
        let mut small = LogMergePolicy::default();
        small.set_min_num_segments(2);
        small.set_min_layer_size(1);
        small.set_level_log_size(1.0);
        Bm25Merges { large, small }
    }
}

impl tantivy::indexer::MergePolicy for Bm25Merges {
    fn compute_merge_candidates(
        &self,
        segments: &[tantivy::index::SegmentMeta],
    ) -> Vec<tantivy::indexer::MergeCandidate> {
        let (small, large): (Vec<_>, Vec<_>) = segments
            .iter()
            .cloned()
            .partition(|s| s.num_docs() < SMALL_SEGMENT);
        let mut out = self.large.compute_merge_candidates(&large);
        out.extend(self.small.compute_merge_candidates(&small));
        out
    }
}

/// A BM25 index's commit generation and the ids of the documents it holds.
pub(crate) type StoredIds = (Option<u64>, BTreeSet<String>);

/// The ids of the documents the BM25 index in `dir` holds, and the generation it was
/// committed for; `None` when there is none, or it cannot be read whole (files that
/// fail their checksums, or the search library failing on them). Reads every stored
/// chunk: for `repair`, which names lost documents from every source that knows them.
pub(crate) fn stored_doc_ids(dir: &Path) -> Option<StoredIds> {
    let run = || -> Result<Option<StoredIds>, IndexError> {
        let Some((index, fields)) = open_existing(dir)? else {
            return Ok(None);
        };
        if !index.validate_checksum()?.is_empty() {
            return Ok(None);
        }
        let generation = committed_generation(&index)?;
        let reader = Bm25Reader::new(index, fields)?;
        let searcher = &reader.searcher;
        let mut ids = BTreeSet::new();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let ord = u32::try_from(ord).unwrap_or(u32::MAX);
            for doc in segment.doc_ids_alive() {
                let d: TantivyDocument = searcher.doc(DocAddress::new(ord, doc))?;
                if let Some(id) = d.get_first(fields.doc_id).and_then(|v| v.as_str()) {
                    ids.insert(id.to_string());
                }
            }
        }
        Ok(Some((generation, ids)))
    };
    crate::quiet::catch_quietly(run).ok()?.ok()?
}

/// The generation a BM25 index was committed for (its commit payload).
pub fn committed_generation(index: &Index) -> Result<Option<u64>, IndexError> {
    Ok(index.load_metas()?.payload.and_then(|p| p.parse().ok()))
}

/// Adds every chunk of `d` to a tantivy writer.
pub fn add_document(
    w: &tantivy::IndexWriter<TantivyDocument>,
    f: Fields,
    d: &Document,
    headers: bool,
) -> Result<(), IndexError> {
    let language = match f.analysis {
        Analysis::English => None,
        Analysis::PerLanguage => Some(document_language(d)),
    };
    for c in &d.chunks {
        let body = indexed_text(d, c, headers);
        let doc = match language {
            None => doc!(
                f.doc_id => d.id.as_str(),
                f.ordinal => c.ordinal as u64,
                f.body => body,
            ),
            Some(language) => doc!(
                f.doc_id => d.id.as_str(),
                f.ordinal => c.ordinal as u64,
                f.body => pre_tokenized(body, language),
            ),
        };
        w.add_document(doc)?;
    }
    Ok(())
}

/// Deletes every chunk of document `id` from a tantivy writer.
pub fn delete_document(w: &tantivy::IndexWriter<TantivyDocument>, f: Fields, id: &str) {
    w.delete_term(Term::from_field_text(f.doc_id, id));
}

/// A reader over a committed BM25 index.
pub struct Bm25Reader {
    index: Index,
    reader: IndexReader,
    searcher: Searcher,
    fields: Fields,
    /// Buffers of past searches for the next ones, at most one per core: a search
    /// takes one (or makes one) and gives it back, so searches at once never share
    /// one and the memory kept is bounded (4 bytes a chunk of the largest segment,
    /// times the cores) however many threads search.
    sums: std::sync::Mutex<Vec<TermSums>>,
    /// The languages of the indexed documents (an index analysed per language), in
    /// which a query whose language is unclear is analysed.
    languages: Vec<Language>,
}

impl std::fmt::Debug for Bm25Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bm25Reader").finish_non_exhaustive()
    }
}

impl Bm25Reader {
    /// A reader of `index`, pinned to its current commit.
    pub fn new(index: Index, fields: Fields) -> Result<Self, IndexError> {
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let searcher = reader.searcher();
        Ok(Bm25Reader {
            index,
            reader,
            searcher,
            fields,
            sums: std::sync::Mutex::new(Vec::new()),
            languages: Vec::new(),
        })
    }

    /// The reader, knowing that the indexed documents are in `languages` (see
    /// [`Bm25Reader::terms`]; [`languages_of`] the documents).
    pub fn with_languages(mut self, languages: Vec<Language>) -> Self {
        self.languages = languages;
        self
    }

    /// The analysis the index was made with.
    pub fn analysis(&self) -> Analysis {
        self.fields.analysis
    }

    /// The commit payload of the pinned searcher's index.
    pub fn generation(&self) -> Result<Option<u64>, IndexError> {
        committed_generation(&self.index)
    }

    /// Number of chunks indexed.
    pub fn num_chunks(&self) -> u64 {
        self.searcher.num_docs()
    }

    /// The analysed terms of `text` (segmented, normalised, stemmed), deduplicated, in
    /// first occurrence order. In an index analysed per language: in the query's
    /// language when [`excerpt_analysis::detect_query`] tells it and documents in it are
    /// indexed (or when the index holds one language only), else in every language of
    /// the index ([`Bm25Reader::with_languages`]), the terms of each joined (a term is
    /// searched once).
    pub fn terms(&self, text: &str) -> Result<Vec<String>, IndexError> {
        if self.fields.analysis == Analysis::PerLanguage {
            let detected = excerpt_analysis::detect_query(text);
            let languages: Vec<Language> = match (detected, self.languages.as_slice()) {
                (_, [one]) => vec![*one],
                (Some(l), held) if held.contains(&l) => vec![l],
                (detected, []) => vec![detected.unwrap_or_else(|| excerpt_analysis::detect(text))],
                (_, held) => held.to_vec(),
            };
            let mut seen = BTreeSet::new();
            let mut out = Vec::new();
            for l in languages {
                for t in excerpt_analysis::analyze(text, l) {
                    if seen.insert(t.text.clone()) {
                        out.push(t.text);
                    }
                }
            }
            return Ok(out);
        }
        let mut analyzer = self.index.tokenizer_for_field(self.fields.body)?;
        let mut stream = analyzer.token_stream(text);
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        while stream.advance() {
            let t = stream.token().text.clone();
            if seen.insert(t.clone()) {
                out.push(t);
            }
        }
        Ok(out)
    }

    /// Top `k` chunks for `text` by BM25 as `(doc id, ordinal, score)`, optionally only in
    /// documents whose ids are in `allowed`. Every query term is optional (OR); query
    /// syntax is not interpreted. Ties: document id, then ordinal.
    pub fn search(
        &self,
        text: &str,
        k: usize,
        allowed: Option<&[&str]>,
    ) -> Result<Vec<(String, u32, f32)>, IndexError> {
        self.search_with(text, k, allowed, Scoring::Auto)
    }

    /// [`Bm25Reader::search`] by the given way of scoring.
    pub fn search_with(
        &self,
        text: &str,
        k: usize,
        allowed: Option<&[&str]>,
        scoring: Scoring,
    ) -> Result<Vec<(String, u32, f32)>, IndexError> {
        let terms = self.terms(text)?;
        if terms.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        // Fetch a little more than k so ties at the cut are resolved by key, not by
        // tantivy's internal doc order; never more than the rows that exist.
        let limit = k
            .min(usize::try_from(self.searcher.num_docs()).unwrap_or(usize::MAX))
            .saturating_add(16);
        let exhaustive = match scoring {
            Scoring::Exhaustive => true,
            Scoring::Pruned => false,
            Scoring::Auto => match forced_scoring() {
                Some(forced) => forced == Scoring::Exhaustive,
                None => self.postings(&terms)? <= EXHAUSTIVE_POSTINGS_PER_TERM * terms.len() as u64,
            },
        };
        let hits = if exhaustive {
            self.top_by_terms(&terms, allowed, limit, None)?
        } else {
            let query = self.query_of(&terms, allowed);
            self.searcher
                .search(&query, &TopDocs::with_limit(limit).order_by_score())?
        };
        let mut out = self.hit_keys(&hits)?;
        out.sort_by(|a, b| {
            b.2.total_cmp(&a.2)
                .then_with(|| a.0.cmp(&b.0))
                .then(a.1.cmp(&b.1))
        });
        out.truncate(k);
        Ok(out)
    }

    /// The tantivy query of `terms` (each optional), only in the documents `allowed`
    /// when given.
    fn query_of(&self, terms: &[String], allowed: Option<&[&str]>) -> Box<dyn Query> {
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| {
                let q: Box<dyn Query> = Box::new(TermQuery::new(
                    Term::from_field_text(self.fields.body, t),
                    IndexRecordOption::WithFreqs,
                ));
                (Occur::Should, q)
            })
            .collect();
        let text_query: Box<dyn Query> = Box::new(BooleanQuery::new(clauses));
        match allowed {
            None => text_query,
            Some(ids) => {
                let set = TermSetQuery::new(
                    ids.iter()
                        .map(|id| Term::from_field_text(self.fields.doc_id, id)),
                );
                Box::new(BooleanQuery::new(vec![
                    (Occur::Must, text_query),
                    (
                        Occur::Must,
                        Box::new(ConstScoreQuery::new(Box::new(set), 0.0)),
                    ),
                ]))
            }
        }
    }

    /// The postings of `terms` in all: how many (chunk, term) pairs an exhaustive search
    /// scores.
    pub fn postings(&self, terms: &[String]) -> Result<u64, IndexError> {
        let mut sum = 0u64;
        for t in terms {
            sum += self
                .searcher
                .doc_freq(&Term::from_field_text(self.fields.body, t))?;
        }
        Ok(sum)
    }

    /// The `limit` best-scored documents of `query`, scoring every document that
    /// matches a term (no pruning), best first, by tantivy's scorers: what
    /// [`Bm25Reader::top_by_terms`] is checked against.
    #[cfg(test)]
    fn top_scored(
        &self,
        query: &dyn Query,
        limit: usize,
    ) -> Result<Vec<(f32, DocAddress)>, IndexError> {
        let weight = query.weight(tantivy::query::EnableScoring::enabled_from_searcher(
            &self.searcher,
        ))?;
        // Keyed by (segment, doc): of equal scores, the earlier document is kept.
        let mut top = TopK::new(limit, limit);
        for (segment, reader) in self.searcher.segment_readers().iter().enumerate() {
            let alive = reader.alive_bitset();
            let segment = segment as u32;
            weight.for_each(reader, &mut |doc, score| {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    top.offer((segment, doc), score);
                }
            })?;
        }
        Ok(addressed(top))
    }

    /// The `(document id, ordinal, score)` of each hit. Ids come from the segments' id
    /// columns, each segment's distinct ids decoded in one sorted pass over its
    /// dictionary (a lookup per hit would decompress a dictionary block per hit), else
    /// from the stored documents.
    fn hit_keys(&self, hits: &[(f32, DocAddress)]) -> Result<Vec<(String, u32, f32)>, IndexError> {
        // Per segment: its columns, when its schema has them, and its hits' id ordinals.
        let mut segments: HashMap<u32, (Option<KeyColumns>, Vec<u64>)> = HashMap::new();
        // Per hit: its id ordinal and chunk ordinal when read from columns.
        let mut from_columns = Vec::with_capacity(hits.len());
        for &(_, addr) in hits {
            let (cols, ords) = segments
                .entry(addr.segment_ord)
                .or_insert_with(|| (self.key_columns(addr.segment_ord), Vec::new()));
            let key = cols.as_ref().and_then(|(ids, ordinals)| {
                Some((
                    ids.term_ords(addr.doc_id).next()?,
                    ordinals.first(addr.doc_id)?,
                ))
            });
            if let Some((ord, _)) = key {
                ords.push(ord);
            }
            from_columns.push(key);
        }
        // Per segment: its hits' distinct id ordinals, sorted, and their ids.
        let mut names: HashMap<u32, (Vec<u64>, Vec<String>)> = HashMap::new();
        for (segment, (cols, mut ords)) in segments {
            let Some((ids, _)) = cols else { continue };
            ords.sort_unstable();
            ords.dedup();
            let mut decoded = Vec::with_capacity(ords.len());
            ids.dictionary()
                .sorted_ords_to_term_cb(&ords, |bytes| {
                    decoded.push(String::from_utf8_lossy(bytes).into_owned());
                })
                .map_err(tantivy::TantivyError::from)?;
            // An ordinal the dictionary lacks leaves the segment to the stored documents.
            if decoded.len() == ords.len() {
                names.insert(segment, (ords, decoded));
            }
        }
        let mut out = Vec::with_capacity(hits.len());
        for (&(score, addr), key) in hits.iter().zip(from_columns) {
            let id = key.and_then(|(ord, ordinal)| {
                let (ords, decoded) = names.get(&addr.segment_ord)?;
                let at = ords.binary_search(&ord).ok()?;
                Some((decoded.get(at)?.clone(), ordinal))
            });
            let (id, ordinal) = match id {
                Some(k) => k,
                None => self.stored_key(addr)?,
            };
            out.push((id, ordinal as u32, score));
        }
        Ok(out)
    }

    /// The id and ordinal columns of segment `segment`; `None` when its schema does not
    /// make the id a fast field (an index made before 2026-11-26).
    fn key_columns(&self, segment: u32) -> Option<KeyColumns> {
        let ff = self.searcher.segment_reader(segment).fast_fields();
        let ids = ff.str("doc_id").ok().flatten()?;
        let ords = ff.u64("ordinal").ok()?;
        Some((ids, ords))
    }

    /// A hit's document id and ordinal read from its stored document.
    fn stored_key(&self, addr: DocAddress) -> Result<(String, u64), IndexError> {
        let d: TantivyDocument = self.searcher.doc(addr)?;
        let id = d
            .get_first(self.fields.doc_id)
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        let ord = d
            .get_first(self.fields.ordinal)
            .and_then(|v| v.as_u64())
            .unwrap_or_default();
        Ok((id.to_string(), ord))
    }

    /// Keeps the reader alive (it owns the searcher's segments).
    pub fn reader(&self) -> &IndexReader {
        &self.reader
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index in RAM of `schema` holding `chunks` (document id, ordinal, body),
    /// committed every three chunks, so it has several segments.
    fn reader(schema: (Schema, Fields), chunks: &[(&str, u64, &str)]) -> Bm25Reader {
        reader_committing(schema, chunks, 3)
    }

    /// The schema of indexes made before analysis per language (English stems).
    fn english_schema() -> (Schema, Fields) {
        schema_with(STRING | STORED | FAST, ENGLISH_TOKENIZER)
    }

    #[test]
    fn english_analysis_gives_the_terms_of_tantivys_en_stem() {
        let text = "The Panthers' defense gave up 308 points, and RUNNING backs ran 3.14 \
                    naïve café-style Ωmega σοφία Überraschungsmomentmomentmomentmomente \
                    strongest flies 中文 x";
        let index = Index::create_in_ram(english_schema().0);
        let mut analyzer = index.tokenizers().get(ENGLISH_TOKENIZER).unwrap();
        let mut stream = analyzer.token_stream(text);
        let mut theirs = Vec::new();
        while stream.advance() {
            let t = stream.token();
            theirs.push((t.text.clone(), t.offset_from, t.offset_to));
        }
        let ours: Vec<_> = excerpt_analysis::english(text)
            .into_iter()
            .map(|t| (t.text, t.start, t.end))
            .collect();
        assert_eq!(ours, theirs);
    }

    /// A document of `language` (its metadata says so) holding `text` in one chunk.
    fn document(id: &str, language: &str, text: &str) -> Document {
        let idx = excerpt_core::CharIndex::new(text);
        let range = idx.range(0, text.len()).unwrap();
        let mut metadata = serde_json::Map::new();
        metadata.insert(
            excerpt_analysis::LANGUAGE_KEY.into(),
            serde_json::Value::String(language.into()),
        );
        Document {
            id: id.into(),
            title: String::new(),
            source: None,
            metadata,
            hash: String::new(),
            text: text.into(),
            sections: vec![],
            chunks: vec![excerpt_core::Chunk {
                ordinal: 0,
                range,
                section: None,
                tokens: 0,
                context: None,
            }],
            sentences: vec![range],
            pages: vec![],
        }
    }

    #[test]
    fn a_word_of_chinese_or_thai_text_is_found_alone() {
        // Space-splitting makes each of these one long "word", which the one-word query
        // never matches.
        let docs = [
            document(
                "zh",
                "zh",
                "北京是中华人民共和国的首都，也是全国的政治和文化中心。",
            ),
            document(
                "th",
                "th",
                "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทยและเป็นเมืองที่ใหญ่ที่สุด",
            ),
            document(
                "en",
                "en",
                "Paris is the capital of France and its largest city.",
            ),
        ];
        let (index, f) = build_in_ram(docs.iter(), false).unwrap();
        assert_eq!(f.analysis, Analysis::PerLanguage);
        let r = Bm25Reader::new(index, f)
            .unwrap()
            .with_languages(languages_of(docs.iter()));
        for (query, doc) in [("首都", "zh"), ("ประเทศ", "th"), ("capitals", "en")] {
            let hits = r.search(query, 3, None).unwrap();
            assert_eq!(
                hits.first().map(|h| h.0.as_str()),
                Some(doc),
                "{query}: {hits:?} (terms {:?})",
                r.terms(query).unwrap()
            );
        }
        // An English index of the same text (the analysis of indexes made before) is
        // blind to the Chinese word.
        let old = reader(english_schema(), &[("zh", 0, docs[0].text.as_str())]);
        assert!(old.search("首都", 3, None).unwrap().is_empty());
    }

    /// [`reader`], committing every `every` chunks.
    fn reader_committing(
        (schema, f): (Schema, Fields),
        chunks: &[(&str, u64, &str)],
        every: usize,
    ) -> Bm25Reader {
        let index = Index::create_in_ram(schema);
        let mut w: tantivy::IndexWriter<TantivyDocument> =
            index.writer_with_num_threads(1, 15_000_000).unwrap();
        for (i, &(id, ordinal, body)) in chunks.iter().enumerate() {
            w.add_document(doc!(f.doc_id => id, f.ordinal => ordinal, f.body => body))
                .unwrap();
            if i % every == every - 1 {
                w.commit().unwrap();
            }
        }
        w.commit().unwrap();
        Bm25Reader::new(index, f).unwrap()
    }

    #[test]
    fn keys_read_from_fast_columns_equal_the_stored_ones() {
        let chunks = [
            ("d1", 0, "alpha beta"),
            ("d1", 1, "gamma delta alpha"),
            ("d2", 0, "beta beta gamma"),
            ("d2", 1, "epsilon"),
            ("d2", 2, "alpha gamma"),
            ("d3", 0, "delta delta delta alpha"),
            ("d3", 1, "beta"),
            ("d10", 4, "gamma alpha beta"),
        ];
        let fast = reader(english_schema(), &chunks);
        let stored = reader(schema_with(STRING | STORED, ENGLISH_TOKENIZER), &chunks);
        assert!(fast.key_columns(0).is_some(), "the id is a fast field");
        assert!(
            stored.key_columns(0).is_none(),
            "an index made before has none"
        );
        for q in ["alpha", "beta gamma", "delta", "epsilon alpha"] {
            let a = fast.search(q, 10, None).unwrap();
            assert!(!a.is_empty(), "{q}");
            assert_eq!(a, stored.search(q, 10, None).unwrap(), "{q}");
            let only = Some(&["d2", "d10"][..]);
            let a = fast.search(q, 3, only).unwrap();
            assert!(a.iter().all(|h| h.0 == "d2" || h.0 == "d10"), "{a:?}");
            assert_eq!(a, stored.search(q, 3, only).unwrap(), "{q}");
        }
    }

    #[test]
    fn keys_of_many_hits_over_dictionaries_of_many_blocks_equal_the_stored_ones() {
        // 3,000 chunks of 700 documents with long ids, in two segments: each segment's
        // id dictionary spans many blocks, and most hits share a document with others.
        let ids: Vec<String> = (0..700)
            .map(|d| format!("filings/{:04}/annual-report-{}.pdf", (d * 7919) % 700, d))
            .collect();
        let bodies: Vec<String> = (0..3000)
            .map(|i| format!("revenue w{} w{} report", i % 13, i % 29))
            .collect();
        let chunks: Vec<(&str, u64, &str)> = (0..3000)
            .map(|i| (ids[i % 700].as_str(), (i / 700) as u64, bodies[i].as_str()))
            .collect();
        let fast = reader_committing(english_schema(), &chunks, 1800);
        let stored = reader_committing(
            schema_with(STRING | STORED, ENGLISH_TOKENIZER),
            &chunks,
            1800,
        );
        assert_eq!(fast.searcher.segment_readers().len(), 2);
        for q in ["revenue", "w3 w7 report", "w12"] {
            let a = fast.search(q, 900, None).unwrap();
            assert!(a.len() >= 100, "{q}: {}", a.len());
            assert_eq!(a, stored.search(q, 900, None).unwrap(), "{q}");
        }
    }

    #[test]
    fn exhaustive_and_pruned_scoring_find_the_same_chunks() {
        // Chunks of Zipf-like words in three segments, one document deleted.
        let words = [
            "the",
            "of",
            "revenue",
            "and",
            "cash",
            "flow",
            "in",
            "operating",
            "margin",
            "to",
            "capital",
            "expenditure",
            "a",
            "ratio",
            "net",
            "income",
            "asset",
            "turnover",
        ];
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let bodies: Vec<String> = (0..900)
            .map(|_| {
                (0..12)
                    .map(|_| {
                        let u = (next() >> 11) as f64 / (1u64 << 53) as f64;
                        words[((u * u) * words.len() as f64) as usize]
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let ids: Vec<String> = (0..90).map(|d| format!("doc{d:02}")).collect();
        let (schema, f) = english_schema();
        let index = Index::create_in_ram(schema);
        let mut w: tantivy::IndexWriter<TantivyDocument> =
            index.writer_with_num_threads(1, 15_000_000).unwrap();
        for (i, body) in bodies.iter().enumerate() {
            let (id, ordinal) = (ids[i % 90].as_str(), (i / 90) as u64);
            w.add_document(doc!(f.doc_id => id, f.ordinal => ordinal, f.body => body.as_str()))
                .unwrap();
            if i % 300 == 299 {
                w.commit().unwrap();
            }
        }
        delete_document(&w, f, "doc07");
        w.commit().unwrap();
        let r = Bm25Reader::new(index, f).unwrap();
        assert_eq!(r.searcher.segment_readers().len(), 3);
        let near = |a: f32, b: f32| (a - b).abs() <= 1e-5 * a.abs().max(1.0);
        for q in [
            "revenue",
            "cash flow margin",
            "the ratio of net income to asset turnover",
        ] {
            // Every matching chunk: the same chunks, the same scores up to rounding.
            let all = |s| {
                let mut v = r.search_with(q, 1000, None, s).unwrap();
                v.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
                v
            };
            let (pruned, exhaustive) = (all(Scoring::Pruned), all(Scoring::Exhaustive));
            assert!(pruned.len() > 50, "{q}: {}", pruned.len());
            assert!(
                pruned.iter().all(|h| h.0 != "doc07"),
                "{q}: a deleted chunk"
            );
            assert_eq!(pruned.len(), exhaustive.len(), "{q}");
            for (p, e) in pruned.iter().zip(&exhaustive) {
                assert_eq!((&p.0, p.1), (&e.0, e.1), "{q}");
                assert!(near(p.2, e.2), "{q}: {p:?} against {e:?}");
            }
            // The best 20: the same scores, rank by rank.
            let top = |s| r.search_with(q, 20, None, s).unwrap();
            let (pruned, exhaustive) = (top(Scoring::Pruned), top(Scoring::Exhaustive));
            assert_eq!(pruned.len(), 20, "{q}");
            assert_eq!(exhaustive.len(), 20, "{q}");
            for (p, e) in pruned.iter().zip(&exhaustive) {
                assert!(near(p.2, e.2), "{q}: {p:?} against {e:?}");
            }
            assert_eq!(r.search(q, 20, None).unwrap().len(), 20);
            // Scoped to two documents.
            let only = Some(&["doc03", "doc11"][..]);
            let scoped = |s| r.search_with(q, 15, only, s).unwrap();
            let (pruned, exhaustive) = (scoped(Scoring::Pruned), scoped(Scoring::Exhaustive));
            assert!(!pruned.is_empty(), "{q}");
            assert_eq!(pruned.len(), exhaustive.len(), "{q}");
            for (p, e) in pruned.iter().zip(&exhaustive) {
                assert!(p.0 == "doc03" || p.0 == "doc11", "{q}: {p:?}");
                assert!(near(p.2, e.2), "{q}: {p:?} against {e:?}");
            }
        }
        assert!(r.postings(&["the".into(), "revenue".into()]).unwrap() > 500);

        // Term by term, the scores of tantivy's union of the terms' scorers, bit for
        // bit, in the same order: repeated terms, unknown terms, scoped or not.
        for (q, only) in [
            ("the ratio of net income to asset turnover", None),
            ("cash cash flow flow the", None),
            ("margin zzz operating", None),
            (
                "the capital of revenue",
                Some(&["doc03", "doc11", "doc07", "nosuch"][..]),
            ),
            ("revenue", Some(&[][..])),
        ] {
            let terms = r.terms(q).unwrap();
            let union = r
                .top_scored(r.query_of(&terms, only).as_ref(), 2000)
                .unwrap();
            if only != Some(&[][..]) {
                assert!(union.len() > 10, "{q}: {}", union.len());
            }
            // Searches at once, on more threads than cores: each its own sums.
            let alone = r.top_by_terms(&terms, only, 2000, None).unwrap();
            std::thread::scope(|scope| {
                for marking in [None, Some(true), Some(false)].repeat(3) {
                    let (r, terms, alone) = (&r, &terms, &alone);
                    scope.spawn(move || {
                        for _ in 0..20 {
                            let got = r.top_by_terms(terms, only, 2000, marking).unwrap();
                            assert_eq!(&got, alone, "{q} {marking:?}");
                        }
                    });
                }
            });
            assert!(r.sums.lock().unwrap().len() <= cores());
            // Twice each way: the sums left behind by one search must be zero.
            for marking in [None, Some(true), Some(false), Some(true), Some(false), None] {
                let by_terms = r.top_by_terms(&terms, only, 2000, marking).unwrap();
                assert_eq!(union.len(), by_terms.len(), "{q}");
                for (u, t) in union.iter().zip(&by_terms) {
                    assert_eq!(
                        (u.0.to_bits(), u.1),
                        (t.0.to_bits(), t.1),
                        "{q} {marking:?}"
                    );
                }
            }
        }
    }
}
