//! The forward pass against candle's `quantized_llama` with every matrix dequantized to f32
//! (the exact reference: the file's weights, no quantized activations), on the real SmolLM2.
// Test code: failing loudly is the point.
#![allow(clippy::expect_used, clippy::panic)]

use std::{fs::File, io::BufReader, io::Cursor};

use candle_core::{
    Device, Tensor,
    quantized::{GgmlDType, QTensor, gguf_file},
};
use candle_transformers::models::quantized_llama::ModelWeights;

use super::{InstructionSet, Llama, isa::each_available};
use crate::{testing, tokenizer::GgufTokenizer};

fn open() -> (gguf_file::Content, BufReader<File>) {
    let mut reader = BufReader::new(File::open(testing::model_path()).expect("model file"));
    let content = gguf_file::Content::read(&mut reader).expect("GGUF");
    (content, reader)
}

/// candle's llama over the file with every matrix dequantized to f32.
fn reference() -> ModelWeights {
    let (content, mut reader) = open();
    let mut tensors = Vec::new();
    for name in content.tensor_infos.keys() {
        let tensor = content
            .tensor(&mut reader, name, &Device::Cpu)
            .expect("tensor");
        let tensor = match tensor.shape().rank() {
            2 => QTensor::quantize(
                &tensor.dequantize(&Device::Cpu).expect("dequantize"),
                GgmlDType::F32,
            )
            .expect("f32"),
            _ => tensor,
        };
        tensors.push((name.clone(), tensor));
    }
    let metadata: Vec<(&str, &gguf_file::Value)> = content
        .metadata
        .iter()
        .filter(|(key, _)| !key.starts_with("tokenizer."))
        .map(|(key, value)| (key.as_str(), value))
        .collect();
    let tensors: Vec<(&str, &QTensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let mut file = Cursor::new(Vec::new());
    gguf_file::write(&mut file, &metadata, &tensors).expect("write");
    let bytes = file.into_inner();
    let content = gguf_file::Content::read(&mut Cursor::new(&bytes)).expect("read back");
    ModelWeights::from_gguf(content, &mut Cursor::new(&bytes), &Device::Cpu).expect("candle")
}

fn engine(threads: usize) -> (Llama, GgufTokenizer) {
    engine_on(threads, InstructionSet::widest(None))
}

fn engine_on(threads: usize, isa: InstructionSet) -> (Llama, GgufTokenizer) {
    let (content, mut reader) = open();
    let tokenizer = GgufTokenizer::from_gguf(&content).expect("tokenizer");
    let model = Llama::load(&content, &mut reader, threads, isa).expect("the model loads");
    (model, tokenizer)
}

fn reference_logits(model: &mut ModelWeights, tokens: &[u32], position: usize) -> Vec<f32> {
    let input = Tensor::new(tokens, &Device::Cpu)
        .expect("input")
        .unsqueeze(0)
        .expect("batch");
    model
        .forward(&input, position)
        .expect("forward")
        .flatten_all()
        .expect("flat")
        .to_vec1()
        .expect("logits")
}

fn argmax(logits: &[f32]) -> u32 {
    let (index, _) = logits
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .expect("logits");
    index as u32
}

fn largest_difference(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max)
}

const PROMPT: &str = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by \
                      Hugging Face<|im_end|>\n<|im_start|>user\nWhat is the capital of \
                      France?<|im_end|>\n<|im_start|>assistant\n";

/// Every instruction set's kernels this CPU has (the others are named as skipped).
#[test]
fn logits_match_candles_f32_reference_over_a_prompt_and_eight_greedy_steps() {
    for isa in each_available() {
        matches_the_reference(isa);
    }
}

fn matches_the_reference(isa: InstructionSet) {
    let mut reference = reference();
    let (mut model, tokenizer) = engine_on(2, isa);
    let prompt = tokenizer.encode(PROMPT).expect("tokens");
    let mut ours = model.forward(&prompt, 0).expect("forward");
    let mut theirs = reference_logits(&mut reference, &prompt, 0);
    let mut answer = Vec::new();
    for position in prompt.len()..prompt.len() + 8 {
        // Prompts run on f32 activations, generated tokens on 16-bit ones (`int16`); logits
        // span about 30.
        let difference = largest_difference(&ours, &theirs);
        assert!(
            difference < 2e-2,
            "{isa:?}: logits differ by up to {difference}"
        );
        let token = argmax(&ours);
        assert_eq!(token, argmax(&theirs), "{isa:?}");
        answer.push(token);
        ours = model.forward(&[token], position).expect("forward");
        theirs = reference_logits(&mut reference, &[token], position);
    }
    let text: Vec<u8> = answer
        .iter()
        .flat_map(|t| tokenizer.token_bytes(*t).to_vec())
        .collect();
    let text = String::from_utf8_lossy(&text);
    assert!(text.contains("Paris"), "{isa:?}: {text:?}");
}

#[test]
fn a_prompt_in_one_pass_or_token_by_token_and_on_one_or_two_threads_agrees() {
    for isa in each_available() {
        passes_agree(isa);
    }
}

fn passes_agree(isa: InstructionSet) {
    let (mut two, tokenizer) = engine_on(2, isa);
    let (mut one, _) = engine_on(1, isa);
    let prompt = tokenizer.encode(PROMPT).expect("tokens");
    let batched = two.forward(&prompt, 0).expect("forward");
    let mut stepwise = Vec::new();
    for (position, token) in prompt.iter().enumerate() {
        stepwise = one.forward(&[*token], position).expect("forward");
    }
    // One pass runs on f32 activations, token by token on 16-bit ones. Read whole on 16-bit
    // ones, a prompt's small differences can flip roundings of later activations: measured
    // 0.006 (AVX2), 0.008 (portable) and 0.021 (AVX-512) on logits that span about 30,
    // where each of the three stays within 0.008 of candle's f32 reference when only the
    // generated tokens take 16 bits (the test above).
    let difference = largest_difference(&batched, &stepwise);
    assert!(
        difference < 3e-2,
        "{isa:?}: logits differ by up to {difference}"
    );

    // A new conversation (position 0) forgets the old one.
    let again = one.forward(&prompt, 0).expect("forward");
    assert!(largest_difference(&batched, &again) < 1e-3, "{isa:?}");
}

#[test]
fn bad_positions_and_tokens_are_errors_not_panics() {
    let (mut model, _) = engine(1);
    assert!(model.forward(&[1, 2], 5).is_err(), "a gap in the cache");
    assert!(model.forward(&[], 0).is_err(), "no tokens");
    assert!(
        model.forward(&[u32::MAX], 0).is_err(),
        "outside the vocabulary"
    );
    assert!(model.forward(&[1, 2], 0).is_ok());
}
