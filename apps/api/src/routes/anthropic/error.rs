//! How a generation's failure reads in Anthropic's error shape once its stream began.

use tessera_chats::ChatError;
use tessera_wire::anthropic::error::{AnthropicError, translate};

use crate::routes::chats::chat_error;

/// A generation's failure as Anthropic reports it in a stream that already began: the
/// problem `/v1` would answer, translated.
pub fn failure(error: &ChatError) -> AnthropicError {
    let problem = chat_error(error.clone());
    translate(problem.status.as_u16(), &problem.body()).1
}
