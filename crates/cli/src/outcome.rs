//! How a command ends: exit codes, the marker error that carries one, and the message
//! printed after `error: ` with the hint naming the flags that fix it.

use excerpt::{EngineError, ErrorKind, IndexError, RetrieveError};
use excerpt_eval::EvalError;

/// Exit code for a usage error (clap uses it for the errors it finds).
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit code for "nothing could be ingested".
pub(crate) const EXIT_NOTHING_INGESTED: u8 = 3;
/// Exit code for "not found" (no index, unknown document).
pub(crate) const EXIT_NOT_FOUND: u8 = 4;
/// Exit code of `excerpt verify` when the index is damaged.
pub(crate) const EXIT_DAMAGED: u8 = 5;
/// Exit code of `ask --strict` when a citation is unsupported.
pub(crate) const EXIT_UNSUPPORTED: u8 = 6;
/// Exit status of an ingest stopped by Ctrl-C (128 + SIGINT, as shells report it).
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

/// Marker error: exit with a given code after the message.
#[derive(Debug)]
pub(crate) struct Exit(pub(crate) u8, pub(crate) String);
impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.1)
    }
}
impl std::error::Error for Exit {}

/// The exit code of a failed command: the marker's own, else the one of the error's
/// [`ErrorKind`] (1 for errors that report none).
pub fn exit_code(e: &anyhow::Error) -> u8 {
    if let Some(Exit(code, _)) = e.downcast_ref::<Exit>() {
        return *code;
    }
    match error_kind(e) {
        Some(ErrorKind::NotFound) => EXIT_NOT_FOUND,
        Some(
            ErrorKind::BadInput
            | ErrorKind::Conflict
            | ErrorKind::Unavailable
            | ErrorKind::Internal,
        )
        | None => 1,
    }
}

/// Whether the command failed because stdout was closed under it (`excerpt query ... |
/// head`): like other Unix tools, the command then stops quietly.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The kind of a library error the command failed with.
fn error_kind(e: &anyhow::Error) -> Option<ErrorKind> {
    if let Some(e) = e.downcast_ref::<EngineError>() {
        return Some(e.kind());
    }
    e.downcast_ref::<EvalError>().map(EvalError::kind)
}

/// What the command prints after `error: `: the error's chain, then a hint naming the
/// flags that fix it when there is one (library messages name no flags, since the
/// server shows them to HTTP clients).
pub fn message(e: &anyhow::Error) -> String {
    let engine = match e.downcast_ref::<EvalError>() {
        Some(EvalError::Engine(inner)) => Some(inner),
        Some(EvalError::ForeignDocuments { .. }) => {
            return format!("{e:#}: evaluate with a fresh --index directory")
        }
        _ => e.downcast_ref::<EngineError>(),
    };
    let hint = engine.and_then(flag_hint).unwrap_or_default();
    format!("{}{hint}", chain(e))
}

/// The error and its causes joined by `: `, leaving out a cause whose text the message
/// before it already ends with (errors that print their source themselves).
fn chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// The flags that fix an engine error, for the errors some flag fixes.
fn flag_hint(e: &EngineError) -> Option<String> {
    let index = |e: &IndexError| match e {
        IndexError::NotFound { .. } => Some(": run `excerpt ingest` first (or pass --index DIR)"),
        IndexError::ConfigMismatch { .. } => Some("; use another --index directory or rebuild"),
        IndexError::Format { .. } => Some(
            ": use the excerpt version that wrote it, or re-ingest into a new --index directory",
        ),
        IndexError::Corrupt { .. } => {
            Some("; run `excerpt verify` to see what is damaged, `excerpt repair` to fix it")
        }
        _ => None,
    };
    let hint = match e {
        EngineError::Index(i) | EngineError::Retrieve(RetrieveError::Index(i)) => {
            index(i)?.to_string()
        }
        EngineError::Retrieve(RetrieveError::ModelMismatch { .. }) => {
            "; pass the same --model (or use --mode bm25)".into()
        }
        EngineError::Retrieve(RetrieveError::NoReranker) => {
            " (--reranker DIR or --rerank-url URL)".into()
        }
        EngineError::ContextsRequired { model, .. } => format!(
            "; ingest into it with --contextualize --llm-url URL --llm-model {model}, or use another --index"
        ),
        EngineError::ContextsRefused { .. } => ": ingest into a new --index".into(),
        EngineError::ContextualizerMismatch { model, .. } => {
            format!(": pass --llm-model {model} or use a new --index")
        }
        _ => return None,
    };
    Some(hint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn no_index() -> EngineError {
        EngineError::Index(IndexError::NotFound {
            dir: PathBuf::from("idx"),
        })
    }

    #[test]
    fn hints_name_the_flags_the_library_leaves_out() {
        let e = anyhow::Error::from(no_index());
        assert_eq!(
            message(&e),
            "no index at idx: run `excerpt ingest` first (or pass --index DIR)"
        );
        assert_eq!(exit_code(&e), EXIT_NOT_FOUND);
        let e = anyhow::Error::from(EngineError::Retrieve(RetrieveError::ModelMismatch {
            index: "a".into(),
            configured: "b".into(),
        }));
        assert_eq!(
            message(&e),
            "the index was built with model a, but the configured model is b; pass the same \
             --model (or use --mode bm25)"
        );
        assert_eq!(exit_code(&e), 1);
        let e = anyhow::Error::from(EngineError::Retrieve(RetrieveError::NoReranker));
        assert_eq!(
            message(&e),
            "reranking was asked for but no reranker is configured (--reranker DIR or \
             --rerank-url URL)"
        );
        // Errors without a flag to suggest print as they are.
        let e = anyhow::Error::from(EngineError::BadRequest("the query is odd".into()));
        assert_eq!(message(&e), "the query is odd");
    }

    #[test]
    fn eval_errors_get_the_same_codes_and_hints() {
        let e = anyhow::Error::from(EvalError::Engine(no_index()));
        assert!(
            message(&e).ends_with("(or pass --index DIR)"),
            "{}",
            message(&e)
        );
        assert_eq!(exit_code(&e), EXIT_NOT_FOUND);
        let e = anyhow::Error::from(EvalError::ForeignDocuments {
            index: PathBuf::from("idx"),
            count: 2,
            sample: "a, b".into(),
        });
        assert_eq!(
            message(&e),
            "the index idx holds 2 documents that are not in the corpus (a, b): evaluate with \
             a fresh --index directory"
        );
        assert_eq!(exit_code(&e), 1);
        let e = anyhow::Error::from(EvalError::Invalid("no queries".into()));
        assert_eq!((message(&e).as_str(), exit_code(&e)), ("no queries", 1));
    }
}
