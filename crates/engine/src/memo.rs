//! A bounded memo of vectors embedded at query time.
//!
//! The `window` strategy embeds the sentences around each hit on every query. Queries on
//! the same material (an agent's follow-ups, an evaluation at several budgets, a server
//! under load) ask for the same sentences again; the memo answers those from memory.
//! Keys are a hash of the model id and the text, so vectors of different models never
//! mix. Eviction is first-in, first-out once `capacity` vectors are held.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use excerpt_core::{content_hash, EmbedError, Embedder, TokenCounter};

/// Vectors by text hash, oldest first out.
#[derive(Debug, Default)]
pub(crate) struct VectorMemo {
    map: HashMap<String, Arc<[f32]>>,
    order: VecDeque<String>,
    capacity: usize,
    hits: u64,
    misses: u64,
}

impl VectorMemo {
    /// A memo holding at most `capacity` vectors (0 disables it).
    pub fn new(capacity: usize) -> Self {
        VectorMemo {
            capacity,
            ..Default::default()
        }
    }

    fn insert(&mut self, key: String, v: Arc<[f32]>) {
        if self.capacity == 0 || self.map.contains_key(&key) {
            return;
        }
        while self.map.len() >= self.capacity {
            match self.order.pop_front() {
                Some(old) => {
                    self.map.remove(&old);
                }
                None => break,
            }
        }
        self.order.push_back(key.clone());
        self.map.insert(key, v);
    }

    /// (lookups answered from memory, lookups that had to embed).
    #[cfg(test)]
    pub fn counts(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }
}

/// An [`Embedder`] that answers repeated texts from a shared [`VectorMemo`] and embeds
/// the rest with `inner` in one call.
pub(crate) struct MemoEmbedder<'a> {
    pub inner: &'a dyn Embedder,
    pub memo: &'a Mutex<VectorMemo>,
}

impl MemoEmbedder<'_> {
    fn key(&self, text: &str) -> String {
        content_hash(&[self.inner.model_id().as_bytes(), text.as_bytes()])
    }
}

impl Embedder for MemoEmbedder<'_> {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let keys: Vec<String> = texts.iter().map(|t| self.key(t)).collect();
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        let mut missing: Vec<usize> = Vec::new();
        {
            let mut memo = self.memo.lock().unwrap_or_else(|p| p.into_inner());
            for (i, k) in keys.iter().enumerate() {
                match memo.map.get(k) {
                    Some(v) => out[i] = Some(v.to_vec()),
                    None => missing.push(i),
                }
            }
            memo.hits += (texts.len() - missing.len()) as u64;
            memo.misses += missing.len() as u64;
        }
        if !missing.is_empty() {
            let batch: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let vectors = self.inner.embed(&batch)?;
            if vectors.len() != batch.len() {
                return Err(EmbedError::Inference {
                    message: format!(
                        "embedder returned {} vectors for {} texts",
                        vectors.len(),
                        batch.len()
                    ),
                });
            }
            let mut memo = self.memo.lock().unwrap_or_else(|p| p.into_inner());
            for (&i, v) in missing.iter().zip(vectors) {
                memo.insert(keys[i].clone(), Arc::from(v.as_slice()));
                out[i] = Some(v);
            }
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        self.inner.embed_query(query)
    }

    fn token_counter(&self) -> Option<&dyn TokenCounter> {
        self.inner.token_counter()
    }

    fn languages(&self) -> Option<&[String]> {
        self.inner.languages()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts the texts it is asked to embed; vector = [len, first byte].
    #[derive(Default)]
    struct Counting(AtomicUsize);
    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            "counting"
        }
        fn dimension(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.0.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts
                .iter()
                .map(|t| vec![t.len() as f32, t.bytes().next().unwrap_or(0) as f32])
                .collect())
        }
    }

    #[test]
    fn repeated_texts_are_embedded_once_and_order_is_kept() {
        let inner = Counting::default();
        let memo = Mutex::new(VectorMemo::new(10));
        let e = MemoEmbedder {
            inner: &inner,
            memo: &memo,
        };
        let a = e.embed(&["aa", "b"]).unwrap();
        assert_eq!(a, vec![vec![2.0, 97.0], vec![1.0, 98.0]]);
        let b = e.embed(&["b", "ccc", "aa"]).unwrap();
        assert_eq!(b, vec![vec![1.0, 98.0], vec![3.0, 99.0], vec![2.0, 97.0]]);
        assert_eq!(inner.0.load(Ordering::SeqCst), 3);
        assert_eq!(memo.lock().unwrap().counts(), (2, 3));
    }

    #[test]
    fn capacity_bounds_the_memo_first_in_first_out() {
        let inner = Counting::default();
        let memo = Mutex::new(VectorMemo::new(2));
        let e = MemoEmbedder {
            inner: &inner,
            memo: &memo,
        };
        e.embed(&["a", "b", "c"]).unwrap();
        assert_eq!(memo.lock().unwrap().map.len(), 2);
        // "a" was evicted, "b" and "c" are held.
        e.embed(&["b", "c"]).unwrap();
        assert_eq!(inner.0.load(Ordering::SeqCst), 3);
        e.embed(&["a"]).unwrap();
        assert_eq!(inner.0.load(Ordering::SeqCst), 4);
        // Disabled memo: everything is embedded every time.
        let off = Mutex::new(VectorMemo::new(0));
        let e = MemoEmbedder {
            inner: &inner,
            memo: &off,
        };
        e.embed(&["a"]).unwrap();
        e.embed(&["a"]).unwrap();
        assert_eq!(inner.0.load(Ordering::SeqCst), 6);
    }
}
