//! Cancelling one answer: the rules the OpenAI Responses API's `cancel` needs, kept with the
//! chats they are about.

use tessera_kernel::Caller;

use crate::{ChatError, ChatId, ChatRecord, ChatService, ChatStatus, MessageId, hub};

/// How a request to cancel an answer ended.
#[derive(Debug)]
pub enum AnswerCancellation {
    /// The answer is not generating (it is stored, or its generation already ended): nothing
    /// to cancel. The chat as it is.
    NotRunning(ChatRecord),
    /// Another instance generates it; only that instance can stop it.
    Elsewhere,
    /// Stopped here; the chat once the generation recorded its end.
    Cancelled(ChatRecord),
}

impl ChatService {
    /// Cancels the generation of `answer`, the chat's answer being generated, and waits for
    /// the generation to record its end (failed, [`crate::CANCELLED`], billed for what the
    /// model used). A deleted chat is not found: it comes back only by being restored.
    pub async fn cancel_answer(
        &self,
        caller: &Caller,
        chat: &ChatId,
        answer: &MessageId,
    ) -> Result<AnswerCancellation, ChatError> {
        let record = self.get(caller, chat).await?;
        if record.chat.deleted_at.is_some() {
            return Err(ChatError::NotFound(chat.clone()));
        }
        let stored = record.messages.iter().any(|message| &message.id == answer);
        if stored || record.chat.status != Some(ChatStatus::Generating) {
            return Ok(AnswerCancellation::NotRunning(record));
        }
        // Listen first, so the end of the generation is seen once it is stopped.
        let Some(attached) = self
            .hub()
            .subscribe(chat)
            .filter(|attached| &attached.message == answer)
        else {
            return Ok(AnswerCancellation::Elsewhere);
        };
        self.hub().cancel(chat);
        hub::final_event(attached.events).await;
        Ok(AnswerCancellation::Cancelled(self.get(caller, chat).await?))
    }
}
