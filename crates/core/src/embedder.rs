/// Turns texts into unit vectors. Implementations: the local BERT-family model and the
/// OpenAI-compatible remote client in `excerpt-embed`; users may bring their own.
pub trait Embedder: Send + Sync {
    /// A stable identifier of the model (name and a hash of its weights, or the remote
    /// model name). Stored in the index: vectors of different models never mix.
    fn model_id(&self) -> &str;

    /// Length of every vector.
    fn dimension(&self) -> usize;

    /// Embeds passages: one L2-normalised vector per text, in order. Texts longer than
    /// the model's limit are truncated by the model.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// Embeds a query. Defaults to [`Embedder::embed`] of one text; models that expect a
    /// query prefix override it.
    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = self.embed(&[query])?;
        v.pop().ok_or_else(|| EmbedError::Inference {
            message: "embedder returned no vector".into(),
        })
    }

    /// The languages the model was trained to read, as codes (`en`), when it says so (a
    /// local model's card: the `language` of its `README.md`); `None` when unknown or
    /// multilingual. Hybrid retrieval weights the dense list down for a query in
    /// another language (`excerpt-retrieve`'s stage).
    fn languages(&self) -> Option<&[String]> {
        None
    }

    /// The model's tokenizer, when it is local: the chunker budgets chunks in its tokens.
    fn token_counter(&self) -> Option<&dyn TokenCounter> {
        None
    }

    /// Late chunking: runs each text through the model as [`Embedder::embed`] does,
    /// giving its vector as `embed` would, and for each of its byte spans (`spans[i]`
    /// for `texts[i]`) the final vectors of the tokens that overlap the span added up
    /// (special tokens and tokens cut by truncation excepted). The vectors come from the
    /// whole text's forward pass, so a span's vector reads its words in the context of
    /// the text around them, and the text's own vector costs no second pass. `None` when
    /// the embedder has no token vectors to give (a remote endpoint).
    fn pool_spans(
        &self,
        texts: &[&str],
        spans: &[Vec<(usize, usize)>],
    ) -> Result<Option<Vec<Pooled>>, EmbedError> {
        let _ = (texts, spans);
        Ok(None)
    }
}

/// One text's vector and its spans' pools ([`Embedder::pool_spans`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Pooled {
    /// The text's vector, as [`Embedder::embed`] gives it.
    pub vector: Vec<f32>,
    /// One pool per span asked for, in order.
    pub spans: Vec<SpanPool>,
}

/// The token vectors of one span added up ([`Embedder::pool_spans`]): divide by `tokens`
/// for their mean, or add the pools of one span's pieces from several texts first.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanPool {
    /// The sum of the tokens' final vectors (the model's dimension).
    pub sum: Vec<f32>,
    /// How many tokens were added (0: the span holds no token, `sum` is zeros).
    pub tokens: u32,
}

/// Counts tokens of a model's tokenizer.
pub trait TokenCounter: Send + Sync {
    /// Byte ranges in `text` of each token, special tokens excluded, never truncated.
    fn token_spans(&self, text: &str) -> Vec<(usize, usize)>;

    /// Tokens a sequence may hold, special tokens included (256 for all-MiniLM-L6-v2).
    fn max_sequence_tokens(&self) -> usize;

    /// Special tokens the model adds around one sequence (`[CLS]` and `[SEP]` for BERT).
    fn special_tokens(&self) -> usize {
        2
    }

    /// Number of tokens of `text`, special tokens excluded.
    fn count(&self, text: &str) -> usize {
        self.token_spans(text).len()
    }
}

/// Why embedding failed, grouped by whose fault it is.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model directory or its files are missing or malformed (the user's to fix).
    #[error("cannot load model from {path}: {message}")]
    ModelLoad {
        /// The model directory or file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A remote endpoint refused or failed the request after retries.
    #[error("{endpoint} endpoint {url} failed: {message}")]
    Remote {
        /// Which kind of endpoint failed.
        endpoint: RemoteEndpoint,
        /// The endpoint.
        url: String,
        /// HTTP status, if there was a response.
        status: Option<u16>,
        /// What happened.
        message: String,
    },
    /// The model failed while running (a bug or resource exhaustion).
    #[error("embedding failed: {message}")]
    Inference {
        /// What happened.
        message: String,
    },
}

/// The kinds of remote endpoint the clients call, named in [`EmbedError::Remote`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteEndpoint {
    /// OpenAI-compatible `/v1/embeddings`.
    Embedding,
    /// OpenAI-compatible `/v1/chat/completions`.
    Chat,
    /// A `/rerank` API (Cohere, Jina, TEI and compatible servers).
    Rerank,
}

impl std::fmt::Display for RemoteEndpoint {
    /// `embedding`, `chat` or `rerank`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Embedding => "embedding",
            Self::Chat => "chat",
            Self::Rerank => "rerank",
        })
    }
}

impl EmbedError {
    /// Whose fault it is: a model that cannot be loaded or fails while running is the
    /// system's ([`crate::ErrorKind::Internal`]); an endpoint that failed is
    /// [`crate::ErrorKind::Unavailable`].
    pub fn kind(&self) -> crate::ErrorKind {
        match self {
            EmbedError::ModelLoad { .. } | EmbedError::Inference { .. } => {
                crate::ErrorKind::Internal
            }
            EmbedError::Remote { .. } => crate::ErrorKind::Unavailable,
        }
    }
}
