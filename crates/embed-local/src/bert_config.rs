//! A BERT checkpoint's `config.json`: the sizes and the activation the encoder is built
//! from. Own type rather than candle-transformers' (whose model catalogue every build would
//! then compile for one struct); other fields of the file are ignored.

use serde::Deserialize;

/// The activation after the intermediate dense layer (`hidden_act`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HiddenAct {
    /// GELU with the exact error function (BERT's `gelu`).
    Gelu,
    /// GELU's tanh approximation.
    #[serde(alias = "gelu_new", alias = "gelu_pytorch_tanh")]
    GeluApproximate,
    Relu,
}

/// Only absolute position embeddings are implemented; a checkpoint with relative ones is
/// refused when it is read rather than embedding wrongly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
enum PositionEmbeddingType {
    #[default]
    Absolute,
}

/// What the encoder needs of a BERT configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct BertConfig {
    pub(crate) vocab_size: usize,
    pub(crate) hidden_size: usize,
    pub(crate) num_hidden_layers: usize,
    pub(crate) num_attention_heads: usize,
    pub(crate) intermediate_size: usize,
    pub(crate) hidden_act: HiddenAct,
    pub(crate) max_position_embeddings: usize,
    pub(crate) type_vocab_size: usize,
    pub(crate) layer_norm_eps: f64,
    /// The prefix some checkpoints put before every tensor name (`bert.`).
    pub(crate) model_type: Option<String>,
    /// Read only to refuse what is not implemented.
    #[serde(default, rename = "position_embedding_type")]
    _position_embedding_type: PositionEmbeddingType,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const MINILM: &str = r#"{"architectures": ["BertModel"], "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 384,
        "initializer_range": 0.02, "intermediate_size": 1536, "layer_norm_eps": 1e-12,
        "max_position_embeddings": 512, "model_type": "bert", "num_attention_heads": 12,
        "num_hidden_layers": 6, "pad_token_id": 0, "position_embedding_type": "absolute",
        "type_vocab_size": 2, "vocab_size": 30522}"#;

    #[test]
    fn reads_a_sentence_transformers_checkpoint_config() {
        let config: BertConfig = serde_json::from_str(MINILM).unwrap();
        assert_eq!(
            (
                config.hidden_size,
                config.num_hidden_layers,
                config.num_attention_heads
            ),
            (384, 6, 12)
        );
        assert_eq!(config.hidden_act, HiddenAct::Gelu);
        assert_eq!(config.model_type.as_deref(), Some("bert"));
    }

    #[test]
    fn refuses_relative_positions_and_unknown_activations() {
        let relative = MINILM.replace("\"absolute\"", "\"relative_key\"");
        assert!(serde_json::from_str::<BertConfig>(&relative).is_err());
        let swish = MINILM.replace("\"gelu\"", "\"swish\"");
        assert!(serde_json::from_str::<BertConfig>(&swish).is_err());
        let missing = MINILM.replace("\"hidden_size\": 384,", "");
        assert!(serde_json::from_str::<BertConfig>(&missing).is_err());
    }
}
