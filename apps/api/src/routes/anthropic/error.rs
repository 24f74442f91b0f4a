//! How a generation's failure reads in Anthropic's error shape once its stream began.

use tessera_chats::ChatError;
use tessera_wire::anthropic::error::{AnthropicError, render};

use crate::routes::chats::chat_error;

/// A generation's failure as Anthropic reports it in a stream that already began: the
/// problem `/v1` would answer, rendered in Anthropic's shape.
pub fn failure(error: &ChatError) -> AnthropicError {
    render(&chat_error(error.clone()).parts()).1
}
