//! How a generation's failure reads in OpenAI's error shape once its stream began (every
//! other problem on `/openai/` paths is rewritten by `routes::dialects`).

use tessera_chats::ChatError;
use tessera_wire::openai::error::{OpenAiError, translate};

use crate::routes::chats::chat_error;

/// A generation's failure as OpenAI reports it in a stream that already began: the problem
/// `/v1` would answer, translated.
pub fn failure(error: &ChatError) -> OpenAiError {
    let problem = chat_error(error.clone());
    translate(problem.status.as_u16(), &problem.body()).1
}
