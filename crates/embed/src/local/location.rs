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
/// Fails with [`EmbedError::ModelLoad`] telling the user to run `excerpt setup` or to
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
            "model `{name}` not found (looked in {}); run `excerpt setup` (or \
             `excerpt model fetch`) to fetch the default model, or pass `--model DIR` with \
             a sentence-transformers model directory (set EXCERPT_HOME to change where \
             models are looked up)",
            models.display()
        ),
    })
}

/// A model pinned for fetching: its Hugging Face Hub repository, the commit to fetch
/// and the SHA-256 of the files that must match after fetching.
#[derive(Debug, Clone, Copy)]
pub struct PinnedModel {
    /// `owner/name` on the Hub.
    pub repo_id: &'static str,
    /// The commit fetched (never a branch, so the files cannot change underneath).
    pub revision: &'static str,
    /// The directory name under `<home>/models`.
    pub name: &'static str,
    /// `(file, SHA-256 in lowercase hex)` of every file checked.
    pub files: &'static [(&'static str, &'static str)],
    /// Files fetched too when the repository has them, not checked (small JSON
    /// settings [`crate::LocalEmbedder::load`] reads when present).
    pub optional: &'static [&'static str],
}

/// The default model as `excerpt model fetch` and `scripts/fetch-model.sh` install
/// it: the same file hashes in both.
pub const DEFAULT_MODEL: PinnedModel = PinnedModel {
    repo_id: "sentence-transformers/all-MiniLM-L6-v2",
    revision: "c9745ed1d9f207416be6d2e6f8de32d1f16199bf",
    name: DEFAULT_MODEL_NAME,
    files: &[
        (
            "model.safetensors",
            "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        ),
        (
            "tokenizer.json",
            "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        ),
        (
            "config.json",
            "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        ),
    ],
    optional: &[
        "sentence_bert_config.json",
        "1_Pooling/config.json",
        "modules.json",
    ],
};

/// Checks the SHA-256 of `model`'s pinned files in `dir`. Fails with
/// [`EmbedError::ModelLoad`] naming the first file that is missing or differs, with
/// the expected and the actual hash.
pub fn verify_model_files(dir: &Path, model: &PinnedModel) -> Result<(), EmbedError> {
    use sha2::{Digest, Sha256};
    for (file, expected) in model.files {
        let path = dir.join(file);
        let fail = |message: String| EmbedError::ModelLoad {
            path: path.display().to_string(),
            message,
        };
        let read_err = |e: std::io::Error| fail(format!("cannot read: {e}"));
        let mut reader = std::fs::File::open(&path).map_err(read_err)?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let got = std::io::Read::read(&mut reader, &mut buf).map_err(read_err)?;
            if got == 0 {
                break;
            }
            hasher.update(&buf[..got]);
        }
        let actual: String = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if actual != *expected {
            return Err(fail(format!(
                "SHA-256 mismatch for {} of {}@{}: expected {expected}, got {actual}",
                file, model.repo_id, model.revision
            )));
        }
    }
    Ok(())
}

/// Fetches [`DEFAULT_MODEL`] from the Hugging Face Hub at its pinned revision into
/// `<home>/models/all-MiniLM-L6-v2` and returns that directory. The files go to a
/// staging directory first; only when every pinned SHA-256 matches does it replace
/// the model directory, so a failed or tampered download leaves nothing behind. A
/// model already there whose files match is kept without any download.
#[cfg(feature = "hub")]
pub fn fetch_default_model() -> Result<PathBuf, EmbedError> {
    hub::fetch_pinned(&DEFAULT_MODEL, &models_dir())
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

    /// See [`super::fetch_default_model`].
    pub(super) fn fetch_pinned(
        model: &super::PinnedModel,
        models: &Path,
    ) -> Result<PathBuf, EmbedError> {
        let target = models.join(model.name);
        if super::verify_model_files(&target, model).is_ok() {
            return Ok(target);
        }
        let staging = models.join(format!("{}.partial", model.name));
        let fail = |message: String| EmbedError::ModelLoad {
            path: target.display().to_string(),
            message,
        };
        let _ = std::fs::remove_dir_all(&staging);
        let (owner, repo_name) = model
            .repo_id
            .split_once('/')
            .ok_or_else(|| fail(format!("`{}` is not an `owner/name` id", model.repo_id)))?;
        let client = hf_hub::HFClientSync::new().map_err(|e| fail(format!("hub client: {e}")))?;
        let repo = client.model(owner, repo_name);
        let result = (|| {
            let required = model.files.iter().map(|(f, _)| (*f, true));
            for (file, required) in required.chain(model.optional.iter().map(|f| (*f, false))) {
                let got = repo
                    .download_file()
                    .filename(file)
                    .revision(model.revision)
                    .local_dir(staging.clone())
                    .send();
                if let Err(e) = got {
                    if required {
                        return Err(fail(format!(
                            "download {file} from {}@{}: {e}",
                            model.repo_id, model.revision
                        )));
                    }
                }
            }
            super::verify_model_files(&staging, model)?;
            let _ = std::fs::remove_dir_all(&target);
            std::fs::rename(&staging, &target)
                .map_err(|e| fail(format!("cannot move the fetched model in place: {e}")))
        })();
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&staging);
        }
        result.map(|()| target)
    }

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

#[cfg(test)]
mod tests {
    use super::{verify_model_files, PinnedModel};

    #[test]
    fn model_files_are_checked_by_sha256() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.json"), b"abc").expect("write");
        // SHA-256 of "abc".
        const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        const A_JSON: &[(&str, &str)] = &[("a.json", ABC)];
        const MISSING: &[(&str, &str)] = &[("missing.json", ABC)];
        let abc = ABC;
        let model = |files: &'static [(&'static str, &'static str)]| PinnedModel {
            repo_id: "owner/name",
            revision: "0123abcd",
            name: "name",
            files,
            optional: &[],
        };
        verify_model_files(dir.path(), &model(A_JSON)).expect("matches");

        std::fs::write(dir.path().join("a.json"), b"abd").expect("write");
        let err = verify_model_files(dir.path(), &model(A_JSON))
            .expect_err("differs")
            .to_string();
        assert!(
            err.contains("SHA-256 mismatch for a.json of owner/name@0123abcd"),
            "{err}"
        );
        assert!(err.contains(&format!("expected {abc}, got ")), "{err}");

        let err = verify_model_files(dir.path(), &model(MISSING))
            .expect_err("missing")
            .to_string();
        assert!(
            err.contains("missing.json") && err.contains("cannot read"),
            "{err}"
        );
    }

    #[test]
    fn the_installed_default_model_matches_its_pins() {
        // The test model was installed by scripts/fetch-model.sh, which checks the
        // same hashes: both pin lists must agree with it.
        let dir = super::models_dir().join(super::DEFAULT_MODEL_NAME);
        verify_model_files(&dir, &super::DEFAULT_MODEL).expect("pinned hashes match");
        let script = include_str!("../../../../scripts/fetch-model.sh");
        for (file, sha) in super::DEFAULT_MODEL.files {
            assert!(
                script.contains(&format!("{sha}  {file}")),
                "{file} not pinned alike"
            );
        }
    }
}
