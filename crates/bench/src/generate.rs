//! The generated collection: documents of random words from a Zipf-like vocabulary,
//! each chunk embedded as a random perturbation of one of a few hundred random unit
//! "cluster centres". No model is involved; [`BenchEmbedder`] stands in for one at
//! query time.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use excerpt_core::{normalize, CharIndex, Chunk, ChunkerConfig, Document, EmbedError, Embedder};
use excerpt_index::{IndexConfig, IndexWriter};

/// Words in the vocabulary.
const VOCABULARY: usize = 20_000;

/// Most cluster centres.
const CLUSTERS: usize = 256;

/// Words per generated chunk.
const WORDS_PER_CHUNK: usize = 40;

/// Chunks staged between commits while building.
const COMMIT_EVERY: usize = 2000;

/// A xorshift64 generator: fast, deterministic for a seed, not cryptographic. The seed
/// must not be 0 (the sequence would stay 0).
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A uniform value in [-1, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }

    /// A Zipf-like word index in 0..n: a uniform value cubed skews towards small
    /// indices.
    pub fn word(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((u * u * u) * n as f64) as usize
    }
}

/// A unit vector near one of `centers`: the centre is drawn from `rng`, then each
/// coordinate is moved by up to 0.3/sqrt(dim) and the result normalised.
pub fn near_center(centers: &[Vec<f32>], rng: &mut Rng) -> Vec<f32> {
    let c = &centers[(rng.next() % centers.len() as u64) as usize];
    let dim = c.len() as f32;
    let mut v: Vec<f32> = c
        .iter()
        .map(|x| x + 0.3 * rng.unit() / dim.sqrt())
        .collect();
    normalize(&mut v);
    v
}

/// Four words of the 2000 most frequent, drawn from `rng`: a query text.
pub fn query_text(vocab: &[String], rng: &mut Rng) -> String {
    let words: Vec<&str> = (0..4).map(|_| vocab[rng.word(2000)].as_str()).collect();
    words.join(" ")
}

/// The size of a collection to generate.
#[derive(Debug, Clone, Copy)]
pub struct CollectionSpec {
    /// Chunks in all.
    pub chunks: usize,
    /// Chunks per document (the last document may have fewer).
    pub chunks_per_doc: usize,
    /// Vector dimension.
    pub dim: usize,
}

/// A generated collection, written to an index directory.
#[derive(Debug, Clone)]
pub struct Collection {
    /// The model id recorded in the index (`bench-random-<dim>`).
    pub model_id: String,
    /// The vocabulary, most frequent word first.
    pub vocab: Vec<String>,
    /// The cluster centres the chunk vectors were drawn near.
    pub centers: Vec<Vec<f32>>,
    /// Seconds spent writing the index (generation included, centres excluded).
    pub build_seconds: f64,
}

impl Collection {
    /// An embedder whose vectors fall near this collection's centres.
    pub fn embedder(&self) -> BenchEmbedder {
        BenchEmbedder {
            model_id: self.model_id.clone(),
            centers: self.centers.clone(),
        }
    }
}

/// The vocabulary, cluster centres and model id of a collection of `spec`, drawn from
/// `rng` (the documents are drawn after them, by [`next_document`]).
pub fn setup(spec: &CollectionSpec, rng: &mut Rng) -> Collection {
    let vocab: Vec<String> = (0..VOCABULARY).map(|i| format!("w{i:x}")).collect();
    let clusters = CLUSTERS.min(spec.chunks.max(1));
    let centers: Vec<Vec<f32>> = (0..clusters)
        .map(|_| {
            let mut v: Vec<f32> = (0..spec.dim).map(|_| rng.unit()).collect();
            normalize(&mut v);
            v
        })
        .collect();
    Collection {
        model_id: format!("bench-random-{}", spec.dim),
        vocab,
        centers,
        build_seconds: 0.0,
    }
}

impl Collection {
    /// The index config a collection of dimension `dim` is written with.
    pub fn config(&self, dim: usize) -> IndexConfig {
        IndexConfig {
            model_id: self.model_id.clone(),
            dimension: dim,
            chunker: ChunkerConfig::default(),
            headers: false,
            contextualizer: None,
            sentence_vectors: None,
        }
    }
}

/// How many documents a collection of `spec` has.
pub fn document_count(spec: &CollectionSpec) -> usize {
    spec.chunks.div_ceil(spec.chunks_per_doc.max(1))
}

/// Document number `d` of a collection of `spec` and its chunk vectors (row-major),
/// drawn from `rng`: documents must be drawn in order, after [`setup`].
pub fn next_document(
    d: usize,
    spec: &CollectionSpec,
    collection: &Collection,
    rng: &mut Rng,
) -> Result<(Document, Vec<f32>)> {
    let per_doc = spec.chunks_per_doc.max(1);
    let n = per_doc.min(spec.chunks - d * per_doc);
    let vocab = &collection.vocab;
    let mut text = String::new();
    let mut bounds = Vec::with_capacity(n);
    let mut vectors = Vec::with_capacity(n * spec.dim);
    for _ in 0..n {
        let start = text.len();
        for _ in 0..WORDS_PER_CHUNK {
            text.push_str(&vocab[rng.word(vocab.len())]);
            text.push(' ');
        }
        text.push('\n');
        bounds.push((start, text.len()));
        vectors.extend(near_center(&collection.centers, rng));
    }
    Ok((document(d, text, &bounds)?, vectors))
}

/// Generates a collection of `spec` into a new index at `dir`, drawing everything from
/// `rng` (the same seed gives the same collection).
pub fn build(dir: &Path, spec: &CollectionSpec, rng: &mut Rng) -> Result<Collection> {
    let mut collection = setup(spec, rng);
    let config = collection.config(spec.dim);
    let started = Instant::now();
    let mut w = IndexWriter::open(dir, config)?;
    for d in 0..document_count(spec) {
        let (doc, vectors) = next_document(d, spec, &collection, rng)?;
        w.put(doc, vectors)?;
        if w.staged() >= COMMIT_EVERY {
            w.commit()?;
        }
    }
    w.commit()?;
    drop(w);
    collection.build_seconds = started.elapsed().as_secs_f64();
    Ok(collection)
}

/// Document number `d`: `text` cut into chunks at the byte `bounds`, one sentence per
/// chunk, no sections.
fn document(d: usize, text: String, bounds: &[(usize, usize)]) -> Result<Document> {
    let idx = CharIndex::new(&text);
    let chunks: Vec<Chunk> = bounds
        .iter()
        .enumerate()
        .map(|(i, &(s, e))| {
            Ok(Chunk {
                ordinal: i as u32,
                range: idx.range(s, e)?,
                section: None,
                tokens: 0,
                context: None,
            })
        })
        .collect::<Result<_, excerpt_core::Error>>()?;
    let sentences = chunks.iter().map(|c| c.range).collect();
    Ok(Document {
        id: format!("doc-{d:07}"),
        title: String::new(),
        source: None,
        metadata: Default::default(),
        hash: format!("{d}"),
        text: text.into(),
        sections: vec![],
        chunks,
        sentences,
        pages: vec![],
    })
}

/// A stand-in embedder for generated collections: a text maps to a vector near one of
/// `centers`, centre and perturbation both drawn from a generator seeded with the
/// text's FNV-1a hash. Deterministic, and cheap enough not to be measured.
#[derive(Debug, Clone)]
pub struct BenchEmbedder {
    /// The model id, which must match the index's.
    pub model_id: String,
    /// The centres of the collection.
    pub centers: Vec<Vec<f32>>,
}

impl Embedder for BenchEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimension(&self) -> usize {
        self.centers.first().map_or(0, Vec::len)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let h = t
                    .bytes()
                    .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                    })
                    .max(1);
                near_center(&self.centers, &mut Rng(h))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_is_deterministic_and_in_range() {
        let (mut a, mut b) = (Rng(7), Rng(7));
        for _ in 0..1000 {
            assert_eq!(a.next(), b.next());
            let u = a.unit();
            assert!((-1.0..1.0).contains(&u), "{u}");
            assert!(a.word(2000) < 2000);
            b.unit();
            b.word(2000);
        }
    }

    #[test]
    fn vectors_near_centres_are_unit_and_close() {
        let mut rng = Rng(3);
        let mut c: Vec<f32> = (0..64).map(|_| rng.unit()).collect();
        normalize(&mut c);
        let v = near_center(std::slice::from_ref(&c), &mut rng);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
        let cos: f32 = v.iter().zip(&c).map(|(a, b)| a * b).sum();
        assert!(cos > 0.9, "{cos}");
    }

    #[test]
    fn embedder_is_deterministic_per_text() {
        let e = BenchEmbedder {
            model_id: "m".into(),
            centers: vec![vec![1.0, 0.0], vec![0.0, 1.0]],
        };
        let a = e.embed(&["alpha", "beta", "alpha"]).unwrap();
        assert_eq!(a[0], a[2]);
        assert_eq!(e.dimension(), 2);
    }
}
