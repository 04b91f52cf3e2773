//! The versioned schema: created and migrated by Excerpt when it connects.
//!
//! - `excerpt_schema`: one row, the schema version. A database whose version is newer
//!   than [`SCHEMA_VERSION`] is refused (an older build must not write a newer layout).
//! - `excerpt_config`: at most one row, the [`excerpt_index::IndexConfig`] as JSON (model,
//!   dimension, chunker, headers, contextualizer), written by the first ingest and
//!   compared by every later one exactly as the embedded index does.
//! - `excerpt_documents`: one row per document: id, title, source, metadata (jsonb),
//!   text, content hash, and the sections, sentences, pages and chunk list as jsonb.
//!   `pk` (an identity) is the document's [`excerpt_core::ChunkKey::doc`] in queries.
//! - `excerpt_chunks`: one row per chunk: (document, ordinal), character range, the
//!   indexed text (header, context, text), the key of its embedding input, its
//!   `vector(N)` and a generated `tsvector` of the indexed text. Created with the config
//!   row, since N is the model's dimension; with it an HNSW index (cosine) on the
//!   vectors, a GIN index on the tsvector and a B-tree on the embedding key (the
//!   primary key is the B-tree on (document, ordinal)). Since version 2 each row also
//!   holds `tokens`, the chunk's length in full-text tokens (BM25's length).
//! - Version 2 also indexes `excerpt_documents.metadata` (GIN, `jsonb_path_ops`) for
//!   metadata filters.
//! - `excerpt_lexicon` (version 2): per lexeme, the number of chunks holding it, and
//!   `excerpt_totals`: the number of chunks and their tokens. Both are kept by every
//!   write in its own transaction, so BM25 reads collection statistics with one lookup
//!   per query lexeme instead of counting through the GIN index (a count that grows
//!   with the collection). Writers update lexemes in sorted order, so concurrent writers
//!   wait for each other there and never deadlock.

use postgres::GenericClient;

/// The version this build writes and reads.
pub const SCHEMA_VERSION: i32 = 2;

/// Advisory lock key held while the schema is created or migrated.
pub(crate) const MIGRATION_LOCK: i64 = 0x0065_7863_6572_7074; // "excerpt"

/// What [`migrate_locked`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Migrated {
    /// The schema is at [`SCHEMA_VERSION`].
    Current,
    /// The database holds a newer version.
    Newer(i32),
}

const V1: &str = "
CREATE TABLE IF NOT EXISTS excerpt_config (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    config jsonb NOT NULL,
    dimension integer NOT NULL
);
CREATE TABLE IF NOT EXISTS excerpt_documents (
    pk integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL UNIQUE,
    title text NOT NULL,
    source text,
    metadata jsonb NOT NULL,
    text text NOT NULL,
    hash text NOT NULL,
    sections jsonb NOT NULL,
    sentences jsonb NOT NULL,
    pages jsonb NOT NULL,
    chunks jsonb NOT NULL,
    sentence_vectors real[]
);
";

/// Version 2: the collection statistics of BM25 (see the module docs). A version-1
/// database with chunks gets its token counts and statistics computed from them.
const V2: &str = "
CREATE TABLE IF NOT EXISTS excerpt_lexicon (
    lexeme text PRIMARY KEY,
    df bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS excerpt_totals (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    chunks bigint NOT NULL,
    tokens bigint NOT NULL
);
INSERT INTO excerpt_totals (chunks, tokens) VALUES (0, 0) ON CONFLICT DO NOTHING;
CREATE INDEX IF NOT EXISTS excerpt_documents_metadata
    ON excerpt_documents USING gin (metadata jsonb_path_ops);
DO $$
BEGIN
  IF to_regclass('excerpt_chunks') IS NOT NULL THEN
    ALTER TABLE excerpt_chunks ADD COLUMN IF NOT EXISTS tokens integer;
    UPDATE excerpt_chunks SET tokens = (SELECT coalesce(sum(coalesce(array_length(x.positions, 1), 1)), 0)
                                        FROM unnest(tsv) AS x)
      WHERE tokens IS NULL;
    ALTER TABLE excerpt_chunks ALTER COLUMN tokens SET NOT NULL;
    DELETE FROM excerpt_lexicon;
    INSERT INTO excerpt_lexicon (lexeme, df)
      SELECT u.lexeme, count(*) FROM excerpt_chunks c, unnest(c.tsv) AS u GROUP BY u.lexeme;
    UPDATE excerpt_totals SET chunks = (SELECT count(*) FROM excerpt_chunks),
                              tokens = (SELECT coalesce(sum(tokens), 0) FROM excerpt_chunks);
  END IF;
END $$;
";

/// Creates the schema or migrates it to [`SCHEMA_VERSION`]. The caller holds the
/// advisory lock [`MIGRATION_LOCK`], so concurrent processes do it once.
pub(crate) fn migrate_locked(client: &mut impl GenericClient) -> Result<Migrated, postgres::Error> {
    client.batch_execute("CREATE TABLE IF NOT EXISTS excerpt_schema (version integer NOT NULL)")?;
    let found: Option<i32> = client
        .query_opt("SELECT max(version) FROM excerpt_schema", &[])?
        .and_then(|r| r.get(0));
    match found {
        Some(v) if v > SCHEMA_VERSION => return Ok(Migrated::Newer(v)),
        Some(v) if v == SCHEMA_VERSION => return Ok(Migrated::Current),
        _ => {}
    }
    let mut tx = client.transaction()?;
    tx.batch_execute(V1)?;
    tx.batch_execute(V2)?;
    tx.execute("DELETE FROM excerpt_schema", &[])?;
    tx.execute(
        "INSERT INTO excerpt_schema (version) VALUES ($1)",
        &[&SCHEMA_VERSION],
    )?;
    tx.commit()?;
    Ok(Migrated::Current)
}

/// The HNSW index on the chunk vectors (cosine distance, pgvector's default graph
/// parameters).
pub(crate) const ANN_INDEX: &str = "CREATE INDEX IF NOT EXISTS excerpt_chunks_hnsw
    ON excerpt_chunks USING hnsw (embedding vector_cosine_ops);";

/// The statements that create the chunk table for vectors of `dimension`.
pub(crate) fn chunk_table(dimension: usize) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS excerpt_chunks (
            doc integer NOT NULL REFERENCES excerpt_documents (pk) ON DELETE CASCADE,
            ordinal integer NOT NULL,
            char_start integer NOT NULL,
            char_end integer NOT NULL,
            indexed text NOT NULL,
            embed_key text NOT NULL,
            embedding vector({dimension}) NOT NULL,
            tokens integer NOT NULL,
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', indexed)) STORED,
            PRIMARY KEY (doc, ordinal)
        );
        {ANN_INDEX}
        CREATE INDEX IF NOT EXISTS excerpt_chunks_tsv ON excerpt_chunks USING gin (tsv);
        CREATE INDEX IF NOT EXISTS excerpt_chunks_embed_key ON excerpt_chunks (embed_key);"
    )
}
