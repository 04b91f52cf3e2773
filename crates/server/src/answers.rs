//! The answers of `POST /v1/query`: their schemas.

use excerpt::{Context, ContextJson};
use serde::Serialize;
use utoipa::ToSchema;

/// The answer of `POST /v1/query` with `format: "json"`: the context as `excerpt query
/// --format json` prints it.
#[derive(Debug, ToSchema)]
pub(crate) struct ContextAnswer {
    /// The query text.
    query: String,
    /// The context.
    #[serde(flatten)]
    context: Context,
    /// The best hits explained, when the body asked (`explain`).
    // In the schema only: the handler writes `excerpt::explained_value`.
    #[allow(dead_code)]
    #[schema(nullable = false)]
    explain: Option<Vec<excerpt::ExplainedHit>>,
}

/// Serialized as [`ContextJson`], like the CLI's output, so the numbers are spelled the
/// same way (its scores are `f32`s widened to `f64`); the handler writes the same bytes
/// with [`excerpt::context_json`].
impl Serialize for ContextAnswer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ContextJson {
            query: &self.query,
            context: &self.context,
        }
        .serialize(s)
    }
}

/// The answer of `POST /v1/query` with `format` `text` or `markdown`: the rendering.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RenderedContext {
    /// The query text.
    pub(crate) query: String,
    /// `text` or `markdown`.
    pub(crate) format: String,
    /// The strategy that assembled the context.
    pub(crate) strategy: String,
    /// The token budget asked for.
    pub(crate) budget: usize,
    /// LLM tokens of all pieces.
    pub(crate) tokens: usize,
    /// The rendered context.
    pub(crate) context: String,
}

/// The answer of `POST /v1/query`: a context, or its rendering.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub(crate) enum QueryAnswer {
    /// `format: "json"` (the default).
    // The handler writes this variant's bytes itself (`context_json`); the variant
    // stays for the API's schema.
    #[allow(dead_code)]
    Context(ContextAnswer),
    /// `format: "text"` or `"markdown"`.
    Rendered(RenderedContext),
}
