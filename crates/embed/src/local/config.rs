//! `config.json` of a BERT model, as Hugging Face `transformers` writes it.

use serde::Deserialize;

/// The feed-forward activation named by `hidden_act`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HiddenAct {
    /// `gelu`: the exact (erf) GELU.
    Gelu,
    /// `geluapproximate`: the tanh approximation of GELU.
    GeluApproximate,
    /// `relu`.
    Relu,
}

/// `position_embedding_type`: only learned absolute positions are supported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PositionEmbeddingType {
    /// One learned vector per position (`absolute`, the default).
    #[default]
    Absolute,
}

/// The `model_type` values our forward pass runs (a model of another family, such as
/// MPNet with its relative attention bias, would run wrongly, so it is refused).
pub(crate) const SUPPORTED_MODEL_TYPES: [&str; 3] = ["bert", "xlm-roberta", "roberta"];

/// The encoder families our forward pass runs: they differ only in how tokens are
/// numbered into the position table and whether segment ids are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// BERT: positions count from 0, segment (token type) ids as the tokenizer gives.
    Bert,
    /// RoBERTa and XLM-RoBERTa: positions count from `pad_token_id + 1` (the padding
    /// row sits below them), every token has segment 0 (their tokenizers give no type
    /// ids to the model), weights under `roberta.` in task models.
    Roberta,
}

impl Family {
    /// The family a supported `model_type` names (none: BERT, as hand-written BERT
    /// configs often omit it); `None` for any other value.
    pub(crate) fn of(model_type: Option<&str>) -> Option<Self> {
        match model_type {
            None | Some("bert") => Some(Self::Bert),
            Some("xlm-roberta") | Some("roberta") => Some(Self::Roberta),
            Some(_) => None,
        }
    }

    /// The prefix task models (sequence classification) put before the encoder's
    /// tensor names.
    pub(crate) fn task_prefix(self) -> &'static str {
        match self {
            Self::Bert => "bert.",
            Self::Roberta => "roberta.",
        }
    }
}

/// The family a `config.json` names, read before the full config so that a model of
/// another family is refused by name rather than by a missing key or run wrongly.
#[derive(Debug, Deserialize)]
pub(crate) struct ModelFamily {
    /// `bert`, `xlm-roberta`, `mpnet`, ...; absent in some hand-written configs.
    #[serde(default)]
    model_type: Option<String>,
}

impl ModelFamily {
    /// Why the model cannot run, naming what is supported; `None` when its
    /// `model_type` is supported or absent.
    pub(crate) fn unsupported(&self) -> Option<String> {
        let model_type = self.model_type.as_deref()?;
        if Family::of(Some(model_type)).is_some() {
            return None;
        }
        Some(format!(
            "model_type `{model_type}` is not supported: the local models run BERT and \
             XLM-RoBERTa encoders only (model_type {}, e.g. all-MiniLM-L6-v2, \
             multilingual-e5-small, bge-m3)",
            SUPPORTED_MODEL_TYPES
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// A BERT `config.json`.
///
/// The required keys are those every BERT config written by `transformers` carries;
/// a config missing one, or naming another activation or position embedding type, is
/// refused. Unknown keys are ignored. Some required keys only matter for training
/// (dropout, initialisation) and are read but not used.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct BertConfig {
    /// Rows of the word embedding table.
    pub(crate) vocab_size: usize,
    /// Width of the token vectors.
    pub(crate) hidden_size: usize,
    /// Encoder layers.
    pub(crate) num_hidden_layers: usize,
    /// Attention heads per layer (`hidden_size` must be a multiple of it).
    pub(crate) num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub(crate) intermediate_size: usize,
    /// The feed-forward activation.
    pub(crate) hidden_act: HiddenAct,
    /// Training only.
    #[allow(dead_code)]
    pub(crate) hidden_dropout_prob: f64,
    /// Rows of the position embedding table: the longest sequence the model reads.
    pub(crate) max_position_embeddings: usize,
    /// Rows of the token type (segment) embedding table.
    pub(crate) type_vocab_size: usize,
    /// Training only.
    #[allow(dead_code)]
    pub(crate) initializer_range: f64,
    /// The `ε` added to the variance in every layer norm.
    pub(crate) layer_norm_eps: f64,
    /// Token id used for padding.
    pub(crate) pad_token_id: usize,
    /// Must be `absolute` when present.
    #[serde(default)]
    #[allow(dead_code)]
    pub(crate) position_embedding_type: PositionEmbeddingType,
    /// Generation only.
    #[serde(default)]
    #[allow(dead_code)]
    pub(crate) use_cache: bool,
    /// Training only.
    #[allow(dead_code)]
    pub(crate) classifier_dropout: Option<f64>,
    /// `bert`, `xlm-roberta` or `roberta`, when given (checked by [`ModelFamily`]).
    pub(crate) model_type: Option<String>,
}

impl BertConfig {
    /// The encoder family `model_type` names; an unsupported one is an error naming it
    /// (the loaders check [`ModelFamily`] first, so this is a second guard).
    pub(crate) fn family(&self) -> Result<Family, String> {
        Family::of(self.model_type.as_deref()).ok_or_else(|| {
            format!(
                "model_type `{}` is not supported",
                self.model_type.as_deref().unwrap_or_default()
            )
        })
    }

    /// The first row of the position table a sequence uses: 0 for BERT,
    /// `pad_token_id + 1` for the RoBERTa family.
    pub(crate) fn position_offset(&self) -> Result<usize, String> {
        Ok(match self.family()? {
            Family::Bert => 0,
            Family::Roberta => self.pad_token_id + 1,
        })
    }

    /// The longest sequence the position table holds, special tokens included:
    /// `max_position_embeddings` less the rows below the first position (514 - 2 = 512
    /// for XLM-RoBERTa).
    pub(crate) fn max_tokens(&self) -> Result<usize, String> {
        let offset = self.position_offset()?;
        Ok(self.max_position_embeddings.saturating_sub(offset))
    }
}

#[cfg(test)]
mod tests {
    use super::{BertConfig, Family, HiddenAct, ModelFamily};

    fn minilm() -> serde_json::Value {
        serde_json::json!({
            "architectures": ["BertModel"],
            "attention_probs_dropout_prob": 0.1,
            "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1,
            "hidden_size": 384,
            "initializer_range": 0.02,
            "intermediate_size": 1536,
            "layer_norm_eps": 1e-12,
            "max_position_embeddings": 512,
            "model_type": "bert",
            "num_attention_heads": 12,
            "num_hidden_layers": 6,
            "pad_token_id": 0,
            "position_embedding_type": "absolute",
            "transformers_version": "4.8.2",
            "type_vocab_size": 2,
            "use_cache": true,
            "vocab_size": 30522
        })
    }

    #[test]
    fn reads_a_sentence_transformers_config() {
        let c: BertConfig = serde_json::from_value(minilm()).expect("config");
        assert_eq!(
            (c.vocab_size, c.hidden_size, c.num_hidden_layers),
            (30522, 384, 6)
        );
        assert_eq!((c.num_attention_heads, c.intermediate_size), (12, 1536));
        assert_eq!(c.hidden_act, HiddenAct::Gelu);
        assert_eq!((c.max_position_embeddings, c.type_vocab_size), (512, 2));
        assert_eq!((c.layer_norm_eps, c.pad_token_id), (1e-12, 0));
    }

    #[test]
    fn refuses_missing_keys_and_unknown_activations() {
        let mut v = minilm();
        v.as_object_mut().map(|o| o.remove("initializer_range"));
        let err = serde_json::from_value::<BertConfig>(v).expect_err("missing key");
        assert!(err.to_string().contains("initializer_range"), "{err}");

        let mut v = minilm();
        v["hidden_act"] = "gelu_new".into();
        let err = serde_json::from_value::<BertConfig>(v).expect_err("activation");
        assert!(err.to_string().contains("gelu_new"), "{err}");

        let mut v = minilm();
        v["position_embedding_type"] = "relative_key".into();
        assert!(serde_json::from_value::<BertConfig>(v).is_err());
    }

    #[test]
    fn other_model_families_are_named_and_refused() {
        let family =
            |v: serde_json::Value| -> ModelFamily { serde_json::from_value(v).expect("family") };
        assert_eq!(family(minilm()).unsupported(), None);
        assert_eq!(family(serde_json::json!({})).unsupported(), None);
        let mut v = minilm();
        v["model_type"] = "mpnet".into();
        let message = family(v).unsupported().expect("refused");
        assert!(
            message.contains("model_type `mpnet` is not supported"),
            "{message}"
        );
        assert!(
            message.contains("model_type `bert`, `xlm-roberta`, `roberta`"),
            "{message}"
        );
        for supported in ["bert", "xlm-roberta", "roberta"] {
            let mut v = minilm();
            v["model_type"] = supported.into();
            assert_eq!(family(v).unsupported(), None, "{supported}");
        }
    }

    /// multilingual-e5-small's `config.json`, as `transformers` writes it.
    fn e5_small() -> serde_json::Value {
        serde_json::json!({
            "architectures": ["XLMRobertaModel"],
            "attention_probs_dropout_prob": 0.1,
            "bos_token_id": 0,
            "classifier_dropout": null,
            "eos_token_id": 2,
            "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1,
            "hidden_size": 384,
            "initializer_range": 0.02,
            "intermediate_size": 1536,
            "layer_norm_eps": 1e-12,
            "max_position_embeddings": 514,
            "model_type": "xlm-roberta",
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "pad_token_id": 1,
            "position_embedding_type": "absolute",
            "type_vocab_size": 1,
            "use_cache": true,
            "vocab_size": 250037
        })
    }

    #[test]
    fn xlm_roberta_positions_start_after_the_padding_row() {
        let c: BertConfig = serde_json::from_value(e5_small()).expect("config");
        assert_eq!(c.family(), Ok(Family::Roberta));
        assert_eq!(c.position_offset(), Ok(2));
        assert_eq!(c.max_tokens(), Ok(512));
        assert_eq!(Family::Roberta.task_prefix(), "roberta.");

        let c: BertConfig = serde_json::from_value(minilm()).expect("config");
        assert_eq!(c.family(), Ok(Family::Bert));
        assert_eq!((c.position_offset(), c.max_tokens()), (Ok(0), Ok(512)));

        let mut v = minilm();
        v["model_type"] = "mpnet".into();
        let c: BertConfig = serde_json::from_value(v).expect("config");
        assert!(c.family().expect_err("refused").contains("mpnet"));
    }
}
