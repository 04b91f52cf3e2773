//! `excerpt completions` and `excerpt man`: clap's companions.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;

use crate::args::{Cli, CompletionsArgs, ManArgs};

/// `excerpt completions SHELL`: the completion script on stdout.
pub(super) fn completions(a: CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "excerpt", &mut out);
    std::io::stdout().lock().write_all(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// `excerpt man`: excerpt.1 on stdout, or with --dir one page per command written there.
pub(super) fn man(a: ManArgs) -> Result<ExitCode> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    cmd.build();
    let Some(dir) = a.dir else {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        std::io::stdout().lock().write_all(&out)?;
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let mut pages = vec![("excerpt".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("excerpt-{}", sub.get_name());
        pages.push((name.clone(), sub.clone().display_name(name)));
    }
    let mut stdout = std::io::stdout().lock();
    for (name, page) in pages {
        let path = dir.join(format!("{name}.1"));
        let mut out = Vec::new();
        clap_mangen::Man::new(page).render(&mut out)?;
        std::fs::write(&path, out)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        writeln!(stdout, "{}", path.display())?;
    }
    Ok(ExitCode::SUCCESS)
}
