//! Commands: typed options from raw arguments, engine calls, rendering. One module per
//! command or family of commands; what they share is in `common`.

use std::process::ExitCode;

use anyhow::Result;

use crate::args::{Cli, Command};

mod ask;
mod common;
mod contents;
mod eval;
mod explain;
mod ingest;
mod maintenance;
mod pdf_worker;
mod query;
mod serve;
mod shell;

pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Ingest(a) => ingest::ingest(&cli.global, a),
        Command::Query(a) => query::query(&cli.global, a),
        Command::Ask(a) => ask::ask(&cli.global, a),
        Command::Docs(a) => contents::docs(&cli.global, a),
        Command::Rm { ids, prefix } => contents::rm(&cli.global, ids, prefix),
        Command::Stats(a) => contents::stats(&cli.global, a),
        Command::Verify(a) => maintenance::verify(&cli.global, a),
        Command::Repair(a) => maintenance::repair(&cli.global, a),
        Command::Eval(a) => eval::eval(&cli.global, a),
        Command::Bench(a) => crate::bench::run(a, cli.global.model.as_deref(), cli.global.quiet)
            .map(|()| ExitCode::SUCCESS),
        Command::Serve(a) => serve::serve(&cli.global, a),
        Command::Mcp(a) => serve::mcp(&cli.global, a),
        Command::Model(a) => crate::model::run(a, cli.global.quiet),
        Command::Setup(a) => crate::fetch::setup(a, cli.global.quiet),
        Command::Pdfium(a) => crate::fetch::pdfium(a, cli.global.quiet),
        Command::Completions(a) => shell::completions(a),
        Command::Man(a) => shell::man(a),
        Command::PdfWorker(a) => pdf_worker::pdf_worker(a),
    }
}
