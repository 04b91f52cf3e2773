//! The one place a context is turned into the format a front end was asked for, so
//! `excerpt query --format F` and the server's `POST /v1/query` with `"format": F` give
//! the same bytes.

use excerpt_context::{render_markdown, render_text, Context, RenderOptions};

use crate::json::context_json_pretty;

/// How a context is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RenderFormat {
    /// The context's JSON with the query added ([`ContextJson`](crate::ContextJson)),
    /// pretty-printed.
    #[default]
    Json,
    /// Plain text for a prompt, ending with a closing instruction.
    Text,
    /// Markdown for people.
    Markdown,
}

impl RenderFormat {
    /// The format's name, as it is spelled on the command line and in requests.
    pub fn name(self) -> &'static str {
        match self {
            RenderFormat::Json => "json",
            RenderFormat::Text => "text",
            RenderFormat::Markdown => "markdown",
        }
    }
}

impl std::str::FromStr for RenderFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "json" => Ok(RenderFormat::Json),
            "text" => Ok(RenderFormat::Text),
            "markdown" => Ok(RenderFormat::Markdown),
            other => Err(format!(
                "unknown format {other:?}: expected json, text or markdown"
            )),
        }
    }
}

/// Renders the context of `query` in `format`. `instruction` replaces the closing
/// instruction of the text format (an empty one drops it; `None` keeps the default);
/// the other formats have none.
pub fn render(
    query: &str,
    ctx: &Context,
    format: RenderFormat,
    instruction: Option<String>,
) -> String {
    match format {
        RenderFormat::Json => context_json_pretty(query, ctx),
        RenderFormat::Markdown => render_markdown(ctx),
        RenderFormat::Text => {
            let mut opts = RenderOptions::default();
            if let Some(i) = instruction {
                opts.closing_instruction = (!i.is_empty()).then_some(i);
            }
            render_text(ctx, &opts)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context_value;

    fn empty() -> Context {
        Context {
            strategy: "topk".into(),
            budget: 100,
            tokens: 0,
            pieces: Vec::new(),
            order: Default::default(),
            notes: Vec::new(),
            warnings: Vec::new(),
            timings: None,
        }
    }

    #[test]
    fn names_round_trip() {
        for f in [
            RenderFormat::Json,
            RenderFormat::Text,
            RenderFormat::Markdown,
        ] {
            assert_eq!(f.name().parse::<RenderFormat>(), Ok(f));
        }
        assert!("yaml".parse::<RenderFormat>().unwrap_err().contains("yaml"));
    }

    #[test]
    fn each_format_is_its_renderer() {
        let ctx = empty();
        let json: serde_json::Value =
            serde_json::from_str(&render("q", &ctx, RenderFormat::Json, None)).unwrap();
        assert_eq!(json, context_value("q", &ctx));
        assert_eq!(
            render("q", &ctx, RenderFormat::Markdown, None),
            render_markdown(&ctx)
        );
        assert_eq!(
            render("q", &ctx, RenderFormat::Text, None),
            render_text(&ctx, &RenderOptions::default())
        );
        let none = RenderOptions {
            closing_instruction: None,
        };
        assert_eq!(
            render("q", &ctx, RenderFormat::Text, Some(String::new())),
            render_text(&ctx, &none)
        );
        let custom = RenderOptions {
            closing_instruction: Some("Answer briefly.".into()),
        };
        assert_eq!(
            render(
                "q",
                &ctx,
                RenderFormat::Text,
                Some("Answer briefly.".into())
            ),
            render_text(&ctx, &custom)
        );
    }
}
