//! An MCP client for tests (feature `mcp`): rmcp's own client, connected by the suite
//! over the transport it tests (a child process's stdio, streamable HTTP), and the calls
//! the suites make with it: [`call`] a tool, read a successful call's structured answer
//! ([`ok`]) or a failed call's text ([`error_text`]), list the [`tool_names`].

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::RoleClient;
use serde_json::Value;

/// A connected MCP client.
pub type Client = RunningService<RoleClient, ()>;

/// Calls `tool` with `args` (a JSON object); panics when the call cannot be made (a
/// tool's own error is a result, see [`error_text`]).
pub async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("calling {tool}: {e}"))
}

/// The structured answer of a successful call.
pub fn ok(result: &CallToolResult) -> &Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result
        .structured_content
        .as_ref()
        .expect("structured content")
}

/// The text of a failed call.
pub fn error_text(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// The names of the server's tools, sorted.
pub async fn tool_names(client: &Client) -> Vec<String> {
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort_unstable();
    names
}
