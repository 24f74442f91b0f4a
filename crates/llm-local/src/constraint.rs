//! Constrained decoding: a JSON Schema becomes a grammar (llguidance) that masks, at every
//! step, the tokens that cannot continue a conforming document, so a structured answer of
//! the embedded model always parses and validates. The grammar sees the model's own
//! vocabulary (token bytes from the GGUF tokenizer; special tokens marked as such).

use std::sync::Arc;

use llguidance::{
    Matcher, ParserFactory,
    api::TopLevelGrammar,
    toktrie::{ApproximateTokEnv, TokEnv, TokRxInfo, TokTrie},
};

use crate::tokenizer::GgufTokenizer;

/// Compiles grammars for one model's vocabulary.
pub(crate) struct Grammars {
    factory: ParserFactory,
}

impl Grammars {
    /// `end` ends a turn: the grammar allows it once the document is complete.
    pub(crate) fn new(tokenizer: &GgufTokenizer, end: u32) -> Result<Self, String> {
        let size = tokenizer.vocab_size();
        let words: Vec<Vec<u8>> = (0..size)
            .map(|id| {
                if tokenizer.is_special(id) {
                    let mut word = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                    word.extend_from_slice(tokenizer.token_name(id).as_bytes());
                    word
                } else {
                    tokenizer.token_bytes(id).to_vec()
                }
            })
            .collect();
        let mut info = TokRxInfo::new(size, end);
        info.tok_end_of_turn = Some(end);
        let trie = TokTrie::from(&info, &words);
        let env: TokEnv = Arc::new(ApproximateTokEnv::new(trie));
        let mut factory = ParserFactory::new_simple(&env).map_err(|e| e.to_string())?;
        factory.quiet();
        Ok(Self { factory })
    }

    /// A matcher that accepts exactly the JSON documents valid against `schema`.
    pub(crate) fn json_schema(&self, schema: &serde_json::Value) -> Result<Matcher, String> {
        let grammar = TopLevelGrammar::from_json_schema(schema.clone());
        let parser = self
            .factory
            .create_parser(grammar)
            .map_err(|e| format!("the schema cannot be compiled to a grammar: {e}"))?;
        Ok(Matcher::new(Ok(parser)))
    }
}

/// Sets every token the matcher does not allow next to negative infinity.
pub(crate) fn mask_logits(matcher: &mut Matcher, logits: &mut [f32]) -> Result<(), String> {
    let allowed = matcher.compute_mask().map_err(|e| e.to_string())?;
    for (id, logit) in logits.iter_mut().enumerate() {
        if !allowed.is_allowed(id as u32) {
            *logit = f32::NEG_INFINITY;
        }
    }
    Ok(())
}
