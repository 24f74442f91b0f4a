//! A problem as plain values (status, code, detail, extra members), so a server that holds
//! its failure typed can render it in a dialect's error shape directly, without writing
//! problem+json and reading it back. The dialects' translators
//! (`openai::error::render`, `anthropic::error::render`) take it; their `translate` reads
//! the same from a problem+json body, for responses that carry no typed failure.

use serde_json::Value;
use tessera_kernel::{FieldError, LocSegment};

/// What went wrong: a sentence, or the invalid values of the request.
#[derive(Debug, Clone, Copy)]
pub enum ProblemDetail<'a> {
    Text(&'a str),
    Fields(&'a [FieldError]),
}

/// One problem, as the server decided it.
#[derive(Debug, Clone, Copy)]
pub struct ProblemParts<'a> {
    /// The HTTP status the problem answers with in `/v1`.
    pub status: u16,
    /// The stable machine-readable code (`not_found`, `model_not_found`…).
    pub code: &'a str,
    pub detail: ProblemDetail<'a>,
    /// Extra members of the problem object, in the order they were added.
    pub extensions: &'a [(String, Value)],
}

impl ProblemParts<'_> {
    /// The request parameter the problem names itself (its `param` member); the first one
    /// added wins, as in the problem+json body.
    pub fn param(&self) -> Option<&str> {
        self.extensions
            .iter()
            .find(|(name, _)| name == "param")
            .and_then(|(_, value)| value.as_str())
    }
}

/// A field error's location as the segments of its path (`["body", "messages", "0"]`).
pub(crate) fn loc_segments(field: &FieldError) -> Vec<String> {
    field
        .loc
        .iter()
        .map(|segment| match segment {
            LocSegment::Field(name) => name.clone(),
            LocSegment::Index(index) => index.to_string(),
        })
        .collect()
}
