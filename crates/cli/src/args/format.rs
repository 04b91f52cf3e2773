//! Output formats: `--format` and `--json` of the commands that print a report
//! ([`FormatArgs`], [`PlainFormat`]) and the choice between them and `EXCERPT_FORMAT`
//! ([`output_format`]).

use clap::{Args, ValueEnum};

use super::deprecation_note;

/// `--format text|json` and its alias `--json`, for the commands that print a report.
#[derive(Debug, Args)]
pub struct FormatArgs {
    /// Output format [default: text; env: EXCERPT_FORMAT].
    #[arg(long, short, value_enum)]
    pub format: Option<PlainFormat>,
    /// The same as --format json.
    #[arg(long)]
    pub json: bool,
}

impl FormatArgs {
    /// Whether the command prints JSON ([`output_format`]); a bad EXCERPT_FORMAT is a
    /// usage error.
    pub fn is_json(&self) -> anyhow::Result<bool> {
        output_format(
            self.json,
            self.format,
            PlainFormat::Json,
            PlainFormat::Text,
            &[],
        )
        .map(|f| f == PlainFormat::Json)
        .map_err(usage)
    }
}

/// A usage error (exit status 2) with this message.
pub fn usage(message: String) -> anyhow::Error {
    crate::outcome::Exit(crate::outcome::EXIT_USAGE, message).into()
}

/// Output of the commands that print a report (`docs`, `stats`, `verify`, `repair`,
/// `ingest`, `bench`, `eval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlainFormat {
    /// For people.
    Text,
    /// One JSON value.
    Json,
}

/// The environment variable `--format` falls back on, whichever the command.
pub const FORMAT_ENV: &str = "EXCERPT_FORMAT";

/// The output format a command prints: `--json`, else `--format`, else the first of
/// `EXCERPT_FORMAT` and the command's old variables (`deprecated`, with a note on
/// stderr when used) that holds a format the command prints, else text. A variable may
/// hold a format only other commands print (`EXCERPT_FORMAT=markdown` is for `query`):
/// such a value is passed over. A value no command prints is a usage error.
pub fn output_format<F: ValueEnum + Copy>(
    json: bool,
    format: Option<F>,
    json_format: F,
    text_format: F,
    deprecated: &[&str],
) -> Result<F, String> {
    if json {
        return Ok(json_format);
    }
    if let Some(f) = format {
        return Ok(f);
    }
    let names = std::iter::once(FORMAT_ENV).chain(deprecated.iter().copied());
    for name in names {
        let Some(value) = std::env::var_os(name) else {
            continue;
        };
        let value = value.to_string_lossy();
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        if let Ok(f) = F::from_str(value, true) {
            if name != FORMAT_ENV {
                deprecation_note(name, FORMAT_ENV);
            }
            return Ok(f);
        }
        if !["text", "json", "markdown"].contains(&value.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "{name}={value:?} is not a format (text, json or markdown)"
            ));
        }
    }
    Ok(text_format)
}
