//! How a generation's failure reads in OpenAI's error shape once its stream began (every
//! other problem on `/openai/` paths is rewritten by `routes::dialects`).

use tessera_chats::ChatError;
use tessera_wire::openai::error::{OpenAiError, render};

use crate::routes::chats::chat_error;

/// A generation's failure as OpenAI reports it in a stream that already began: the problem
/// `/v1` would answer, rendered in OpenAI's shape.
pub fn failure(error: &ChatError) -> OpenAiError {
    render(&chat_error(error.clone()).parts()).1
}
