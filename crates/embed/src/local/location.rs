//! Where models live on disk, and how a `--model` value maps to a directory.

use std::path::{Path, PathBuf};

use excerpt_core::EmbedError;

/// Name of the default local model, looked up under `<home>/models/`.
pub const DEFAULT_MODEL_NAME: &str = "all-MiniLM-L6-v2";

/// Excerpt's home directory: `$EXCERPT_HOME` if set and non-empty, otherwise
/// `<user cache dir>/excerpt` (e.g. `~/.cache/excerpt` on Linux), falling back to
/// `./.excerpt` when the platform has no cache directory.
pub fn default_home() -> PathBuf {
    match std::env::var_os("EXCERPT_HOME") {
        Some(home) if !home.is_empty() => PathBuf::from(home),
        _ => dirs::cache_dir()
            .map(|d| d.join("excerpt"))
            .unwrap_or_else(|| PathBuf::from(".excerpt")),
    }
}

/// The directory holding named models: `<home>/models`.
pub fn models_dir() -> PathBuf {
    default_home().join("models")
}

/// Resolves a model specification to a model directory.
///
/// - `None`: the default model, `<home>/models/all-MiniLM-L6-v2`;
/// - a path to an existing directory: that directory;
/// - otherwise a model name, looked up as `<home>/models/<name>`.
///
/// Fails with [`EmbedError::ModelLoad`] telling the user to run `scripts/setup.sh` or to
/// pass `--model DIR` when nothing is found. It only checks that the directory exists;
/// [`crate::LocalEmbedder::load`] reports missing files.
pub fn resolve_model(spec: Option<&str>) -> Result<PathBuf, EmbedError> {
    let models = models_dir();
    let spec = spec.map(str::trim).filter(|s| !s.is_empty());
    let candidate = match spec {
        None => models.join(DEFAULT_MODEL_NAME),
        Some(s) => {
            let as_path = Path::new(s);
            if as_path.is_dir() {
                return Ok(as_path.to_path_buf());
            }
            models.join(s)
        }
    };
    if candidate.is_dir() {
        return Ok(candidate);
    }
    let name = spec.unwrap_or(DEFAULT_MODEL_NAME);
    Err(EmbedError::ModelLoad {
        path: candidate.display().to_string(),
        message: format!(
            "model `{name}` not found (looked in {}); run `scripts/setup.sh` to fetch the \
             default model, or pass `--model DIR` with a sentence-transformers model \
             directory (set EXCERPT_HOME to change where models are looked up)",
            models.display()
        ),
    })
}

/// Downloads a sentence-transformers model from the Hugging Face Hub into
/// `<home>/models/<name>`, where `<name>` is the part of `repo_id` after the last `/`,
/// and returns that directory. Files already present are not fetched again.
///
/// Fetches the files [`crate::LocalEmbedder::load`] reads; the optional ones
/// (`1_Pooling/config.json`, `sentence_bert_config.json`) are skipped when the
/// repository lacks them.
#[cfg(feature = "hub")]
pub fn download_model(repo_id: &str) -> Result<PathBuf, EmbedError> {
    hub::download(repo_id, &models_dir())
}

#[cfg(feature = "hub")]
mod hub {
    use std::path::{Path, PathBuf};

    use excerpt_core::EmbedError;

    const REQUIRED: [&str; 3] = ["config.json", "model.safetensors", "tokenizer.json"];
    const OPTIONAL: [&str; 3] = [
        "sentence_bert_config.json",
        "1_Pooling/config.json",
        "modules.json",
    ];

    pub(super) fn download(repo_id: &str, models: &Path) -> Result<PathBuf, EmbedError> {
        let name = repo_id.rsplit('/').next().unwrap_or(repo_id);
        let target = models.join(name);
        let fail = |message: String| EmbedError::ModelLoad {
            path: target.display().to_string(),
            message,
        };
        let (owner, repo_name) = repo_id
            .split_once('/')
            .ok_or_else(|| fail(format!("`{repo_id}` is not an `owner/name` repository id")))?;
        let client = hf_hub::HFClientSync::new().map_err(|e| fail(format!("hub client: {e}")))?;
        let repo = client.model(owner, repo_name);
        for (file, required) in REQUIRED
            .iter()
            .map(|f| (*f, true))
            .chain(OPTIONAL.iter().map(|f| (*f, false)))
        {
            if target.join(file).is_file() {
                continue;
            }
            let result = repo
                .download_file()
                .filename(file)
                .local_dir(target.clone())
                .send();
            match result {
                Ok(_) => {}
                Err(e) if required => {
                    return Err(fail(format!("download {file} from {repo_id}: {e}")))
                }
                Err(_) => {}
            }
        }
        Ok(target)
    }
}
