//! The edges of the protocol rmcp leaves unanswered: a stdio line over the size limit
//! (rmcp drops it without a reply, so the client waits forever) and a line or an HTTP
//! body that is not JSON (rmcp ignores the line, and answers the body with 415). Each is
//! answered with a JSON-RPC error whose `id` is null, as JSON-RPC 2.0 asks when the
//! request's id cannot be read, and logged on stderr.
//!
//! On stdio, a filter sits between the process's stdin and stdout and rmcp: it reads
//! lines under [`MAX_MESSAGE_BYTES`], answers the bad ones itself and passes the others
//! on; one writer puts rmcp's answers and its own on stdout, a whole line at a time.

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Largest message accepted on stdio, in bytes, its newline included (rmcp's own limit).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// JSON-RPC 2.0: invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0: the JSON sent is not a valid request object (or, here, is too large).
pub const INVALID_REQUEST: i64 = -32600;

/// A JSON-RPC error answer to a message whose id is unknown.
pub fn error_reply(code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}})
}

/// What is wrong with a message body, as the JSON-RPC error answering it: `None` when it
/// is a JSON-RPC message rmcp can read; [`PARSE_ERROR`] when it is not JSON;
/// [`INVALID_REQUEST`] when it is JSON but not a JSON-RPC message.
pub fn malformed(body: &[u8]) -> Option<Value> {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Some(error_reply(PARSE_ERROR, &format!("Parse error: {e}"))),
    };
    match serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(value) {
        Ok(_) => None,
        Err(e) => Some(error_reply(
            INVALID_REQUEST,
            &format!("Invalid Request: not a JSON-RPC 2.0 message ({e})"),
        )),
    }
}

/// One line read by [`read_line`].
#[derive(Debug, PartialEq)]
enum Line {
    /// A line is in the buffer (its newline removed).
    Complete,
    /// A line over the limit was read and dropped.
    TooLong,
    /// The input ended.
    End,
}

/// Reads one line into `buf` without ever holding more than `max` bytes of it: the rest
/// of a longer line is read and dropped, and the line reported [`Line::TooLong`].
async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut dropping = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(if dropping {
                Line::TooLong
            } else if buf.is_empty() {
                Line::End
            } else {
                Line::Complete
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let take = newline.map_or(available.len(), |i| i + 1);
        if !dropping {
            if buf.len().saturating_add(take) > max {
                buf.clear();
                dropping = true;
            } else {
                buf.extend_from_slice(&available[..take]);
            }
        }
        input.consume(take);
        if newline.is_some() {
            if dropping {
                return Ok(Line::TooLong);
            }
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Line::Complete);
        }
    }
}

/// A JSON value as one output line.
fn line_of(value: &Value) -> Vec<u8> {
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// Passes the lines of `input` to `to_rmcp` and answers the bad ones on `replies`,
/// until `input` ends (then `to_rmcp` is dropped: rmcp sees the end too).
async fn filter_input<R, W>(
    input: R,
    mut to_rmcp: W,
    replies: mpsc::UnboundedSender<Vec<u8>>,
    max: usize,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = tokio::io::BufReader::new(input);
    let mut buf = Vec::new();
    loop {
        match read_line(&mut input, &mut buf, max).await? {
            Line::End => return Ok(()),
            Line::TooLong => {
                eprintln!(
                    "excerpt mcp: dropped a message longer than {max} bytes (answered with JSON-RPC error {INVALID_REQUEST})"
                );
                let reply = error_reply(
                    INVALID_REQUEST,
                    &format!("Invalid Request: message longer than {max} bytes"),
                );
                let _ = replies.send(line_of(&reply));
            }
            Line::Complete => {
                if buf.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                // Well-formed JSON goes on to rmcp, which answers what is no JSON-RPC
                // message itself (-32600).
                if serde_json::from_slice::<serde::de::IgnoredAny>(&buf).is_err() {
                    eprintln!(
                        "excerpt mcp: a message that is not JSON ({} bytes; answered with JSON-RPC error {PARSE_ERROR})",
                        buf.len()
                    );
                    let reply =
                        malformed(&buf).unwrap_or_else(|| error_reply(PARSE_ERROR, "Parse error"));
                    let _ = replies.send(line_of(&reply));
                    continue;
                }
                buf.push(b'\n');
                to_rmcp.write_all(&buf).await?;
                to_rmcp.flush().await?;
            }
        }
    }
}

/// Passes rmcp's output to `replies` a whole line at a time, until rmcp closes it.
async fn pump_output<R: AsyncRead + Unpin>(
    from_rmcp: R,
    replies: mpsc::UnboundedSender<Vec<u8>>,
) -> std::io::Result<()> {
    let mut from_rmcp = tokio::io::BufReader::new(from_rmcp);
    loop {
        let mut line = Vec::new();
        if from_rmcp.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        if replies.send(line).is_err() {
            return Ok(());
        }
    }
}

/// Writes every line sent on `lines` to `output`, until all senders are gone.
async fn write_output<W: AsyncWrite + Unpin>(
    mut output: W,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) -> std::io::Result<()> {
    while let Some(line) = lines.recv().await {
        output.write_all(&line).await?;
        output.flush().await?;
    }
    Ok(())
}

/// Serves `server` over newline-delimited JSON-RPC on `input` and `output` (stdin and
/// stdout), answering oversized and malformed lines itself; returns when `input` ends
/// and every answer is written.
pub(crate) async fn serve_lines<R, W>(
    server: crate::tools::ExcerptMcp,
    input: R,
    output: W,
    max: usize,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    use rmcp::ServiceExt;
    let (to_rmcp, rmcp_in) = tokio::io::duplex(64 * 1024);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(64 * 1024);
    let (replies, lines) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_output(output, lines));
    let pump = tokio::spawn(pump_output(from_rmcp, replies.clone()));
    let filter = tokio::spawn(filter_input(input, to_rmcp, replies, max));
    let running = server
        .serve((rmcp_in, rmcp_out))
        .await
        .map_err(std::io::Error::other)?;
    let served = running.waiting().await.map_err(std::io::Error::other);
    let joined = |r: Result<std::io::Result<()>, tokio::task::JoinError>| {
        r.map_err(std::io::Error::other).and_then(|r| r)
    };
    let filtered = joined(filter.await);
    let pumped = joined(pump.await);
    let written = joined(writer.await);
    served.map(|_| ())?;
    filtered?;
    pumped?;
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
        let mut r = tokio::io::BufReader::with_capacity(4, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let l = read_line(&mut r, &mut buf, max).await.unwrap();
            if l == Line::End {
                return out;
            }
            out.push((l, buf.clone()));
        }
    }

    #[tokio::test]
    async fn long_lines_are_dropped_and_reading_goes_on() {
        let got = lines(b"short\r\nmuch too long a line\nok\nlast", 8).await;
        assert_eq!(
            got,
            vec![
                (Line::Complete, b"short".to_vec()),
                (Line::TooLong, Vec::new()),
                (Line::Complete, b"ok".to_vec()),
                (Line::Complete, b"last".to_vec()),
            ]
        );
        assert_eq!(
            lines(b"endless line", 4).await,
            vec![(Line::TooLong, vec![])]
        );
    }

    #[test]
    fn malformed_messages_get_the_json_rpc_codes() {
        assert_eq!(
            malformed(b"not json").unwrap()["error"]["code"],
            PARSE_ERROR
        );
        assert_eq!(
            malformed(b"{\"a\":1}").unwrap()["error"]["code"],
            INVALID_REQUEST
        );
        assert_eq!(malformed(b"{\"a\":1}").unwrap()["id"], Value::Null);
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert_eq!(malformed(ping), None);
    }
}
