//! Capacity for writers (issue 63, row 9): under `--public-reads`, 70 anonymous and
//! read-token clients that trickle their bodies and reconnect as soon as they are
//! answered kept write-token requests at 503. A share of the permits is now kept for
//! the write token.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::*;

const WRITE: &str = "w-token-for-capacity";
const READ: &str = "r-token-for-capacity";

/// A client that sends the head of a query and one byte of its body at a time, and
/// reconnects whenever the server answers or closes, until `stop`.
fn trickler(addr: String, token: Option<&'static str>, stop: Arc<AtomicBool>) {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let head = format!(
        "POST /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\
         Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{"
    );
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut c) = TcpStream::connect(&addr) else {
            continue;
        };
        if c.write_all(head.as_bytes()).is_err() {
            continue;
        }
        // The read's time-out paces the trickle: a byte every 50 ms.
        let _ = c.set_read_timeout(Some(Duration::from_millis(50)));
        let mut buf = [0u8; 512];
        while !stop.load(Ordering::Relaxed) {
            match c.read(&mut buf) {
                // An answer (408, 503) or the connection closed: connect again.
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => break,
            }
            if c.write_all(b" ").is_err() {
                break;
            }
        }
    }
}

#[test]
fn write_token_requests_get_through_reconnecting_tricklers() {
    let tmp = tempfile::tempdir().unwrap();
    let o = ServerOptions {
        log_requests: false,
        token: Some(WRITE.into()),
        read_token: Some(READ.into()),
        public_reads: true,
        // Short enough that the tricklers come back in waves while the writes run.
        body_timeout: Duration::from_secs(2),
        ..ServerOptions::default()
    };
    let s = start_with(&tmp.path().join("idx"), o);
    let addr = s.base.trim_start_matches("http://").to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..70)
        .map(|i| {
            let (addr, stop) = (addr.clone(), stop.clone());
            let token = (i % 2 == 1).then_some(READ);
            std::thread::spawn(move || trickler(addr, token, stop))
        })
        .collect();
    // Wait until the tricklers hold every permit anyone may take: an anonymous query
    // is then refused.
    let query = json!({"query": "database", "budget": 100}).to_string();
    let full = (0..600).any(|_| {
        let got = agent()
            .post(format!("{}/v1/query", s.base))
            .header("Content-Type", "application/json")
            .send(&query);
        let st = got.map(|r| r.status().as_u16()).unwrap_or(0);
        std::thread::sleep(Duration::from_millis(50));
        st == 503
    });
    assert!(full, "the tricklers never filled the server");
    // 32 writes with the write token, one after the other, while the tricklers go on.
    let total = 32;
    let mut ok = 0;
    let mut statuses = Vec::new();
    for i in 0..total {
        let body = json!({"documents": [{"id": format!("w{i}.md"), "text": format!("Write number {i} about storage.")}]});
        let st = agent()
            .post(format!("{}/v1/ingest", s.base))
            .header("Authorization", &format!("Bearer {WRITE}"))
            .send_json(&body)
            .map(|r| r.status().as_u16())
            .unwrap_or(0);
        ok += usize::from(st == 200);
        statuses.push(st);
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    eprintln!("{ok} of {total} write-token requests succeeded under 70 tricklers: {statuses:?}");
    assert!(ok * 100 >= total * 95, "{ok} of {total}: {statuses:?}");
    let (st, v) = get(&s, "/v1/documents");
    assert_eq!(st, 200);
    assert_eq!(v.as_array().unwrap().len(), ok, "{v}");
}
