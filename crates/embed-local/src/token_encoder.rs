//! The late-interaction encoder itself: a text read as ColBERT reads it (`[CLS]`, a marker
//! saying query or passage, the word pieces, `[SEP]`), through the same BERT forward pass as
//! the sentence encoders, every token's last hidden state kept, cut to its leading
//! dimensions and scaled to unit length.

use std::path::Path;

use crate::bert_config::BertConfig;
use candle_core::{Device, Tensor};
use candle_nn::VarBuilder;
use tessera_knowledge::TokenVectors;
use tokenizers::Tokenizer;

use crate::{
    LoadError, LocalLateInteractionModel,
    bert::BertEncoder,
    files::{batch_tokenizer, file_error},
    onnx::dequantize_bert,
    precision::DenseKernel,
};

/// Whether a text is read as a search query or as a passage (each has its marker).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Query,
    Document,
}

/// A batch of texts as the model reads them.
#[derive(Debug)]
struct Read {
    /// `[CLS] marker pieces… [SEP]`, then padding (0) to the batch's longest, row after row.
    ids: Vec<u32>,
    /// 1 for the tokens read, 0 for padding.
    mask: Vec<u32>,
    /// Each text's tokens.
    lengths: Vec<usize>,
    width: usize,
}

/// Tokenizes `texts` (with `[CLS]` and `[SEP]`, cut one short of what is read) and inserts
/// `marker` after `[CLS]`.
fn read(tokenizer: &Tokenizer, marker: u32, texts: &[&str]) -> Result<Read, String> {
    let encodings = tokenizer
        .encode_batch(texts.to_vec(), true)
        .map_err(|e| format!("tokenizer: {e}"))?;
    let lengths: Vec<usize> = encodings.iter().map(|e| e.get_ids().len() + 1).collect();
    let width = lengths.iter().copied().max().unwrap_or(0);
    let rows = encodings.len();
    let mut ids = vec![0u32; rows * width];
    let mut mask = vec![0u32; rows * width];
    for (row, encoding) in encodings.iter().enumerate() {
        let line = &mut ids[row * width..(row + 1) * width];
        if let Some((&first, rest)) = encoding.get_ids().split_first() {
            line[0] = first;
            line[1] = marker;
            line[2..2 + rest.len()].copy_from_slice(rest);
        }
        mask[row * width..row * width + lengths[row]].fill(1);
    }
    Ok(Read {
        ids,
        mask,
        lengths,
        width,
    })
}

/// A BERT encoder whose every token's state is a vector.
pub(crate) struct TokenEncoder {
    encoder: BertEncoder,
    /// Cuts to `tokens - 1`: the marker is inserted after `[CLS]`.
    query_tokenizer: Tokenizer,
    document_tokenizer: Tokenizer,
    model: LocalLateInteractionModel,
    hidden: usize,
    dims: usize,
}

impl TokenEncoder {
    /// Loads `model` from its directory; queries are read up to `query_tokens`, passages up
    /// to `document_tokens` (markers included), vectors keep their first `dims` values.
    pub(crate) fn load(
        dir: &Path,
        model: LocalLateInteractionModel,
        (query_tokens, document_tokens): (usize, usize),
        dims: usize,
        kernel: DenseKernel,
    ) -> Result<Self, LoadError> {
        let path = model
            .weights_in(dir)
            .ok_or_else(|| LoadError::NotFound(dir.to_path_buf()))?;
        let bytes = std::fs::read(&path).map_err(|e| file_error(&path, e))?;
        let bert = dequantize_bert(&bytes).map_err(|e| file_error(&path, e))?;
        let config: BertConfig =
            serde_json::from_value(bert.config).map_err(|e| file_error(&path, e))?;
        if dims == 0 || dims > config.hidden_size {
            return Err(LoadError::Model(format!(
                "token vectors of {dims} dimensions: the model's states have {}",
                config.hidden_size
            )));
        }
        let weights = VarBuilder::from_tensors(bert.tensors, candle_core::DType::F32, &Device::Cpu);
        let encoder = BertEncoder::load(weights, &config, kernel)
            .map_err(|e| LoadError::Model(e.to_string()))?;
        // The packaged tokenizer pads every text to 512 tokens; batches are padded here.
        let tokenizer = |tokens: usize| -> Result<Tokenizer, LoadError> {
            let mut tokenizer = batch_tokenizer(
                dir,
                tokens.min(config.max_position_embeddings).saturating_sub(1),
            )?;
            tokenizer.with_padding(None);
            Ok(tokenizer)
        };
        Ok(Self {
            encoder,
            query_tokenizer: tokenizer(query_tokens)?,
            document_tokenizer: tokenizer(document_tokens)?,
            model,
            hidden: config.hidden_size,
            dims,
        })
    }

    pub(crate) fn dims(&self) -> usize {
        self.dims
    }

    /// The token vectors of one batch of texts, in order.
    pub(crate) fn encode(&self, texts: &[&str], role: Role) -> Result<Vec<TokenVectors>, String> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let (tokenizer, marker) = match role {
            Role::Query => (&self.query_tokenizer, self.model.query_marker()),
            Role::Document => (&self.document_tokenizer, self.model.document_marker()),
        };
        let Read {
            ids,
            mask,
            lengths,
            width,
        } = read(tokenizer, marker, texts)?;
        let rows = lengths.len();
        self.forward(ids, mask, (rows, width), &lengths)
            .map_err(|e| format!("model: {e}"))
    }

    fn forward(
        &self,
        ids: Vec<u32>,
        mask: Vec<u32>,
        (rows, width): (usize, usize),
        lengths: &[usize],
    ) -> candle_core::Result<Vec<TokenVectors>> {
        let device = &Device::Cpu;
        let ids = Tensor::from_vec(ids, (rows, width), device)?;
        let mask = Tensor::from_vec(mask, (rows, width), device)?;
        let states = self
            .encoder
            .forward(&ids, &mask, None)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let (hidden, dims) = (self.hidden, self.dims);
        lengths
            .iter()
            .enumerate()
            .map(|(row, &length)| {
                let mut values = Vec::with_capacity(length * dims);
                for token in 0..length {
                    let start = (row * width + token) * hidden;
                    let state = &states[start..start + dims];
                    let norm = state.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                    values.extend(state.iter().map(|v| v / norm));
                }
                TokenVectors::new(dims, values)
                    .ok_or_else(|| candle_core::Error::Msg("token vectors of no width".into()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn tokenizer(tokens: usize) -> Tokenizer {
        let root = std::env::var_os("TESSERA_MODELS_DIR").map_or_else(
            || {
                std::path::PathBuf::from(std::env::var_os("HOME").unwrap())
                    .join(".cache/tessera-models")
            },
            std::path::PathBuf::from,
        );
        let dir = LocalLateInteractionModel::AnswerAiColbertSmallV1
            .find(&root)
            .expect("answerai-colbert-small-v1 under the models folder: run `just models`");
        let mut tokenizer = batch_tokenizer(&dir, tokens - 1).unwrap();
        tokenizer.with_padding(None);
        tokenizer
    }

    /// `[CLS]`, the marker, the text's word pieces, `[SEP]`; shorter rows padded and masked.
    #[test]
    fn texts_are_read_with_the_marker_after_cls() {
        let tokenizer = tokenizer(32);
        let model = LocalLateInteractionModel::AnswerAiColbertSmallV1;
        let pieces: Vec<u32> = {
            let encoding = tokenizer.encode("invoices due", false).unwrap();
            encoding.get_ids().to_vec()
        };
        for marker in [model.query_marker(), model.document_marker()] {
            let read = read(
                &tokenizer,
                marker,
                &["invoices due", "when are invoices due"],
            )
            .unwrap();
            let mut expected = vec![101, marker];
            expected.extend(&pieces);
            expected.push(102);
            assert_eq!(read.lengths[0], expected.len());
            assert_eq!(read.width, read.lengths[1]);
            assert!(read.lengths[1] > read.lengths[0]);
            let first = &read.ids[..read.width];
            assert_eq!(&first[..expected.len()], expected.as_slice());
            assert!(first[expected.len()..].iter().all(|&id| id == 0));
            let mask = &read.mask[..read.width];
            assert_eq!(mask.iter().sum::<u32>() as usize, expected.len());
            let second = &read.ids[read.width..];
            assert_eq!(
                (second[0], second[1], second[read.width - 1]),
                (101, marker, 102)
            );
        }
        // ColBERT's query marker is `[unused0]`, its passage marker `[unused1]`.
        assert_eq!(
            tokenizer.id_to_token(model.query_marker()).as_deref(),
            Some("[unused0]")
        );
        assert_eq!(
            tokenizer.id_to_token(model.document_marker()).as_deref(),
            Some("[unused1]")
        );
    }

    /// A long text is cut to what is read, markers included, and still ends with `[SEP]`.
    #[test]
    fn long_texts_are_cut_to_what_is_read() {
        let tokenizer = tokenizer(300);
        let text = "statins lower cholesterol ".repeat(200);
        let read = read(&tokenizer, 2, &[text.as_str()]).unwrap();
        assert_eq!(read.lengths, vec![300]);
        assert_eq!((read.ids[0], read.ids[1], read.ids[299]), (101, 2, 102));
    }
}
