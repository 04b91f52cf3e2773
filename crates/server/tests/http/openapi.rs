//! The OpenAPI document: the committed copy is current, the document is well formed, and
//! it describes exactly what a real server on 127.0.0.1 serves.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;

use super::{agent, start};

/// Where the committed copy lives.
fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json")
}

/// The environment variable that makes [`committed_document_is_current`] rewrite the
/// committed copy instead of failing.
const UPDATE: &str = "EXCERPT_UPDATE_OPENAPI";

#[test]
fn committed_document_is_current() {
    let generated = excerpt_server::openapi_json();
    let path = committed_path();
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == generated {
        return;
    }
    if std::env::var_os(UPDATE).is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).expect("docs/openapi.json is writable");
        return;
    }
    let first_difference = committed
        .lines()
        .zip(generated.lines())
        .position(|(a, b)| a != b)
        .map_or_else(
            || "one is a prefix of the other".to_string(),
            |i| format!("first difference at line {}", i + 1),
        );
    panic!(
        "docs/openapi.json does not match the API the code serves ({first_difference}). \
         Refresh it with `{UPDATE}=1 cargo nextest run -p excerpt-server openapi` and \
         commit it."
    );
}

/// Every `$ref` in `v`.
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref" {
                    if let Some(s) = x.as_str() {
                        out.push(s.to_string());
                    }
                }
                refs(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

const METHODS: &[&str] = &["get", "put", "post", "delete", "patch"];

/// (method, path) of every operation of the document.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for m in item.as_object().expect("a path item").keys() {
            if METHODS.contains(&m.as_str()) || m == "head" || m == "options" || m == "trace" {
                ops.insert((m.clone(), path.clone()));
            }
        }
    }
    ops
}

#[test]
fn document_is_well_formed() {
    let doc: Value = serde_json::from_str(&excerpt_server::openapi_json()).expect("valid JSON");
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    for r in {
        let mut v = Vec::new();
        refs(&doc, &mut v);
        v
    } {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("a reference outside the schemas: {r}"));
        assert!(schemas.contains_key(name), "{r} names no schema");
    }
    let mut ids = BTreeSet::new();
    for (method, path) in operations(&doc) {
        let op = &doc["paths"][&path][&method];
        let id = op["operationId"].as_str().expect("an operationId");
        assert!(ids.insert(id.to_string()), "operationId {id} twice");
        assert!(op["summary"].is_string(), "{method} {path} has no summary");
        let responses = op["responses"].as_object().expect("responses");
        assert!(responses.contains_key("200"), "{method} {path}: no 200");
        assert!(responses.contains_key("403"), "{method} {path}: no 403");
        // Every parameter in the path template is declared, and nothing else is.
        let in_template: BTreeSet<&str> = path
            .split('{')
            .skip(1)
            .filter_map(|p| p.split('}').next())
            .collect();
        let declared: BTreeSet<&str> = op["parameters"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|p| p["in"] == "path")
                    .filter_map(|p| p["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(in_template, declared, "{method} {path}");
        assert!(!path.contains('*'), "an axum wildcard left in {path}");
    }
    // Bodies of the routes that take one.
    for (method, path) in [
        ("post", "/v1/query"),
        ("post", "/v1/ask"),
        ("post", "/v1/ingest"),
    ] {
        let body = &doc["paths"][path][method]["requestBody"];
        assert_eq!(body["required"], true, "{path}");
        assert!(
            body["content"]["application/json"]["schema"].is_object(),
            "{path}"
        );
    }
    // The query body is QuerySpec's fields plus the handler's own, and still refuses
    // unknown fields.
    let query = &schemas["QueryBody"];
    for field in [
        "query",
        "mode",
        "strategy",
        "budget",
        "filter",
        "format",
        "instruction",
    ] {
        assert!(query["properties"][field].is_object(), "QueryBody.{field}");
    }
    assert_eq!(query["additionalProperties"], false);
    // The bounds written in the schema attributes are the engine's.
    let spec = &query["properties"];
    assert_eq!(spec["budget"]["maximum"], excerpt::MAX_BUDGET);
    for count in ["candidates", "top_k", "rerank"] {
        assert_eq!(spec[count]["maximum"], excerpt::MAX_CANDIDATES, "{count}");
        assert_eq!(spec[count]["minimum"], 1, "{count}");
    }
    assert_eq!(query["required"], serde_json::json!(["query"]));
}

/// The path with its parameters filled in.
fn concrete(path: &str) -> String {
    path.replace("{id}", "some/doc").replace("{file}", "app.js")
}

/// Whether the router itself answered "no such route" or "no such method".
fn unrouted(status: u16, body: &str) -> bool {
    let code = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["code"].as_str().map(str::to_string));
    status == 405
        || (status == 404 && code.as_deref() == Some("not_found") && body.contains("no route"))
}

#[test]
fn the_server_serves_exactly_the_documented_operations() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&dir.path().join("index"));
    let call = |method: &str, path: &str| -> (u16, String) {
        let url = format!("{}{}", s.base, concrete(path));
        let a = agent();
        let r = match method {
            "get" => a.get(&url).call(),
            "delete" => a.delete(&url).call(),
            "post" => a.post(&url).send_empty(),
            "put" => a.put(&url).send_empty(),
            "patch" => a.patch(&url).send_empty(),
            other => panic!("no probe for {other}"),
        };
        let mut r = r.expect("the server answers");
        let status = r.status().as_u16();
        (status, r.body_mut().read_to_string().unwrap_or_default())
    };

    // The document served is the generated one.
    let (status, served) = call("get", "/openapi.json");
    assert_eq!(status, 200);
    let served: Value = serde_json::from_str(&served).expect("JSON");
    let doc: Value = serde_json::from_str(&excerpt_server::openapi_json()).unwrap();
    assert_eq!(served, doc);

    let documented = operations(&doc);
    let paths: BTreeSet<&String> = documented.iter().map(|(_, p)| p).collect();
    for path in paths {
        for method in METHODS {
            let (status, body) = call(method, path);
            let is_documented = documented.contains(&(method.to_string(), path.clone()));
            assert_eq!(
                !unrouted(status, &body),
                is_documented,
                "{method} {path}: {status} {body} (documented: {is_documented})"
            );
        }
    }
    // The probe can tell a route from no route.
    let (status, body) = call("get", "/v1/nothing-here");
    assert!(unrouted(status, &body), "{status} {body}");
}
