//! Reading a BERT model shipped as an ONNX file with 8-bit weights (dynamic quantisation, as
//! `onnxruntime.quantization` writes it): its weights come back in `f32` under Hugging Face's
//! tensor names, with the configuration the graph implies, so the model runs on the same
//! forward pass as a `safetensors` checkpoint. Only what that needs of ONNX is decoded: the
//! initializers, the nodes' names, inputs and outputs, and constant tensors.

use std::collections::HashMap;

use candle_core::{Device, Tensor};
use prost::Message;

/// ONNX's `ModelProto`, with the one field read here.
#[derive(Clone, PartialEq, Message)]
struct ModelProto {
    #[prost(message, optional, tag = "7")]
    graph: Option<GraphProto>,
}

#[derive(Clone, PartialEq, Message)]
struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    node: Vec<NodeProto>,
    #[prost(message, repeated, tag = "5")]
    initializer: Vec<TensorProto>,
}

#[derive(Clone, PartialEq, Message)]
struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    output: Vec<String>,
    #[prost(string, tag = "4")]
    op_type: String,
    #[prost(message, repeated, tag = "5")]
    attribute: Vec<AttributeProto>,
}

#[derive(Clone, PartialEq, Message)]
struct AttributeProto {
    #[prost(message, optional, tag = "5")]
    t: Option<TensorProto>,
}

#[derive(Clone, PartialEq, Message)]
struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    dims: Vec<i64>,
    #[prost(int32, tag = "2")]
    data_type: i32,
    #[prost(float, repeated, tag = "4")]
    float_data: Vec<f32>,
    #[prost(int32, repeated, tag = "5")]
    int32_data: Vec<i32>,
    #[prost(int64, repeated, tag = "7")]
    int64_data: Vec<i64>,
    #[prost(string, tag = "8")]
    name: String,
    #[prost(bytes = "vec", tag = "9")]
    raw_data: Vec<u8>,
}

/// ONNX's element types used by quantised BERT models.
const FLOAT: i32 = 1;
const UINT8: i32 = 2;
const INT8: i32 = 3;
const INT64: i32 = 7;

impl TensorProto {
    fn shape(&self) -> Result<Vec<usize>, String> {
        self.dims
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| format!("{}: negative dimension", self.name)))
            .collect()
    }

    fn len(&self) -> Result<usize, String> {
        Ok(self.shape()?.iter().product())
    }

    /// The values as `f32`, whatever their element type.
    fn values(&self) -> Result<Vec<f32>, String> {
        let raw = &self.raw_data;
        let values: Vec<f32> = match self.data_type {
            FLOAT if !raw.is_empty() => raw
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            FLOAT => self.float_data.clone(),
            UINT8 if !raw.is_empty() => raw.iter().map(|&b| f32::from(b)).collect(),
            INT8 if !raw.is_empty() => raw
                .iter()
                .map(|&b| f32::from(i8::from_le_bytes([b])))
                .collect(),
            // Small 8-bit tensors (zero points) are written as int32 values.
            UINT8 | INT8 => self.int32_data.iter().map(|&v| v as f32).collect(),
            other => return Err(format!("{}: element type {other} is not read", self.name)),
        };
        if values.len() != self.len()? {
            return Err(format!(
                "{}: {} values for the shape {:?}",
                self.name,
                values.len(),
                self.dims
            ));
        }
        Ok(values)
    }

    fn int64s(&self) -> Vec<i64> {
        if self.data_type == INT64 && !self.raw_data.is_empty() {
            return self
                .raw_data
                .chunks_exact(8)
                .map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .collect();
        }
        self.int64_data.clone()
    }
}

/// A quantised BERT model's weights in `f32`, and the configuration they imply.
pub(crate) struct DequantizedBert {
    /// Hugging Face's names (`bert.encoder.layer.0.attention.self.query.weight`, …,
    /// `bert.pooler.dense.weight`, `classifier.weight`; a bare encoder's without `bert.`),
    /// linear weights as `(out, in)`.
    pub tensors: HashMap<String, Tensor>,
    /// A `candle_transformers` BERT configuration, as JSON.
    pub config: serde_json::Value,
}

/// Decodes an ONNX file's bytes into `f32` weights. Fails with what it could not read: a
/// file that is not ONNX, or a graph that is not a dynamically quantised BERT.
pub(crate) fn dequantize_bert(bytes: &[u8]) -> Result<DequantizedBert, String> {
    let model = ModelProto::decode(bytes).map_err(|e| format!("not an ONNX model: {e}"))?;
    let graph = model.graph.ok_or("the ONNX model has no graph")?;
    let initializers: HashMap<&str, &TensorProto> = graph
        .initializer
        .iter()
        .map(|t| (t.name.as_str(), t))
        .collect();
    let get = |name: &str| {
        initializers
            .get(name)
            .copied()
            .ok_or_else(|| format!("the graph has no initializer `{name}`"))
    };
    // (q - zero point) × scale, the inverse of the quantiser's rounding; one scale for the
    // tensor, or one per column (per output feature of a `(in, out)` weight).
    let dequantize = |base: &str| -> Result<(Vec<usize>, Vec<f32>), String> {
        let quantized = get(&format!("{base}_quantized"))?;
        let shape = quantized.shape()?;
        let columns = shape.last().copied().unwrap_or(1);
        let scales = per_column(get(&format!("{base}_scale"))?, columns)?;
        let zeros = per_column(get(&format!("{base}_zero_point"))?, columns)?;
        let values = quantized
            .values()?
            .into_iter()
            .enumerate()
            .map(|(i, q)| {
                let column = i % columns;
                (q - zeros[column]) * scales[column]
            })
            .collect();
        Ok((shape, values))
    };
    let tensor = |shape: Vec<usize>, values: Vec<f32>| {
        Tensor::from_vec(values, shape, &Device::Cpu).map_err(|e| e.to_string())
    };
    // A classifier's graph names its encoder `bert.…`; a bare encoder's (a sentence
    // embedding model's) has no prefix.
    let prefix = if initializers.contains_key("bert.embeddings.word_embeddings.weight_quantized") {
        "bert."
    } else {
        ""
    };
    let mut tensors = HashMap::new();
    // Unquantised tensors keep their names (biases, layer norms).
    for initializer in &graph.initializer {
        let name = initializer.name.as_str();
        if initializer.data_type == FLOAT
            && !name.ends_with("_scale")
            && !name.starts_with("onnx::")
            && !name.starts_with('/')
        {
            tensors.insert(
                name.to_owned(),
                tensor(initializer.shape()?, initializer.values()?)?,
            );
        }
    }
    for embedding in ["word", "position", "token_type"] {
        let base = format!("{prefix}embeddings.{embedding}_embeddings.weight");
        let (shape, values) = dequantize(&base)?;
        tensors.insert(base, tensor(shape, values)?);
    }
    // Each dense layer is a `MatMulInteger` whose weights are `(in, out)`; the layer's name
    // is the weights' own, or else the path of the node's output.
    for node in graph.node.iter().filter(|n| n.op_type == "MatMulInteger") {
        let (Some(weights), Some(output)) = (node.input.get(1), node.output.first()) else {
            return Err("a MatMulInteger node without weights".into());
        };
        let Some(base) = weights.strip_suffix("_quantized") else {
            continue;
        };
        let name = if base.starts_with("onnx::") {
            layer_of(output).ok_or_else(|| format!("no layer name in `{output}`"))?
        } else {
            base.strip_suffix(".weight").unwrap_or(base).to_owned()
        };
        let (shape, values) = dequantize(base)?;
        let weight = tensor(shape, values)?
            .t()
            .and_then(|t| t.contiguous())
            .map_err(|e| e.to_string())?;
        tensors.insert(format!("{name}.weight"), weight);
    }
    let config = config_of(&graph, &tensors, prefix)?;
    Ok(DequantizedBert { tensors, config })
}

/// A quantization parameter as one value per column: a single value repeated, or `columns`
/// values.
fn per_column(tensor: &TensorProto, columns: usize) -> Result<Vec<f32>, String> {
    match tensor.values()?.as_slice() {
        [value] => Ok(vec![*value; columns]),
        values if values.len() == columns => Ok(values.to_vec()),
        values => Err(format!(
            "{}: {} values, expected one or one per column ({columns})",
            tensor.name,
            values.len()
        )),
    }
}

/// `/bert/encoder/layer.0/attention/self/query/MatMul_output_0_output_quantized` →
/// `bert.encoder.layer.0.attention.self.query`.
fn layer_of(output: &str) -> Option<String> {
    let path = output.strip_prefix('/')?;
    let (layer, _) = path.rsplit_once('/')?;
    Some(layer.replace('/', "."))
}

/// The configuration: sizes from the tensors' shapes, the number of attention heads from
/// the graph (the constant its first attention layer reshapes queries with).
fn config_of(
    graph: &GraphProto,
    tensors: &HashMap<String, Tensor>,
    prefix: &str,
) -> Result<serde_json::Value, String> {
    let dims = |name: &str| {
        tensors
            .get(&format!("{prefix}{name}"))
            .map(|t| t.dims().to_vec())
            .ok_or_else(|| format!("the model has no `{name}`"))
    };
    let words = dims("embeddings.word_embeddings.weight")?;
    let positions = dims("embeddings.position_embeddings.weight")?;
    let types = dims("embeddings.token_type_embeddings.weight")?;
    let intermediate = dims("encoder.layer.0.intermediate.dense.weight")?;
    let layers = (0..)
        .take_while(|i| {
            tensors.contains_key(&format!("{prefix}encoder.layer.{i}.output.dense.weight"))
        })
        .count();
    let (vocab, hidden) = (words[0], words[1]);
    let heads = attention_heads(graph, hidden)?;
    Ok(serde_json::json!({
        "model_type": "bert",
        "vocab_size": vocab,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": intermediate[0],
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.0,
        "max_position_embeddings": positions[0],
        "type_vocab_size": types[0],
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
    }))
}

/// The heads of the first attention layer: its query is reshaped to
/// `(batch, tokens, heads, head size)` by a `Concat` of constants.
fn attention_heads(graph: &GraphProto, hidden: usize) -> Result<usize, String> {
    let constants: HashMap<&str, Vec<i64>> = graph
        .node
        .iter()
        .filter(|n| n.op_type == "Constant")
        .filter_map(|n| {
            let value = n.attribute.iter().find_map(|a| a.t.as_ref())?;
            Some((n.output.first()?.as_str(), value.int64s()))
        })
        .collect();
    let reshape = graph
        .node
        .iter()
        .find(|n| {
            n.op_type == "Reshape"
                && n.input
                    .first()
                    .is_some_and(|i| i.contains("layer.0/attention/self/query"))
        })
        .ok_or("no reshape of the first attention layer's query")?;
    let shape = reshape.input.get(1).ok_or("a reshape without its shape")?;
    let concat = graph
        .node
        .iter()
        .find(|n| n.op_type == "Concat" && n.output.first() == Some(shape))
        .ok_or("the query's shape is not a Concat")?;
    let parts: Vec<i64> = concat
        .input
        .iter()
        .filter_map(|i| constants.get(i.as_str()))
        .flatten()
        .copied()
        .collect();
    match parts.as_slice() {
        [.., heads, size] if *heads > 0 && usize::try_from(heads * size).ok() == Some(hidden) => {
            usize::try_from(*heads).map_err(|e| e.to_string())
        }
        _ => Err(format!(
            "the query's shape {parts:?} does not split {hidden} into heads"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_names_come_from_the_output_path() {
        assert_eq!(
            layer_of("/bert/encoder/layer.3/attention/self/query/MatMul_output_0_output_quantized")
                .as_deref(),
            Some("bert.encoder.layer.3.attention.self.query")
        );
        assert_eq!(
            layer_of("/bert/pooler/dense/Gemm_output_0_MatMul_output_quantized").as_deref(),
            Some("bert.pooler.dense")
        );
        assert_eq!(layer_of("logits_MatMul_output_quantized"), None);
    }

    #[test]
    fn bytes_that_are_not_onnx_are_refused_with_a_reason() {
        let error = dequantize_bert(b"PK\x03\x04 a zip file")
            .err()
            .unwrap_or_default();
        assert!(error.contains("ONNX"), "{error}");
        let error = dequantize_bert(&[]).err().unwrap_or_default();
        assert!(error.contains("no graph"), "{error}");
    }

    /// bge-small's file quantizes each output feature with its own scale, the
    /// cross-encoder's one scale per tensor: both read as one value per column.
    #[test]
    fn scales_are_per_tensor_or_per_column() {
        let floats = |values: &[f32]| TensorProto {
            dims: vec![values.len() as i64],
            data_type: FLOAT,
            float_data: values.to_vec(),
            name: "scale".into(),
            ..TensorProto::default()
        };
        assert_eq!(per_column(&floats(&[0.5]), 3).ok(), Some(vec![0.5; 3]));
        assert_eq!(
            per_column(&floats(&[0.5, 1.0, 2.0]), 3).ok(),
            Some(vec![0.5, 1.0, 2.0])
        );
        let error = per_column(&floats(&[0.5, 1.0]), 3)
            .err()
            .unwrap_or_default();
        assert!(error.contains("one per column"), "{error}");
    }

    #[test]
    fn eight_bit_values_dequantize_by_zero_point_and_scale() {
        let tensor = TensorProto {
            dims: vec![3],
            data_type: UINT8,
            raw_data: vec![0, 86, 255],
            name: "w".into(),
            ..TensorProto::default()
        };
        assert_eq!(tensor.values().ok(), Some(vec![0.0, 86.0, 255.0]));
        let signed = TensorProto {
            dims: vec![2],
            data_type: INT8,
            raw_data: vec![0xff, 0x7f],
            name: "w".into(),
            ..TensorProto::default()
        };
        assert_eq!(signed.values().ok(), Some(vec![-1.0, 127.0]));
        let short = TensorProto {
            dims: vec![4],
            ..signed
        };
        assert!(short.values().is_err());
    }
}
