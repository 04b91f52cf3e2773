//! Model location. These tests never change EXCERPT_HOME (the process environment is
//! shared by all tests of the binary); they use explicit directories instead.

use excerpt_embed::{default_home, models_dir, resolve_model, EmbedError, DEFAULT_MODEL_NAME};

#[test]
fn default_model_resolves_under_home() {
    let dir = resolve_model(None)
        .unwrap_or_else(|e| panic!("the test model is missing ({e}); run scripts/setup.sh"));
    assert_eq!(dir, models_dir().join(DEFAULT_MODEL_NAME));
    assert_eq!(models_dir(), default_home().join("models"));
    // By name, too.
    assert_eq!(
        resolve_model(Some(DEFAULT_MODEL_NAME)).expect("by name"),
        dir
    );
}

#[test]
fn existing_directory_resolves_to_itself() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().to_str().expect("utf-8 temp path");
    assert_eq!(resolve_model(Some(p)).expect("dir"), tmp.path());
}

#[test]
fn unknown_model_explains_how_to_fix() {
    let err = resolve_model(Some("no-such-model-xyz")).expect_err("missing");
    match &err {
        EmbedError::ModelLoad { path, message } => {
            assert!(path.ends_with("no-such-model-xyz"), "{path}");
            assert!(message.contains("excerpt model fetch"), "{message}");
            assert!(message.contains("--model DIR"), "{message}");
        }
        other => panic!("unexpected {other:?}"),
    }
}
