//! Tokenizer set-up and batch encoding shared by the embedder and the cross-encoder.

use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer};

use super::inference_error;
use excerpt_core::EmbedError;

/// Token ids and type ids of one encoded input, without padding.
pub(crate) type Unpadded = (Vec<u32>, Vec<u32>);

/// Padding to the longest input of a batch: the tokenizer's own padding settings
/// (pad token, side) if `tokenizer.json` has any, else padding with `pad_id`; never to
/// a fixed length or a multiple of one. The padding is dropped again by
/// [`encode_unpadded`], so it only keeps batch encoding consistent.
pub(crate) fn batch_longest_padding(tokenizer: &Tokenizer, pad_id: usize) -> PaddingParams {
    let mut padding = tokenizer
        .get_padding()
        .cloned()
        .unwrap_or_else(|| PaddingParams {
            pad_id: pad_id as u32,
            ..PaddingParams::default()
        });
    padding.strategy = PaddingStrategy::BatchLongest;
    padding.pad_to_multiple_of = None;
    padding
}

/// Encodes a batch and drops the padding the tokenizer added (the positions the
/// attention mask marks as not real), so each input runs at its own length.
pub(crate) fn encode_unpadded<'s, E>(
    tokenizer: &Tokenizer,
    inputs: Vec<E>,
) -> Result<Vec<Unpadded>, EmbedError>
where
    E: Into<tokenizers::EncodeInput<'s>> + Send,
{
    let n = inputs.len();
    let encodings = tokenizer
        .encode_batch_fast(inputs, true)
        .map_err(|e| inference_error("tokenization failed", e))?;
    if encodings.len() != n {
        return Err(inference_error(
            "tokenization failed",
            "wrong number of encodings",
        ));
    }
    Ok(encodings
        .iter()
        .map(|e| {
            let keep = e.get_attention_mask();
            let pick = |xs: &[u32]| -> Vec<u32> {
                xs.iter()
                    .zip(keep)
                    .filter(|(_, &m)| m != 0)
                    .map(|(&x, _)| x)
                    .collect()
            };
            (pick(e.get_ids()), pick(e.get_type_ids()))
        })
        .collect())
}
