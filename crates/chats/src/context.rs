//! The context window: which earlier messages fit beside the system prompt, this turn's
//! messages and room for the answer. Older messages are dropped first, whole "units" at a
//! time (a message with the tool results that answer it), so a tool call is never sent
//! without its result or the other way round. Tokens are counted with the model's own
//! tokenizer; each message adds a fixed overhead for the chat template's role markers.

use tessera_models::{ChatMessage, Role};
use tessera_prompts::TokenCounter;

/// Tokens the chat template adds around one message (role markers, separators).
pub const MESSAGE_OVERHEAD_TOKENS: u32 = 4;
/// Tokens reserved for one image input. Providers count images their own way (OpenAI: 85 to
/// about 1,100 by size and detail); this is OpenAI's figure for a 1024×1024 image in high
/// detail, so typical images fit in the room left for them.
pub const IMAGE_TOKENS: u32 = 765;
/// Tokens the template adds to prime the answer.
pub const REPLY_PRIMING_TOKENS: u32 = 3;

/// Messages that fit, in order, with the system prompt first.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    pub messages: Vec<ChatMessage>,
    /// How many earlier messages were left out.
    pub dropped: usize,
    /// Tokens of `messages` as sent (overheads included).
    pub prompt_tokens: u32,
}

/// This turn does not fit even without any history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextOverflow {
    pub needed: u32,
    pub available: u32,
}

/// Tokens one message costs.
pub fn message_tokens(counter: &dyn TokenCounter, message: &ChatMessage) -> u32 {
    let calls: u32 = message
        .tool_calls
        .iter()
        .map(|call| counter.count(&call.name) + counter.count(&call.arguments))
        .sum();
    let images =
        IMAGE_TOKENS.saturating_mul(u32::try_from(message.images.len()).unwrap_or(u32::MAX));
    MESSAGE_OVERHEAD_TOKENS + counter.count(&message.content) + calls + images
}

/// Keeps the system prompt and every message of this turn, then as many of the most recent
/// earlier messages as fit in `budget` tokens.
pub fn fit(
    system: Option<&str>,
    history: Vec<ChatMessage>,
    turn: Vec<ChatMessage>,
    counter: &dyn TokenCounter,
    budget: u32,
) -> Result<Fitted, ContextOverflow> {
    let system = system.map(|text| ChatMessage::new(Role::System, text));
    let fixed: u32 = REPLY_PRIMING_TOKENS
        + system
            .iter()
            .chain(&turn)
            .map(|message| message_tokens(counter, message))
            .sum::<u32>();
    if fixed > budget {
        return Err(ContextOverflow {
            needed: fixed,
            available: budget,
        });
    }
    let units = units(history);
    let mut used = fixed;
    let mut kept = 0;
    for unit in units.iter().rev() {
        let cost: u32 = unit.iter().map(|m| message_tokens(counter, m)).sum();
        if used + cost > budget {
            break;
        }
        used += cost;
        kept += 1;
    }
    let dropped_units = units.len() - kept;
    let dropped = units[..dropped_units].iter().map(Vec::len).sum();
    let messages = system
        .into_iter()
        .chain(units.into_iter().skip(dropped_units).flatten())
        .chain(turn)
        .collect();
    Ok(Fitted {
        messages,
        dropped,
        prompt_tokens: used,
    })
}

/// Splits messages where one can be dropped without orphaning another: a tool result
/// stays with the messages before it back to the call it answers.
fn units(messages: Vec<ChatMessage>) -> Vec<Vec<ChatMessage>> {
    let mut units: Vec<Vec<ChatMessage>> = Vec::new();
    for message in messages {
        match units.last_mut() {
            Some(unit) if message.role == Role::Tool => unit.push(message),
            _ => units.push(vec![message]),
        }
    }
    units
}

#[cfg(test)]
mod tests {
    use tessera_models::{ToolCall, memory::WordCounter};

    use super::*;

    fn user(text: &str) -> ChatMessage {
        ChatMessage::new(Role::User, text)
    }

    fn assistant(text: &str) -> ChatMessage {
        ChatMessage::new(Role::Assistant, text)
    }

    #[test]
    fn everything_fits_in_a_large_window() {
        let fitted = fit(
            Some("be brief"),
            vec![user("a b"), assistant("c")],
            vec![user("d")],
            &WordCounter,
            1000,
        )
        .unwrap();
        assert_eq!(fitted.dropped, 0);
        assert_eq!(fitted.messages.len(), 4);
        assert_eq!(fitted.messages[0].role, Role::System);
        // 3 priming + system (4+2) + history (4+2, 4+1) + turn (4+1)
        assert_eq!(fitted.prompt_tokens, 3 + 6 + 6 + 5 + 5);
    }

    #[test]
    fn oldest_messages_go_first() {
        let history = vec![
            user("one two three"),
            assistant("four"),
            user("five"),
            assistant("six"),
        ];
        // fixed: 3 + 5 (turn) = 8; newest history: 5 + 5 = 10 → budget 18 keeps two.
        let fitted = fit(None, history, vec![user("seven")], &WordCounter, 18).unwrap();
        assert_eq!(fitted.dropped, 2);
        let contents: Vec<_> = fitted.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents, ["five", "six", "seven"]);
        assert_eq!(fitted.prompt_tokens, 18);
    }

    #[test]
    fn tool_calls_and_results_are_dropped_together() {
        let mut call = assistant("");
        call.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "f".into(),
            arguments: "{}".into(),
        });
        let mut result = ChatMessage::new(Role::Tool, "42");
        result.tool_call_id = Some("c1".into());
        let history = vec![user("q"), call, result, assistant("it is 42")];
        // fixed 3 + 5 = 8; last unit (assistant "it is 42") 7 → 15; the call unit costs
        // 4+0+1+1 + 4+1 = 11, which does not fit in 20, so it goes with everything older.
        let fitted = fit(None, history, vec![user("thanks")], &WordCounter, 20).unwrap();
        assert_eq!(fitted.dropped, 3);
        assert!(fitted.messages.iter().all(|m| m.role != Role::Tool));
    }

    #[test]
    fn a_turn_larger_than_the_window_is_refused() {
        assert_eq!(
            fit(
                Some("sys"),
                vec![],
                vec![user("a b c d e f")],
                &WordCounter,
                10
            ),
            Err(ContextOverflow {
                needed: 3 + 5 + 10,
                available: 10
            })
        );
    }
}
