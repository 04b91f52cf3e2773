//! The JSON of a context, one rendering for every front end: [`ContextJson`] serializes
//! a [`Context`] with its query, and the CLI (`excerpt query --format json`, pretty),
//! the server (`POST /v1/query`, compact, [`context_json`]) and the Python package
//! ([`context_value`]) all write it. (The MCP server's `search` answers its own,
//! numbered shape.)

use excerpt_core::{Context, Piece, Timings};
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;

/// A context as JSON with its query, what every front end writes: the [`Context`]
/// fields plus `query`, with the keys in byte order at every level (what a
/// `serde_json::Value` map gives), each `f32` widened to the `f64` a `Value` would hold,
/// and the fields that `Context` and [`Piece`] leave out when empty left out here too.
/// The fields are taken apart by name, so a field added to `Context`, `Piece` or
/// [`Timings`] does not compile here until it is written.
#[derive(Debug, Clone, Copy)]
pub struct ContextJson<'a> {
    /// The query the context answers.
    pub query: &'a str,
    /// The context.
    pub context: &'a Context,
}

impl Serialize for ContextJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Context {
            strategy,
            budget,
            tokens,
            pieces,
            order,
            notes,
            warnings,
            timings,
        } = self.context;
        let mut o = s.serialize_struct("Context", 10)?;
        o.serialize_field("budget", budget)?;
        if !notes.is_empty() {
            o.serialize_field("notes", notes)?;
        }
        o.serialize_field("order", order)?;
        o.serialize_field("pieces", &Pieces(pieces))?;
        o.serialize_field("query", self.query)?;
        o.serialize_field("strategy", strategy)?;
        if let Some(t) = timings {
            o.serialize_field("timings", &TimingsJson(t))?;
        }
        o.serialize_field("tokens", tokens)?;
        if !warnings.is_empty() {
            o.serialize_field("warnings", warnings)?;
        }
        o.end()
    }
}

/// The pieces of a context, each as [`PieceJson`].
struct Pieces<'a>(&'a [Piece]);

impl Serialize for Pieces<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(PieceJson))
    }
}

/// One piece: its fields in byte order, its scores widened to `f64`.
struct PieceJson<'a>(&'a Piece);

impl Serialize for PieceJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Piece {
            doc_id,
            title,
            section,
            start,
            end,
            first_chunk,
            last_chunk,
            text,
            score,
            relevance,
            tokens,
            hits,
            page_start,
            page_end,
        } = self.0;
        let mut o = s.serialize_struct("Piece", 14)?;
        o.serialize_field("doc_id", doc_id)?;
        o.serialize_field("end", end)?;
        o.serialize_field("first_chunk", first_chunk)?;
        o.serialize_field("hits", hits)?;
        o.serialize_field("last_chunk", last_chunk)?;
        if let Some(p) = page_end {
            o.serialize_field("page_end", p)?;
        }
        if let Some(p) = page_start {
            o.serialize_field("page_start", p)?;
        }
        o.serialize_field("relevance", &f64::from(*relevance))?;
        o.serialize_field("score", &f64::from(*score))?;
        o.serialize_field("section", section)?;
        o.serialize_field("start", start)?;
        o.serialize_field("text", text)?;
        o.serialize_field("title", title)?;
        o.serialize_field("tokens", tokens)?;
        o.end()
    }
}

/// A query's timings, their fields in byte order.
struct TimingsJson<'a>(&'a Timings);

impl Serialize for TimingsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Timings {
            embed_ms,
            lexical_ms,
            dense_ms,
            fusion_ms,
            rerank_ms,
            feedback_ms,
            assembly_ms,
            total_ms,
        } = self.0;
        let mut o = s.serialize_struct("Timings", 8)?;
        o.serialize_field("assembly_ms", assembly_ms)?;
        o.serialize_field("dense_ms", dense_ms)?;
        o.serialize_field("embed_ms", embed_ms)?;
        o.serialize_field("feedback_ms", feedback_ms)?;
        o.serialize_field("fusion_ms", fusion_ms)?;
        o.serialize_field("lexical_ms", lexical_ms)?;
        o.serialize_field("rerank_ms", rerank_ms)?;
        o.serialize_field("total_ms", total_ms)?;
        o.end()
    }
}

/// The JSON value of a context as `excerpt query --format json` prints it and the
/// server returns it: [`ContextJson`] as a `serde_json::Value`.
pub fn context_value(query: &str, ctx: &Context) -> serde_json::Value {
    serde_json::to_value(ContextJson {
        query,
        context: ctx,
    })
    .unwrap_or_else(|_| serde_json::json!({}))
}

/// [`ContextJson`] written out as compact JSON (the bytes `serde_json::to_vec` gives
/// for [`context_value`]), without building the value first: the server answers every
/// query this way.
pub fn context_json(query: &str, ctx: &Context) -> Vec<u8> {
    let text_bytes: usize = ctx.pieces.iter().map(|p| p.text.len()).sum();
    let mut out = Vec::with_capacity(512 + text_bytes + text_bytes / 8 + 256 * ctx.pieces.len());
    serde_json::to_writer(
        &mut out,
        &ContextJson {
            query,
            context: ctx,
        },
    )
    .expect("writing to a Vec cannot fail");
    out
}

/// [`ContextJson`] pretty-printed, as `excerpt query --format json` prints it.
pub(crate) fn context_json_pretty(query: &str, ctx: &Context) -> String {
    serde_json::to_string_pretty(&ContextJson {
        query,
        context: ctx,
    })
    .unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The context's own serialization with `query` added: what the front ends wrote
    /// before they shared [`ContextJson`], the value it must equal.
    fn serde_value(query: &str, ctx: &Context) -> serde_json::Value {
        let mut v = serde_json::to_value(ctx).unwrap();
        v.as_object_mut()
            .unwrap()
            .insert("query".into(), serde_json::Value::String(query.to_string()));
        v
    }

    /// `context_value`, `context_json` and the pretty rendering give the context's own
    /// serialization with `query` added, byte for byte (compact and pretty), with and
    /// without every field that may be left out, for scores of every kind and text that
    /// needs escaping.
    #[test]
    fn context_json_is_the_value_written_out() {
        use excerpt_core::PieceOrder;
        let piece = |i: u32, score: f32, pages: Option<(u32, u32)>| Piece {
            doc_id: format!("dir/doc {i}.md"),
            title: "Title \"quoted\" \u{e9}t\u{e9}".into(),
            section: if i.is_multiple_of(2) {
                String::new()
            } else {
                "A > B".into()
            },
            start: 10 * i as usize,
            end: 10 * i as usize + 7,
            first_chunk: i,
            last_chunk: i + 2,
            text: "line one\n\ttab \\ back\u{1}slash \u{1f600} \u{2028}".into(),
            score,
            relevance: score.clamp(0.0, 1.0),
            tokens: 3 + i as usize,
            hits: (0..i).collect(),
            page_start: pages.map(|p| p.0),
            page_end: pages.map(|p| p.1),
        };
        let full = Context {
            strategy: "auto".into(),
            budget: 1000,
            tokens: 27,
            pieces: vec![
                piece(0, 0.1, None),
                piece(1, 0.48360804, Some((3, 4))),
                piece(2, f32::MAX, Some((1, 1))),
                piece(3, -0.0, None),
                piece(4, f32::NAN, None),
                piece(5, f32::INFINITY, None),
                piece(6, 1e-42, None),
            ],
            order: PieceOrder::Score,
            notes: vec!["a note".into(), "another: \"x\"".into()],
            warnings: vec!["damaged segment".into()],
            timings: Some(Timings {
                embed_ms: 6.123,
                lexical_ms: 3.0,
                dense_ms: 0.8,
                fusion_ms: 0.15,
                rerank_ms: 0.0,
                feedback_ms: 1.234567,
                assembly_ms: 0.9,
                total_ms: 1e-3,
            }),
        };
        let bare = Context {
            pieces: Vec::new(),
            order: PieceOrder::Document,
            notes: Vec::new(),
            warnings: Vec::new(),
            timings: None,
            ..full.clone()
        };
        for (query, ctx) in [("What is \"x\"?\n", &full), ("", &bare)] {
            let want = serde_value(query, ctx);
            assert_eq!(context_value(query, ctx), want);
            let got = context_json(query, ctx);
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(serde_json::to_vec(&want).unwrap()).unwrap()
            );
            assert_eq!(
                context_json_pretty(query, ctx),
                serde_json::to_string_pretty(&want).unwrap()
            );
        }
    }
}
