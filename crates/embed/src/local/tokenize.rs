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
    Ok(encode_checked(tokenizer, inputs, false)?
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

/// One encoded input without padding, with each token's byte range in the input
/// (`None` for the special tokens the tokenizer added).
pub(crate) struct WithOffsets {
    pub ids: Vec<u32>,
    pub types: Vec<u32>,
    pub offsets: Vec<Option<(usize, usize)>>,
}

/// As [`encode_unpadded`], keeping where each token came from (byte offsets), for
/// pooling token vectors over spans of the input.
pub(crate) fn encode_with_offsets<'s, E>(
    tokenizer: &Tokenizer,
    inputs: Vec<E>,
) -> Result<Vec<WithOffsets>, EmbedError>
where
    E: Into<tokenizers::EncodeInput<'s>> + Send,
{
    Ok(encode_checked(tokenizer, inputs, true)?
        .iter()
        .map(|e| {
            let mut out = WithOffsets {
                ids: Vec::new(),
                types: Vec::new(),
                offsets: Vec::new(),
            };
            let rows = e
                .get_ids()
                .iter()
                .zip(e.get_type_ids())
                .zip(e.get_offsets())
                .zip(e.get_special_tokens_mask())
                .zip(e.get_attention_mask());
            for ((((&id, &ty), &(a, b)), &special), &mask) in rows {
                if mask == 0 {
                    continue;
                }
                out.ids.push(id);
                out.types.push(ty);
                out.offsets.push((special == 0).then_some((a, b)));
            }
            out
        })
        .collect())
}

/// Encodes a batch with special tokens, checking one encoding came back per input; byte
/// offsets are tracked only with `offsets` (the fast path skips them).
fn encode_checked<'s, E>(
    tokenizer: &Tokenizer,
    inputs: Vec<E>,
    offsets: bool,
) -> Result<Vec<tokenizers::Encoding>, EmbedError>
where
    E: Into<tokenizers::EncodeInput<'s>> + Send,
{
    let n = inputs.len();
    let encodings = if offsets {
        tokenizer.encode_batch(inputs, true)
    } else {
        tokenizer.encode_batch_fast(inputs, true)
    }
    .map_err(|e| inference_error("tokenization failed", e))?;
    if encodings.len() != n {
        return Err(inference_error(
            "tokenization failed",
            "wrong number of encodings",
        ));
    }
    Ok(encodings)
}
