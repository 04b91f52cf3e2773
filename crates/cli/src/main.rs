//! The `excerpt` command. Thin: parses arguments into typed options, calls the
//! [`excerpt::Engine`], renders. Exit codes: 0 success, 1 error, 2 usage error,
//! 3 nothing could be ingested, 4 not found (no index, unknown document id),
//! 5 `excerpt verify` found damage, 6 an unsupported citation under `ask --strict`,
//! 130 an ingest stopped by Ctrl-C after committing what it had embedded.

#![forbid(unsafe_code)]

use std::process::ExitCode;

mod args;
mod bench;
mod commands;
mod fetch;
mod model;
mod outcome;
mod progress;
mod terminal;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = args::parse();
    match commands::run(cli) {
        Ok(code) => code,
        // Stdout closed under us (`| head`): stop quietly, as other Unix tools do.
        Err(e) if outcome::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // Messages quote ids, paths and server replies: escaped for the terminal.
            eprintln!("error: {}", terminal::terminal_safe(&outcome::message(&e)));
            ExitCode::from(outcome::exit_code(&e))
        }
    }
}
