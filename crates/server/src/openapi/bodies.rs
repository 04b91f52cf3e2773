//! The schemas of the two request bodies that are the engine's [`QuerySpec`] plus a
//! field or two parsed by the handler: [`QueryBody`] (`POST /v1/query`) and [`AskBody`]
//! (`POST /v1/ask`), each `QuerySpec`'s schema with those properties added
//! ([`spec_with`]).

use std::borrow::Cow;

use excerpt::QuerySpec;
use utoipa::openapi::schema::{Object, ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// The body of `POST /v1/query`: a [`QuerySpec`] plus `format`, `instruction` and
/// `explain`.
pub(crate) struct QueryBody;

impl PartialSchema for QueryBody {
    fn schema() -> RefOr<Schema> {
        spec_with(
            "A query: the text and, optionally, how to retrieve and assemble its context \
(`excerpt query`'s options), and how to answer it.",
            vec![
                (
                    "format",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .enum_values(Some(["json", "text", "markdown"]))
                        .description(Some(
                            "`json` (default): the context with its pieces; `text` (for a \
prompt) or `markdown` (for people): the context rendered, in `context`.",
                        ))
                        .build(),
                ),
                (
                    "instruction",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .description(Some(
                            "The closing instruction of the `text` rendering (default: one \
that says how the pieces are ordered).",
                        ))
                        .build(),
                ),
                (
                    "explain",
                    ObjectBuilder::new()
                        .schema_type(Type::Integer)
                        .minimum(Some(0))
                        .description(Some(
                            "With `format: json`: explain the first stage's best this many \
hits in the answer's `explain` (`excerpt query --explain`; each search runs again alone).",
                        ))
                        .build(),
                ),
            ],
        )
    }
}

impl ToSchema for QueryBody {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        <QuerySpec as ToSchema>::schemas(schemas);
    }
}

/// `QuerySpec`'s schema with more properties (none of them required).
pub(crate) fn spec_with(description: &str, extra: Vec<(&str, Object)>) -> RefOr<Schema> {
    match <QuerySpec as PartialSchema>::schema() {
        RefOr::T(Schema::Object(mut object)) => {
            for (name, schema) in extra {
                object
                    .properties
                    .insert(name.to_string(), RefOr::T(Schema::Object(schema)));
            }
            object.description = Some(description.to_string());
            RefOr::T(Schema::Object(object))
        }
        other => other,
    }
}

/// The body of `POST /v1/ask`: a [`QuerySpec`] plus `stream`.
pub(crate) struct AskBody;

impl PartialSchema for AskBody {
    fn schema() -> RefOr<Schema> {
        spec_with(
            "A question: the fields of a query, plus whether to stream the answer.",
            vec![(
                "stream",
                ObjectBuilder::new()
                    .schema_type(Type::Boolean)
                    .description(Some(
                        "Answer as a server-sent-event stream (default false: one JSON value).",
                    ))
                    .build(),
            )],
        )
    }
}

impl ToSchema for AskBody {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("AskBody")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        <QuerySpec as ToSchema>::schemas(schemas);
    }
}
