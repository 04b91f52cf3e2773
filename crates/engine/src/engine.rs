use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use excerpt_context::{llm_counter, LlmTokens};
use excerpt_core::{ChunkerConfig, Embedder, Reranker};
use excerpt_embed::{
    resolve_model, CrossEncoderReranker, HttpReranker, LocalEmbedder, RemoteConfig, RemoteEmbedder,
    RerankConfig,
};
use excerpt_index::{IndexConfig, RepairReport, Snapshot, VerifyReport};

use crate::backend::{self, Backend, OpenStore};
use crate::memo::VectorMemo;
use crate::EngineError;

/// Query-time sentence vectors the engine keeps (about 1.5 KiB each at 384 dimensions).
const SENTENCE_MEMO_CAPACITY: usize = 16_384;

/// Which embedding model to use.
#[derive(Debug, Clone, PartialEq)]
pub enum EmbedderSpec {
    /// A local sentence-transformers directory, or a model name under
    /// `$EXCERPT_HOME/models` (`None`: all-MiniLM-L6-v2).
    Local {
        /// Directory or name.
        model: Option<String>,
    },
    /// An OpenAI-compatible `/v1/embeddings` endpoint.
    Remote(RemoteConfig),
}

/// Which reranker to use (none by default).
#[derive(Debug, Clone, PartialEq)]
pub enum RerankerSpec {
    /// A local BERT-family cross-encoder directory.
    Local(PathBuf),
    /// A `/rerank` endpoint (Cohere, Jina, TEI shapes).
    Http(RerankConfig),
}

/// How to open an [`Engine`].
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// The index directory, or the URL of a PostgreSQL database
    /// (`postgres://user@host/db`) holding the index.
    pub index_dir: PathBuf,
    /// The embedding model.
    pub embedder: EmbedderSpec,
    /// Chunker for a new index (`None`: the index's own, or the default for a new one).
    pub chunker: Option<ChunkerConfig>,
    /// Whether a new index embeds and searches chunk headers (`None`: the index's own,
    /// or on for a new one).
    pub headers: Option<bool>,
    /// LLM token encoding for budgets (`o200k_base`, `cl100k_base`, or `chars`: 4
    /// characters a token).
    pub llm_encoding: String,
    /// Reranker applied to the fused candidates when a request asks for it.
    pub reranker: Option<RerankerSpec>,
    /// `hnsw.ef_search` of dense searches on a PostgreSQL index (`None`: 100; a search
    /// for more candidates uses that many).
    pub hnsw_ef_search: Option<usize>,
}

impl EngineOptions {
    /// Defaults for an index directory: local default model, default chunker, headers on,
    /// `o200k_base` budgets (the encoding of GPT-4o and later; `cl100k_base`, GPT-4's,
    /// spends two to three times as many tokens on Greek, Hindi, Arabic or Thai text).
    pub fn new(index_dir: impl Into<PathBuf>) -> Self {
        EngineOptions {
            index_dir: index_dir.into(),
            embedder: EmbedderSpec::Local { model: None },
            chunker: None,
            headers: None,
            llm_encoding: "o200k_base".into(),
            reranker: None,
            hnsw_ef_search: None,
        }
    }
}

/// The library facade: ingest into, query and maintain one index directory.
///
/// The embedding model and the LLM tokenizer are loaded on first use, so listing or
/// removing documents never loads a model. Snapshots are cached and refreshed when the
/// index has a newer commit.
pub struct Engine {
    pub(crate) options: EngineOptions,
    embedder: OnceLock<Arc<dyn Embedder>>,
    llm_tokens: OnceLock<Arc<dyn LlmTokens + Send>>,
    reranker: OnceLock<Arc<dyn Reranker>>,
    /// Where the index lives, chosen once from `options.index_dir`.
    pub(crate) backend: Box<dyn Backend>,
    /// Sentence vectors embedded at query time (`window`), reused across queries.
    pub(crate) sentence_memo: Mutex<VectorMemo>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine over `options.index_dir` (nothing is read yet).
    pub fn new(options: EngineOptions) -> Engine {
        Engine {
            backend: backend::open(&options.index_dir, options.hnsw_ef_search),
            options,
            embedder: OnceLock::new(),
            llm_tokens: OnceLock::new(),
            reranker: OnceLock::new(),
            sentence_memo: Mutex::new(VectorMemo::new(SENTENCE_MEMO_CAPACITY)),
        }
    }

    /// An engine using a caller-provided embedder.
    pub fn with_embedder(options: EngineOptions, embedder: Arc<dyn Embedder>) -> Engine {
        let e = Engine::new(options);
        let _ = e.embedder.set(embedder);
        e
    }

    /// The index directory.
    pub fn index_dir(&self) -> &Path {
        &self.options.index_dir
    }

    /// The embedding model, loaded on first call.
    pub fn embedder(&self) -> Result<Arc<dyn Embedder>, EngineError> {
        if let Some(e) = self.embedder.get() {
            return Ok(e.clone());
        }
        let loaded: Arc<dyn Embedder> = match &self.options.embedder {
            EmbedderSpec::Local { model } => {
                let dir = resolve_model(model.as_deref())?;
                Arc::new(LocalEmbedder::load(&dir)?)
            }
            EmbedderSpec::Remote(cfg) => Arc::new(RemoteEmbedder::new(cfg.clone())?),
        };
        Ok(self.embedder.get_or_init(|| loaded).clone())
    }

    /// The configured reranker, loaded on first call; `None` when none is configured.
    pub fn reranker(&self) -> Result<Option<Arc<dyn Reranker>>, EngineError> {
        if let Some(r) = self.reranker.get() {
            return Ok(Some(r.clone()));
        }
        let loaded: Arc<dyn Reranker> = match &self.options.reranker {
            None => return Ok(None),
            Some(RerankerSpec::Local(dir)) => Arc::new(CrossEncoderReranker::load(dir)?),
            Some(RerankerSpec::Http(cfg)) => Arc::new(HttpReranker::new(cfg.clone())?),
        };
        Ok(Some(self.reranker.get_or_init(|| loaded).clone()))
    }

    /// The index as messages name it: its directory, or its PostgreSQL URL without the
    /// password.
    pub fn index_shown(&self) -> String {
        self.backend.shown()
    }

    /// The store queries read: the latest committed state of the index, with what it
    /// may be missing (damage warnings of an index directory, one line each).
    pub fn store(&self) -> Result<OpenStore, EngineError> {
        self.backend.store()
    }

    /// The LLM token counter budgets are measured with, loaded on first call.
    pub fn llm_tokens(&self) -> Result<Arc<dyn LlmTokens + Send>, EngineError> {
        if let Some(t) = self.llm_tokens.get() {
            return Ok(t.clone());
        }
        let t = llm_counter(&self.options.llm_encoding)?;
        Ok(self.llm_tokens.get_or_init(|| t).clone())
    }

    /// The latest committed snapshot of an index directory (cached; reopened when a
    /// newer generation exists). A damaged index opens with what can be read
    /// ([`Snapshot::damage`] says what cannot); a damaged manifest is recovered again at
    /// every call, never cached. A PostgreSQL index has no snapshot
    /// ([`EngineError::Unsupported`]): [`Engine::documents`], [`Engine::document`],
    /// [`Engine::stats`] and [`Engine::contents`] read either store.
    pub fn snapshot(&self) -> Result<Arc<Snapshot>, EngineError> {
        self.backend.snapshot()
    }

    /// Checks every file of the index ([`excerpt_index::verify`]): what is damaged and
    /// which documents cannot be read. Damage is in the report, not an error. A
    /// PostgreSQL index is [`EngineError::Unsupported`] (the database checks itself).
    pub fn verify(&self) -> Result<VerifyReport, EngineError> {
        self.backend.verify()
    }

    /// Repairs the index ([`excerpt_index::IndexWriter::repair`]): drops what cannot be read (naming
    /// the documents lost), rebuilds BM25 and the ANN files, and commits a consistent
    /// generation. When the manifest is damaged and no previous generation is on disk,
    /// the segments are read with this engine's model, chunker and headers (the model
    /// is loaded only then). A PostgreSQL index is [`EngineError::Unsupported`].
    pub fn repair(&self) -> Result<RepairReport, EngineError> {
        let fallback = || -> Option<IndexConfig> {
            let embedder = self.embedder().ok()?;
            Some(IndexConfig {
                model_id: embedder.model_id().to_string(),
                dimension: embedder.dimension(),
                chunker: self.options.chunker.unwrap_or_default(),
                headers: self.options.headers.unwrap_or(true),
                contextualizer: None,
                sentence_vectors: None,
            })
        };
        self.backend.repair(&fallback)
    }
}
