/// Hex BLAKE3 hash of some byte strings (length-prefixed, so `("ab","c")` and `("a","bc")`
/// differ). Used for document content hashes and embedding-cache keys.
pub fn content_hash(parts: &[&[u8]]) -> String {
    let mut h = blake3::Hasher::new();
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().to_hex()[..32].to_string()
}
