//! The files of a local model directory: finding them, reading them, and the errors
//! that name them.

use std::path::{Path, PathBuf};

use excerpt_core::EmbedError;

/// What a model directory is expected to hold, for error messages and model ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModelKind {
    /// A sentence-transformers embedding model.
    SentenceTransformer,
    /// A BERT or XLM-RoBERTa sequence-classification model scoring (query, passage)
    /// pairs.
    CrossEncoder,
}

impl ModelKind {
    /// How the directory is called in messages.
    fn directory(self) -> &'static str {
        match self {
            Self::SentenceTransformer => "model directory",
            Self::CrossEncoder => "cross-encoder directory",
        }
    }

    /// What the directory should be, in messages.
    fn expected(self) -> &'static str {
        match self {
            Self::SentenceTransformer => "a sentence-transformers model",
            Self::CrossEncoder => {
                "a BertForSequenceClassification or XLMRobertaForSequenceClassification model"
            }
        }
    }

    /// The name used in a model id when the directory has none.
    fn fallback_name(self) -> &'static str {
        match self {
            Self::SentenceTransformer => "model",
            Self::CrossEncoder => "cross-encoder",
        }
    }
}

/// [`EmbedError::ModelLoad`] for `path`.
pub(crate) fn load_error(path: &Path, message: impl Into<String>) -> EmbedError {
    EmbedError::ModelLoad {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// `dir/name`, or [`EmbedError::ModelLoad`] saying which file is missing and what the
/// directory should hold.
pub(crate) fn require_file(dir: &Path, name: &str, kind: ModelKind) -> Result<PathBuf, EmbedError> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(load_error(
            &path,
            format!(
                "missing file `{name}` in {} {} (expected {} with config.json, \
                 model.safetensors and tokenizer.json)",
                kind.directory(),
                dir.display(),
                kind.expected(),
            ),
        ))
    }
}

/// Reads and parses a JSON file; `None` when it does not exist.
pub(crate) fn read_json_opt<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<Option<T>, EmbedError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(load_error(path, format!("cannot read: {e}"))),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| load_error(path, format!("malformed JSON: {e}")))
}

/// The languages a model card (`README.md` of a Hugging Face model directory) declares in
/// its front matter's `language` field, a code or a list of them (`language: en`, or
/// `language:` then `- de` lines), lower-cased; `None` when the card is missing or
/// unreadable, declares none, or declares `multilingual` (a list that long is as good as
/// none to act on).
pub(crate) fn card_languages(dir: &Path) -> Option<Vec<String>> {
    let card = std::fs::read_to_string(dir.join("README.md")).ok()?;
    front_matter_languages(&card)
}

/// [`card_languages`] of a card's text.
fn front_matter_languages(card: &str) -> Option<Vec<String>> {
    let mut lines = card.lines();
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    let mut out = Vec::new();
    let mut in_list = false;
    for line in lines {
        if line.trim_end() == "---" {
            break;
        }
        if in_list {
            match line.trim_start().strip_prefix("- ") {
                Some(item) if line.starts_with([' ', '-']) => {
                    out.push(item.trim().trim_matches(['"', '\'']).to_lowercase());
                    continue;
                }
                _ => in_list = false,
            }
        }
        if let Some(value) = line.strip_prefix("language:") {
            let value = value.trim();
            if value.is_empty() {
                in_list = true;
            } else if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                out.extend(
                    inner
                        .split(',')
                        .map(|v| v.trim().trim_matches(['"', '\'']).to_lowercase()),
                );
            } else {
                out.push(value.trim_matches(['"', '\'']).to_lowercase());
            }
        }
    }
    out.retain(|l| !l.is_empty());
    if out.is_empty() || out.iter().any(|l| l == "multilingual") {
        return None;
    }
    Some(out)
}

/// `<directory name>@<first 12 hex digits of hash>`: the directory's own name (after
/// resolving links) so a model keeps its id wherever it is referred to from.
pub(crate) fn model_id(dir: &Path, hash: &blake3::Hash, kind: ModelKind) -> String {
    let hex = hash.to_hex();
    let name = std::fs::canonicalize(dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| kind.fallback_name().to_string());
    format!("{name}@{}", &hex.as_str()[..12])
}

#[cfg(test)]
mod tests {
    use super::{front_matter_languages, model_id, require_file, ModelKind};

    #[test]
    fn model_cards_declare_their_languages() {
        let langs = |card: &str| front_matter_languages(card);
        assert_eq!(
            langs("---\nlanguage: en\nlicense: apache-2.0\n---\n# all-MiniLM-L6-v2"),
            Some(vec!["en".to_string()])
        );
        assert_eq!(
            langs("---\nlicense: mit\nlanguage:\n- de\n  - \"FR\"\ntags:\n- x\n---\n"),
            Some(vec!["de".to_string(), "fr".to_string()])
        );
        assert_eq!(
            langs("---\nlanguage: [en, 'zh']\n---\n"),
            Some(vec!["en".to_string(), "zh".to_string()])
        );
        // Multilingual, none, no front matter, or `language` outside it: nothing to act on.
        assert_eq!(langs("---\nlanguage:\n- multilingual\n- af\n---\n"), None);
        assert_eq!(langs("---\nlicense: mit\n---\nlanguage: en\n"), None);
        assert_eq!(langs("# A model\nlanguage: en\n"), None);
        assert_eq!(langs(""), None);
    }

    #[test]
    fn missing_files_name_the_file_and_the_expected_model() {
        let dir = std::env::temp_dir();
        let name = "surely-not-here.json";
        let message = |kind| match require_file(&dir, name, kind) {
            Err(excerpt_core::EmbedError::ModelLoad { message, .. }) => message,
            other => panic!("expected ModelLoad, got {other:?}"),
        };
        let st = message(ModelKind::SentenceTransformer);
        assert!(st.contains("missing file `surely-not-here.json` in model directory"));
        assert!(st.contains("(expected a sentence-transformers model with config.json"));
        let ce = message(ModelKind::CrossEncoder);
        assert!(ce.contains("in cross-encoder directory"));
        assert!(ce.contains(
            "(expected a BertForSequenceClassification or \
             XLMRobertaForSequenceClassification model with"
        ));
    }

    #[test]
    fn model_ids_are_the_directory_name_and_twelve_hex_digits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let model = dir.path().join("tiny-model");
        std::fs::create_dir(&model).expect("mkdir");
        let hash = blake3::hash(b"weights");
        let id = model_id(&model, &hash, ModelKind::CrossEncoder);
        assert_eq!(id, format!("tiny-model@{}", &hash.to_hex()[..12]));
    }
}
