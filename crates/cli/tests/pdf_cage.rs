//! Hostile PDFs against the real binary: each is parsed in a worker process under a
//! memory and time limit, dies there, and is skipped with its reason, while the
//! ingest (or the server) goes on and indexes the good files next to it.
//!
//! The PDFs are written byte by byte here: form XObjects that draw each other, a
//! fan-out of form XObjects (8 levels of 10), a flate bomb (a gigabyte of zeros in a
//! megabyte), a page tree claiming a million pages, and a page tree that contains
//! itself. In process, the first three take PDFium to gigabytes of memory.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use excerpt_testkit::fixtures::write_file;
use serde_json::Value;

/// Limits the tests run the workers under: small, so the hostile ones die fast.
const MEMORY_MIB: &str = "256";
const TIMEOUT_SECS: &str = "10";
/// The parent process must stay far below what PDFium takes in process (gigabytes).
const PARENT_MAX_HWM_KIB: u64 = 1536 * 1024;

fn pdfium_present() {
    let lib = excerpt::pdfium_library_path();
    assert!(
        lib.is_file(),
        "PDFium missing at {}: run scripts/fetch-pdfium.sh",
        lib.display()
    );
}

/// A PDF file from the bodies of its objects 1, 2, … (object 1 the catalog).
fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    excerpt_testkit::fixtures::pdf_file(b"%PDF-1.7\n%\xE2\xE3\xCF\xD3\n", objects)
}

fn obj(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// A stream object: its dictionary entries and data.
fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut v = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    v.extend_from_slice(data);
    v.extend_from_slice(b"\nendstream");
    v
}

/// A form XObject drawing `content`, with `xobjects` (name → object number) and the
/// font F1 (object 4) as resources.
fn form(xobjects: &[(&str, usize)], content: &str) -> Vec<u8> {
    let names: String = xobjects
        .iter()
        .map(|(n, o)| format!("/{n} {o} 0 R "))
        .collect();
    stream(
        &format!(
            "/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> /XObject << {names}>> >>"
        ),
        content.as_bytes(),
    )
}

/// Catalog (1), pages (2), one page (3) drawing content 5 with the XObjects named, and
/// Helvetica (4): the first objects of every hostile PDF below.
fn head(xobjects: &str, pages: &str) -> Vec<Vec<u8>> {
    vec![
        obj("<< /Type /Catalog /Pages 2 0 R >>"),
        obj(pages),
        obj(&format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> /XObject << {xobjects} >> >> /Contents 5 0 R >>"
        )),
        obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"),
    ]
}

const ONE_PAGE: &str = "<< /Type /Pages /Kids [3 0 R] /Count 1 >>";
const TEXT: &str = "BT /F1 12 Tf 72 720 Td (A line of text drawn once more.) Tj ET\n";

/// X1 draws X2; X2 draws X1 and X2.
fn recursive_forms() -> Vec<u8> {
    let mut o = head("/X1 6 0 R", ONE_PAGE);
    o.push(stream("", format!("{TEXT}/X1 Do\n").as_bytes()));
    o.push(form(&[("X2", 7)], &format!("{TEXT}/X2 Do\n")));
    o.push(form(
        &[("X1", 6), ("X2", 7)],
        &format!("{TEXT}/X1 Do /X2 Do\n"),
    ));
    pdf(&o)
}

/// Eight levels of forms, each drawing the next ten times: 10^8 text objects.
fn fan_out() -> Vec<u8> {
    let mut o = head("/N 6 0 R", ONE_PAGE);
    o.push(stream("", b"/N Do\n"));
    for level in 0..8 {
        let next = 6 + level + 1;
        o.push(form(&[("N", next)], &"q /N Do Q\n".repeat(10)));
    }
    o.push(form(&[], TEXT));
    pdf(&o)
}

/// A page whose content stream inflates to `gib` GiB of zeros.
fn flate_bomb(gib: usize) -> Vec<u8> {
    let data = zeros_deflated(gib << 10);
    let mut o = head("", ONE_PAGE);
    o.push(stream("/Filter /FlateDecode", &data));
    pdf(&o)
}

/// A zlib stream of `mib` MiB of zeros, built from one compressed MiB repeated: after
/// the first, every MiB compresses to the same bytes (sync-flushed, the window all
/// zeros), so a gigabyte costs a megabyte and milliseconds.
fn zeros_deflated(mib: usize) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress};
    let chunk = vec![0u8; 1 << 20];
    let mut c = Compress::new(Compression::best(), true);
    let mut piece = |flush| {
        let mut out = Vec::with_capacity(64 << 10);
        let before = c.total_in();
        c.compress_vec(&chunk, &mut out, flush).unwrap();
        assert_eq!(
            c.total_in() - before,
            chunk.len() as u64,
            "one call takes the MiB"
        );
        out
    };
    let first = piece(FlushCompress::Sync);
    let second = piece(FlushCompress::Sync);
    let third = piece(FlushCompress::Sync);
    assert_eq!(
        second, third,
        "a MiB of zeros after zeros compresses the same"
    );
    let mut out = first;
    for _ in 1..mib {
        out.extend_from_slice(&second);
    }
    // A final empty stored block, then the Adler-32 of `mib` MiB of zeros: its low half
    // stays 1, its high half is the length modulo 65521.
    out.extend_from_slice(&[0x01, 0x00, 0x00, 0xff, 0xff]);
    let b = ((mib as u64) << 20) % 65521;
    out.extend_from_slice(&((b << 16) | 1).to_be_bytes()[4..]);
    out
}

/// A page tree that claims a million pages and holds one.
fn huge_count() -> Vec<u8> {
    let mut o = head("", "<< /Type /Pages /Kids [3 0 R] /Count 1000000 >>");
    o.push(stream("", TEXT.as_bytes()));
    pdf(&o)
}

/// A page tree whose root is its own kid.
fn page_tree_loop() -> Vec<u8> {
    let mut o = head("", "<< /Type /Pages /Kids [2 0 R 3 0 R 2 0 R] /Count 3 >>");
    o.push(stream("", TEXT.as_bytes()));
    pdf(&o)
}

/// The hostile PDFs by file name.
fn hostile() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("recursive-forms.pdf", recursive_forms()),
        ("fan-out.pdf", fan_out()),
        ("flate-bomb.pdf", flate_bomb(1)),
        ("huge-count.pdf", huge_count()),
        ("page-tree-loop.pdf", page_tree_loop()),
    ]
}

/// The bombs: PDFium runs out of memory or time on them; the worker must die.
const BOMBS: [&str; 3] = ["recursive-forms.pdf", "fan-out.pdf", "flate-bomb.pdf"];

/// The peak resident memory of a running process in KiB (`VmHWM`), if it still runs.
fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Runs `child` to its end, sampling its peak memory; kills it (and fails) past
/// `limit` or PARENT_MAX_HWM_KIB, so a regression cannot take the machine's memory.
fn watch(mut child: Child, limit: Duration) -> (Output, u64) {
    let pid = child.id();
    let start = Instant::now();
    let mut peak = 0;
    // Drain the pipes as the child writes, so that it never blocks on them.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut v).ok();
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut v).ok();
        v
    });
    let status = loop {
        if let Some(hwm) = vm_hwm_kib(pid) {
            peak = peak.max(hwm);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if peak > PARENT_MAX_HWM_KIB || start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "killed after {:.1} s at a peak of {peak} KiB",
                start.elapsed().as_secs_f64()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    (output, peak)
}

/// `excerpt serve` on `index` with the tests' PDF limits, on a free port: the child,
/// its base URL once it listens, and an agent that hands back error statuses.
fn caged_server(index: &std::path::Path) -> (Child, String, ureq::Agent) {
    let mut child = bin()
        .arg("--index")
        .arg(index)
        .args(["--quiet", "serve", "--addr", "127.0.0.1:0", "--no-warmup"])
        .args([
            "--pdf-memory-mb",
            MEMORY_MIB,
            "--pdf-timeout-secs",
            TIMEOUT_SECS,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    (child, base, agent)
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_excerpt"));
    c.env_remove("EXCERPT_INDEX");
    c
}

/// A folder of the hostile PDFs, a good PDF and a good Markdown file: `excerpt ingest`
/// exits 0, indexes the two good files (queries find them), skips each hostile PDF
/// with its reason, and its own memory stays far below what PDFium takes in process.
#[test]
fn ingest_skips_hostile_pdfs_and_keeps_the_good_files() {
    pdfium_present();
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    let index = tmp.path().join("idx");
    for (name, bytes) in hostile() {
        write_file(&docs, name, bytes);
    }
    write_file(&docs, "report.pdf", excerpt_testkit::fixtures::report_pdf());
    write_file(
        &docs,
        "notes.md",
        "# Ferries\n\nThe night ferry to the island leaves at eleven from pier four.\n",
    );
    let child = bin()
        .arg("--index")
        .arg(&index)
        .arg("ingest")
        .arg(&docs)
        .args(["--json", "--pdf-memory-mb", MEMORY_MIB])
        .args(["--pdf-timeout-secs", TIMEOUT_SECS])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let (out, peak) = watch(child, Duration::from_secs(300));
    assert!(
        out.status.success(),
        "{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The good PDF, the Markdown file, and the page-tree loop's one readable page (its
    // looping pages are named as left out, below).
    assert_eq!(r["added"], 3, "{r:#}");
    let skipped = r["skipped"].as_array().unwrap();
    let failed = r["failed"].as_array().unwrap();
    let warnings = r["warnings"].as_array().unwrap();
    assert!(failed.is_empty(), "{r:#}");
    for (name, _) in hostile() {
        // The page-tree loop is ingested with its readable page: a warning names the
        // others. Every other hostile file is skipped.
        let listed = if name == "page-tree-loop.pdf" {
            warnings
        } else {
            skipped
        };
        let p = listed
            .iter()
            .find(|p| p["path"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("{name} not reported: {r:#}"));
        let reason = p["reason"].as_str().unwrap();
        assert!(reason.contains(name), "{reason}");
        assert!(!reason.contains('\n'), "{reason}");
        if BOMBS.contains(&name) {
            assert!(reason.contains("PDF worker"), "{reason}");
        }
        if name == "huge-count.pdf" {
            assert!(reason.contains("claims 1000000 pages"), "{reason}");
        }
        if name == "page-tree-loop.pdf" {
            assert!(reason.contains("cannot read pages"), "{reason}");
        }
    }
    assert_eq!(skipped.len(), 4, "{r:#}");
    assert!(peak < PARENT_MAX_HWM_KIB, "the ingest peaked at {peak} KiB");

    for (query, id) in [
        ("how often is the foghorn sounded in fog?", "report.pdf"),
        ("when does the night ferry leave?", "notes.md"),
    ] {
        let out = bin()
            .arg("--index")
            .arg(&index)
            .args(["query", query, "--format", "json", "--strategy", "topk"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let q: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(q["pieces"][0]["doc_id"], id, "{q:#}");
    }
}

/// The hidden worker subcommand itself: a good PDF on stdin comes back as the JSON
/// document with progress on stderr; a corrupt file is a refusal with its reason.
#[test]
fn pdf_worker_answers_json() {
    pdfium_present();
    let mut child = bin()
        .args(["pdf-worker", "--name", "report.pdf"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&excerpt_testkit::fixtures::report_pdf())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = reply["document"]["document"]["text"].as_str().unwrap();
    assert!(text.contains("foghorn"), "{reply:#}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("progress 3 3"));

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.pdf");
    std::fs::write(&bad, b"%PDF-1.7\n1 0 obj\n<<").unwrap();
    let out = bin().arg("pdf-worker").arg(&bad).output().unwrap();
    assert!(out.status.success());
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(reply["refused"]["kind"], "pdf", "{reply:#}");
    assert!(reply["refused"]["reason"]
        .as_str()
        .unwrap()
        .contains("corrupt"));
}

/// Minimal base64 (standard alphabet, padded) for posting PDFs.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `excerpt serve` gets the bombs posted one after another: each answer is a 400 that
/// names the skip, `/healthz` answers between and after them, and the server's memory
/// stays far below what PDFium takes in process.
#[test]
fn serve_survives_hostile_pdfs() {
    pdfium_present();
    assert_eq!(base64(b"Man"), "TWFu");
    assert_eq!(base64(b"Ma"), "TWE=");
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("idx");
    let (mut child, base, agent) = caged_server(&index);
    let pid = child.id();
    let healthz = || {
        let r = agent.get(format!("{base}/healthz")).call().unwrap();
        assert_eq!(r.status().as_u16(), 200);
    };
    healthz();
    let mut peak = 0;
    for (name, bytes) in hostile() {
        if !BOMBS.contains(&name) {
            continue;
        }
        let start = Instant::now();
        let mut r = agent
            .post(format!("{base}/v1/ingest"))
            .send_json(serde_json::json!({"documents": [
                {"id": name, "format": "pdf", "text": base64(&bytes)}
            ]}))
            .unwrap();
        let status = r.status().as_u16();
        let body: Value = r.body_mut().read_json().unwrap();
        assert_eq!(status, 400, "{name}: {body:#}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(name), "{body:#}");
        assert!(message.contains("skipped: the PDF worker"), "{body:#}");
        assert!(start.elapsed() < Duration::from_secs(60), "{name}");
        healthz();
        peak = peak.max(vm_hwm_kib(pid).unwrap());
    }
    assert!(peak < PARENT_MAX_HWM_KIB, "the server peaked at {peak} KiB");
    let _ = child.kill();
    let _ = child.wait();
}

/// The hostile PDFs are what the issue describes: a kilobyte, a megabyte for the bomb.
#[test]
fn hostile_pdfs_are_small() {
    for (name, bytes) in hostile() {
        assert!(bytes.starts_with(b"%PDF-1.7"), "{name}");
        let limit = if name == "flate-bomb.pdf" {
            2 << 20
        } else {
            4096
        };
        assert!(bytes.len() < limit, "{name}: {} bytes", bytes.len());
    }
}

/// Writes the hostile PDFs (the flate bomb at 4 GiB of zeros) into the directory named
/// by `EXCERPT_HOSTILE_DIR`, for the measurements of docs/BENCHMARKS.md:
/// `EXCERPT_HOSTILE_DIR=/tmp/hostile cargo nextest run -p excerpt-cli --test pdf_cage
/// --run-ignored only`.
#[test]
#[ignore = "writes files for a benchmark"]
fn write_hostile_pdfs() {
    let dir = std::path::PathBuf::from(
        std::env::var_os("EXCERPT_HOSTILE_DIR").expect("EXCERPT_HOSTILE_DIR names a directory"),
    );
    for (name, bytes) in hostile() {
        let bytes = if name == "flate-bomb.pdf" {
            flate_bomb(4)
        } else {
            bytes
        };
        write_file(&dir, name, bytes);
    }
}

/// Issue 63, row 7: `excerpt mcp --allow-writes` (stdio) took `format: "pdf"` in its
/// `ingest` tool and parsed it in process, uncaged (a 1 KB PDF took it to 6 GB). Now
/// it runs the PDF worker under the same limits and flags as `ingest` and `serve`:
/// each bomb is refused with the worker's reason, and the server's memory stays far
/// below what PDFium takes in process.
#[test]
fn mcp_stdio_cages_hostile_pdfs() {
    pdfium_present();
    let tmp = tempfile::tempdir().unwrap();
    let mut child = bin()
        .env("EXCERPT_QUIET", "true")
        .arg("--index")
        .arg(tmp.path().join("idx"))
        .args(["mcp", "--allow-writes", "--no-warmup"])
        .args([
            "--pdf-memory-mb",
            MEMORY_MIB,
            "--pdf-timeout-secs",
            TIMEOUT_SECS,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .expect("the server reads its stdin");
    };
    let mut answer = || {
        let mut line = String::new();
        let n = stdout.read_line(&mut line).expect("read an answer");
        assert!(n > 0, "the server closed stdout (it died?)");
        serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "pdf-cage-test", "version": "0"}}}),
    );
    assert!(answer()["result"].is_object());
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut peak = 0;
    for (i, (name, bytes)) in hostile()
        .into_iter()
        .filter(|(name, _)| BOMBS.contains(name))
        .enumerate()
    {
        let start = Instant::now();
        send(
            serde_json::json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
            "params": {"name": "ingest", "arguments":
                {"id": name, "format": "pdf", "text": base64(&bytes)}}}),
        );
        let reply = answer();
        assert_eq!(reply["id"], i + 1, "{reply:#}");
        let result = &reply["result"];
        assert_eq!(result["isError"], true, "{name}: {reply:#}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("the PDF worker"), "{name}: {text}");
        assert!(start.elapsed() < Duration::from_secs(60), "{name}");
        peak = peak.max(vm_hwm_kib(pid).unwrap());
    }
    assert!(
        peak < PARENT_MAX_HWM_KIB,
        "the MCP server peaked at {peak} KiB"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// `excerpt serve` renders an indexed PDF's page in its caged worker (`pdf-worker
/// --page`): a PNG with the requested range outlined. When the file on disk becomes a
/// hostile PDF, the worker dies under its limits, the request is refused with the
/// reason, and the server goes on answering.
#[test]
fn serve_renders_pages_in_the_caged_worker() {
    pdfium_present();
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let file = docs.join("report.pdf");
    std::fs::write(&file, excerpt_testkit::fixtures::report_pdf()).unwrap();
    let index = tmp.path().join("idx");
    let out = bin()
        .arg("--index")
        .arg(&index)
        .args(["--quiet", "ingest"])
        .arg(&docs)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut child, base, agent) = caged_server(&index);
    let doc: Value = agent
        .get(format!("{base}/v1/documents/report.pdf"))
        .call()
        .unwrap()
        .body_mut()
        .read_json()
        .unwrap();
    let text = doc["text"].as_str().unwrap();
    let sentence = "The compressor engine must be started twenty minutes before use.";
    let at = text.find(sentence).expect("the sentence is indexed");
    let start = text[..at].chars().count();
    let end = start + sentence.chars().count();
    // The page holding the sentence, 1-based, from the document's page ranges.
    let page = doc["pages"]
        .as_array()
        .unwrap()
        .iter()
        .position(|p| {
            p["start"].as_u64().unwrap() as usize <= start
                && start < p["end"].as_u64().unwrap() as usize
        })
        .expect("a page holds it")
        + 1;
    let mut r = agent
        .get(format!(
            "{base}/v1/pages/{page}/report.pdf?highlight={start}-{end}"
        ))
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-type"], "image/png");
    let boxes = r.headers()["x-highlight-boxes"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(boxes.parse::<u32>().unwrap() >= 1, "{boxes}");
    let png = r.body_mut().read_to_vec().unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{} bytes", png.len());

    // The file becomes a flate bomb: the worker dies, the server answers and lives.
    let bomb = hostile()
        .into_iter()
        .find(|(name, _)| *name == "flate-bomb.pdf")
        .unwrap()
        .1;
    std::fs::write(&file, bomb).unwrap();
    let started = Instant::now();
    let mut r = agent
        .get(format!("{base}/v1/pages/{page}/report.pdf"))
        .call()
        .unwrap();
    let status = r.status().as_u16();
    let body: Value = r.body_mut().read_json().unwrap();
    assert!(status == 409 || status == 422, "{status}: {body:#}");
    assert!(started.elapsed() < Duration::from_secs(60));
    let health = agent.get(format!("{base}/healthz")).call().unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let _ = child.kill();
    let _ = child.wait();
}
