//! The local model: reference embeddings, batching, order, tokenizer spans.

use std::path::PathBuf;
use std::sync::OnceLock;

use excerpt_embed::{
    resolve_model, EmbedError, Embedder, KernelChoice, LocalEmbedder, Pooling, QueryWeights,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    model: String,
    items: Vec<ReferenceItem>,
}

#[derive(Deserialize)]
struct ReferenceItem {
    text: String,
    embedding: Vec<f32>,
}

fn model_dir() -> PathBuf {
    match resolve_model(None) {
        Ok(dir) => dir,
        Err(e) => panic!(
            "the test model all-MiniLM-L6-v2 is missing: {e}\n\
             Fetch it with scripts/setup.sh (it goes to $EXCERPT_HOME/models or \
             ~/.cache/excerpt/models)."
        ),
    }
}

/// One model shared by all tests of this binary (loading takes a moment).
fn embedder() -> &'static LocalEmbedder {
    static MODEL: OnceLock<LocalEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| match LocalEmbedder::load(&model_dir()) {
        Ok(m) => m,
        Err(e) => panic!("cannot load the test model: {e}"),
    })
}

fn reference() -> Reference {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/minilm-reference.json"
    );
    let text = std::fs::read_to_string(path).expect("reference file is committed");
    serde_json::from_str(&text).expect("reference file parses")
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

#[test]
fn model_metadata() {
    let e = embedder();
    assert_eq!(e.dimension(), 384);
    assert_eq!(e.max_seq_length(), 256);
    assert_eq!(e.pooling(), Pooling::Mean);
    let id = e.model_id();
    let (name, hash) = id.split_once('@').expect("id is name@hash");
    assert_eq!(name, "all-MiniLM-L6-v2");
    assert_eq!(hash.len(), 12);
    assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
    // Stable across loads.
    let again = LocalEmbedder::load(&model_dir()).expect("loads");
    assert_eq!(again.model_id(), id);
    let counter = e.token_counter().expect("local model has a token counter");
    assert_eq!(counter.max_sequence_tokens(), 256);
    assert_eq!(counter.special_tokens(), 2);
}

#[test]
fn matches_reference_embeddings() {
    let reference = reference();
    assert!(reference.model.contains("all-MiniLM-L6-v2"));
    assert!(reference.items.len() >= 8);
    let e = embedder();
    // The long item must actually exceed the limit, so truncation is exercised.
    let counter = e.token_counter().expect("counter");
    assert!(
        reference
            .items
            .iter()
            .any(|it| counter.count(&it.text) + 2 > 256),
        "reference should contain a text longer than 256 tokens"
    );

    let texts: Vec<&str> = reference.items.iter().map(|it| it.text.as_str()).collect();
    let batched = e.embed(&texts).expect("embeds");
    assert_eq!(batched.len(), texts.len());
    for (item, got) in reference.items.iter().zip(&batched) {
        let c = cosine(got, &item.embedding);
        eprintln!(
            "cosine {c:.6} for {:?}",
            item.text.chars().take(40).collect::<String>()
        );
        assert!(
            c >= 0.999,
            "cosine {c} < 0.999 for {:?}",
            item.text.chars().take(60).collect::<String>()
        );
    }
    // Each text alone too (no padding at all).
    for item in &reference.items {
        let got = e.embed_query(&item.text).expect("embeds");
        let c = cosine(&got, &item.embedding);
        assert!(
            c >= 0.999,
            "single: cosine {c} for {:?}",
            item.text.chars().take(60).collect::<String>()
        );
    }
}

/// Every kernel this CPU runs, forced: our AVX-512 kernel, our AVX2 kernel, and the
/// path of CPUs without AVX2 + FMA (the `gemm` crate's products, portable element-wise
/// code): the same reference embeddings, and the same vectors as the default kernel up
/// to rounding. A kernel the CPU lacks is refused with a message saying so (and its
/// case is skipped with a line on standard error).
#[test]
fn every_kernel_this_cpu_runs_matches_reference_embeddings() {
    let reference = reference();
    let texts: Vec<&str> = reference.items.iter().map(|it| it.text.as_str()).collect();
    let default = embedder().embed(&texts).expect("embeds");
    for (choice, name) in [
        (KernelChoice::Avx512, "avx512"),
        (KernelChoice::Avx2, "avx2"),
        (KernelChoice::Gemm, "gemm"),
    ] {
        let kernel = match LocalEmbedder::load_with_kernel(&model_dir(), choice) {
            Ok(kernel) => kernel,
            Err(e) => {
                let message = e.to_string();
                assert!(message.contains("needs a CPU with"), "{message}");
                eprintln!("this CPU cannot run the {name} kernel: skipped ({message})");
                continue;
            }
        };
        assert_eq!(kernel.kernel(), name);
        let got = kernel.embed(&texts).expect("embeds");
        for ((item, g), d) in reference.items.iter().zip(&got).zip(&default) {
            let c = cosine(g, &item.embedding);
            assert!(c >= 0.999, "{name}: cosine {c} < 0.999");
            assert!(cosine(g, d) >= 0.99999, "{name} vs {}", embedder().kernel());
        }
        assert_eq!(kernel.model_id(), embedder().model_id());
    }
}

#[test]
fn models_of_other_families_are_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    for file in ["config.json", "model.safetensors", "tokenizer.json"] {
        let from = model_dir().join(file);
        let to = dir.path().join(file);
        if file == "model.safetensors" {
            // Never read: the config is refused first.
            std::fs::write(&to, b"not weights").expect("write");
        } else {
            std::fs::copy(&from, &to).expect("copy");
        }
    }
    let path = dir.path().join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    config["model_type"] = "mpnet".into();
    std::fs::write(&path, config.to_string()).expect("write");
    match LocalEmbedder::load(dir.path()) {
        Err(EmbedError::ModelLoad { path, message }) => {
            assert!(path.ends_with("config.json"), "{path}");
            assert!(
                message.contains("model_type `mpnet` is not supported"),
                "{message}"
            );
            assert!(
                message.contains("(model_type `bert`, `xlm-roberta`, `roberta`"),
                "{message}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn mixed_texts() -> Vec<String> {
    let reference = reference();
    let mut texts: Vec<String> = reference.items.into_iter().map(|it| it.text).collect();
    texts.push(String::new());
    texts.push("short".into());
    texts.push(
        "A medium length sentence about quarterly budgets and the remote control design.".repeat(3),
    );
    texts.push("word ".repeat(400));
    texts.push("Another one: the committee discussed the new curriculum.".into());
    texts
}

#[test]
fn batches_equal_singles_and_keep_order() {
    let texts = mixed_texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let singles: Vec<Vec<f32>> = refs
        .iter()
        .map(|t| embedder().embed(&[t]).expect("embeds").remove(0))
        .collect();
    // Small batches mix lengths differently; results must not depend on batching.
    for batch_size in [1, 3, 32] {
        let e = LocalEmbedder::load(&model_dir())
            .expect("loads")
            .with_batch_size(batch_size);
        assert_eq!(e.batch_size(), batch_size);
        let got = e.embed(&refs).expect("embeds");
        assert_eq!(got.len(), refs.len());
        for (i, (g, s)) in got.iter().zip(&singles).enumerate() {
            let c = cosine(g, s);
            assert!(c >= 0.9999, "batch {batch_size}, text {i}: cosine {c}");
        }
    }
    // Reversed input gives reversed output.
    let reversed: Vec<&str> = refs.iter().rev().copied().collect();
    let got = embedder().embed(&reversed).expect("embeds");
    for (g, s) in got.iter().zip(singles.iter().rev()) {
        assert!(cosine(g, s) >= 0.9999);
    }
    // Distinct texts give distinct vectors (order really is preserved, not just shape).
    assert!(cosine(&singles[0], &singles[1]) < 0.99);
}

#[test]
fn queries_in_each_precision_stay_close_to_documents_and_the_reference() {
    // A query's products may read the weights rounded (`QueryWeights`): to 12-bit
    // integers in integer products (the default, on our own kernels) or to half
    // precision (with F16C).
    // Documents are embedded in f32. The same text gives vectors within each
    // precision's cosine of the document's, not the same bits, and each matches the
    // reference; in f32 the query is the document's vector bit for bit.
    let e = embedder();
    let own_kernel = e.kernel() != "gemm";
    #[cfg(target_arch = "x86_64")]
    let f16c = std::arch::is_x86_feature_detected!("f16c");
    #[cfg(not(target_arch = "x86_64"))]
    let f16c = false;
    for (weights, bar, rounded) in [
        (QueryWeights::F32, 0.99999, false),
        (QueryWeights::F16, 0.9999, own_kernel && f16c),
        (QueryWeights::Int16, 0.9999, own_kernel),
    ] {
        let (mut differ, mut lowest) = (0, 1f32);
        for item in &reference().items {
            let query = e.embed_query_with(&item.text, weights).expect("embeds");
            let doc = e.embed(&[item.text.as_str()]).expect("embeds").remove(0);
            let c = cosine(&query, &doc);
            lowest = lowest.min(c);
            assert!(c >= bar, "{weights:?}: query vs document: cosine {c}");
            let r = cosine(&query, &item.embedding);
            assert!(r >= 0.999, "{weights:?}: query vs reference: cosine {r}");
            differ += usize::from(query != doc);
        }
        eprintln!("{weights:?}: lowest cosine to the documents' vectors {lowest:.6}");
        if rounded {
            assert!(
                differ > 0,
                "{weights:?}: the query must read rounded weights"
            );
        } else {
            assert_eq!(differ, 0, "{weights:?}: this query takes the f32 path");
            if weights != QueryWeights::F32 {
                eprintln!("{weights:?} does not run on this CPU's kernel: f32 instead");
            }
        }
    }
}

#[test]
fn vectors_are_unit_length() {
    let texts = mixed_texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for v in embedder().embed(&refs).expect("embeds") {
        assert_eq!(v.len(), 384);
        assert!((norm(&v) - 1.0).abs() < 1e-4, "norm {}", norm(&v));
        assert!(v.iter().all(|x| x.is_finite()));
    }
    assert!(embedder()
        .embed(&[])
        .expect("empty input is fine")
        .is_empty());
}

#[test]
fn token_spans_are_byte_ranges() {
    let counter = embedder().token_counter().expect("counter");
    let text = "Ünïcödé text: café, naïve, 東京, Привет, emoji 🙂 included. Hello world!";
    let spans = counter.token_spans(text);
    assert!(!spans.is_empty());
    assert_eq!(counter.count(text), spans.len());
    let mut last_end = 0;
    for &(s, e) in &spans {
        assert!(s < e && e <= text.len(), "span {s}..{e}");
        assert!(text.is_char_boundary(s) && text.is_char_boundary(e));
        assert!(s >= last_end, "spans overlap or go backwards");
        last_end = e;
    }
    // Byte offsets, not char offsets: the CJK characters are whole tokens of 3 bytes.
    let tokyo = text.find('東').expect("present");
    assert!(spans.contains(&(tokyo, tokyo + '東'.len_utf8())));
    // Wordpieces of a word cover it contiguously.
    let hello = text.find("Hello").expect("present");
    assert!(spans.contains(&(hello, hello + 5)));

    // No special tokens, no truncation.
    assert!(counter.token_spans("").is_empty());
    assert!(counter.token_spans("   \n\t ").is_empty());
    let long = "token ".repeat(1000);
    assert_eq!(counter.count(&long), 1000);
    assert_eq!(counter.token_spans(&long).len(), 1000);
}

#[test]
fn spans_pool_the_tokens_of_the_whole_text_forward_pass() {
    let m = embedder();
    let counter = m.token_counter().expect("counter");
    let a = "The tenant pays the rent on the first day of every month. Late payment costs a fee.";
    let b = "Invoices are due within thirty days. Late payment costs a fee.";
    let late = "Late payment costs a fee.";
    let (sa, sb) = (a.find(late).unwrap(), b.find(late).unwrap());
    let spans = vec![
        vec![(0, sa), (sa, a.len())],
        vec![(sb, b.len())],
        vec![(0, late.len())],
    ];
    let pools = m
        .pool_spans(&[a, b, late], &spans)
        .expect("pools")
        .expect("a local model has token vectors");
    let lens: Vec<usize> = pools.iter().map(|p| p.spans.len()).collect();
    assert_eq!(lens, [2, 1, 1]);
    // Each text's own vector is the one embedding gives, from the same pass.
    let embedded = m.embed(&[a, b, late]).expect("embeds");
    for (p, e) in pools.iter().zip(&embedded) {
        assert!(cosine(&p.vector, e) > 0.99999, "{}", cosine(&p.vector, e));
    }
    let pools: Vec<Vec<excerpt_embed::SpanPool>> = pools.into_iter().map(|p| p.spans).collect();
    // Each span holds its own tokens, special tokens left out.
    assert_eq!(pools[0][0].tokens as usize, counter.count(&a[..sa]));
    assert_eq!(pools[0][1].tokens as usize, counter.count(late));
    assert_eq!(pools[2][0].tokens as usize, counter.count(late));
    let mean = |p: &excerpt_embed::SpanPool| -> Vec<f32> {
        p.sum.iter().map(|x| x / p.tokens as f32).collect()
    };
    // The same sentence reads differently in another text (the vectors come from the
    // whole text's pass), but still more like itself than like the other sentence.
    let (in_a, in_b, alone) = (mean(&pools[0][1]), mean(&pools[1][0]), mean(&pools[2][0]));
    assert!(cosine(&in_a, &in_b) < 0.999, "{}", cosine(&in_a, &in_b));
    assert!(cosine(&in_a, &alone) > cosine(&in_a, &mean(&pools[0][0])));
    // Deterministic, whatever else is in the batch.
    let again = m
        .pool_spans(&[a], &spans[..1])
        .expect("pools")
        .expect("token vectors");
    for (x, y) in again[0].spans[1].sum.iter().zip(&pools[0][1].sum) {
        assert!((x - y).abs() < 1e-5);
    }
    // A span past the text, or an empty one, holds no token.
    let none = m
        .pool_spans(&[late], &[vec![(late.len(), late.len() + 5), (3, 3)]])
        .expect("pools")
        .expect("token vectors");
    assert!(none[0]
        .spans
        .iter()
        .all(|p| p.tokens == 0 && p.sum.iter().all(|x| *x == 0.0)));
    // One list of spans per text.
    assert!(m.pool_spans(&[a, b], &spans[..1]).is_err());
}

#[test]
fn load_errors_name_the_missing_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let err = LocalEmbedder::load(tmp.path()).expect_err("empty dir fails");
    match &err {
        EmbedError::ModelLoad { path, message } => {
            assert!(path.ends_with("config.json"), "{path}");
            assert!(message.contains("config.json"), "{message}");
        }
        other => panic!("unexpected error {other:?}"),
    }
    // With config.json present, the next missing file is named.
    std::fs::copy(
        model_dir().join("config.json"),
        tmp.path().join("config.json"),
    )
    .expect("copy");
    let err = LocalEmbedder::load(tmp.path()).expect_err("no weights");
    assert!(err.to_string().contains("model.safetensors"), "{err}");

    let missing = tmp.path().join("nope");
    let err = LocalEmbedder::load(&missing).expect_err("no dir");
    assert!(matches!(err, EmbedError::ModelLoad { .. }));
    assert!(err.to_string().contains("nope"));
}

#[test]
fn embedders_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<LocalEmbedder>();
    check::<excerpt_embed::RemoteEmbedder>();
    let _: &dyn Embedder = embedder();
}
