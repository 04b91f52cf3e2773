//! Replays every input kept under `fuzz/regressions/<target>/` (inputs a fuzz run once
//! crashed or hung on, plus hand-written seeds of the known-bad shapes) through its
//! target: each must now return normally.

use std::path::PathBuf;

use excerpt_fuzz_targets::TARGETS;

fn regressions() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions")
}

#[test]
fn every_kept_input_is_handled() {
    let mut replayed = 0;
    for (name, target) in TARGETS {
        let dir = regressions().join(name);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            let data = std::fs::read(&f).unwrap();
            eprintln!("{name}: {}", f.display());
            target(&data);
            replayed += 1;
        }
    }
    assert!(
        replayed > 0,
        "no kept inputs under {}",
        regressions().display()
    );
}

#[test]
fn targets_take_arbitrary_bytes() {
    // A few shapes every target must survive, fuzz runs or not.
    let inputs: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"\0\xff\xfe".to_vec(),
        "<".repeat(2000).into_bytes(),
        "<div>".repeat(5000).into_bytes(),
        "---\n".repeat(100).into_bytes(),
        b"{\"query\": \"x\", \"candidates\": 18446744073709551615}".to_vec(),
        b"rse:max_len_chunks=18446744073709551615\nyear>=NaN\nrrf:-1".to_vec(),
        "x".repeat(100_000).into_bytes(),
    ];
    for (name, target) in TARGETS {
        for data in &inputs {
            eprintln!("{name}: {} bytes", data.len());
            target(data);
        }
    }
}
