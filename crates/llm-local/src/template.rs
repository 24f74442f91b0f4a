//! The ChatML prompt of SmolLM2's GGUF chat template.
//!
//! The Jinja template in `tokenizer.chat_template` is not interpreted (that would need a
//! template engine): the ChatML layout is hard-coded, and only the default system prompt the
//! template inserts when the conversation has none is read from it.

use tessera_models::{ChatMessage, Role, ToolSpec};

/// The default system prompt of SmolLM2's template, used when the GGUF has no readable one.
pub(crate) const FALLBACK_SYSTEM_PROMPT: &str =
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

const SYSTEM_START: &str = "<|im_start|>system\n";

/// The system prompt a ChatML template inserts when none is given, if it has one.
pub(crate) fn default_system_prompt(template: &str) -> Option<String> {
    let start = template.find(SYSTEM_START)? + SYSTEM_START.len();
    let end = template.get(start..)?.find("<|im_end|>")? + start;
    let prompt = template.get(start..end)?;
    // A prompt taken from a variable (`{{ ... }}`) is not a literal default.
    (!prompt.is_empty() && !prompt.contains("{{") && !prompt.contains("{%"))
        .then(|| prompt.to_owned())
}

/// The conversation as a ChatML prompt that ends with the opened assistant turn. Tools are
/// described at the end of the system prompt; earlier tool calls are written as
/// `<tool_call>{"name": …, "arguments": …}</tool_call>` in their assistant turn.
pub(crate) fn render(
    messages: &[ChatMessage],
    default_system: Option<&str>,
    tools: &[ToolSpec],
) -> String {
    let mut prompt = String::new();
    let has_system = messages.first().is_some_and(|m| m.role == Role::System);
    let mut system = match (messages.first(), default_system) {
        (Some(first), _) if has_system => Some(first.content.clone()),
        (_, Some(default)) => Some(default.to_owned()),
        _ => None,
    };
    if !tools.is_empty() {
        let text = system.get_or_insert_with(String::new);
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&describe_tools(tools));
    }
    if let Some(system) = system {
        push_turn(&mut prompt, "system", &system);
    }
    for message in messages.iter().skip(usize::from(has_system)) {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let mut content = message.content.clone();
        for call in &message.tool_calls {
            let arguments: serde_json::Value =
                serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null);
            let call = serde_json::json!({"name": call.name, "arguments": arguments});
            if !content.is_empty() {
                content.push('\n');
            }
            content.push_str(&format!("<tool_call>{call}</tool_call>"));
        }
        push_turn(&mut prompt, role, &content);
    }
    prompt.push_str("<|im_start|>assistant\n");
    prompt
}

fn describe_tools(tools: &[ToolSpec]) -> String {
    let mut text = String::from(
        "You can call these tools. To call one, answer with its name and arguments as JSON.\n",
    );
    for tool in tools {
        let description = tool.description.as_deref().unwrap_or("");
        text.push_str(&format!(
            "- {}: {} Arguments: {}\n",
            tool.name, description, tool.parameters
        ));
    }
    text
}

fn push_turn(prompt: &mut String, role: &str, content: &str) {
    prompt.push_str("<|im_start|>");
    prompt.push_str(role);
    prompt.push('\n');
    prompt.push_str(content);
    prompt.push_str("<|im_end|>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMOLLM2: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    #[test]
    fn reads_the_default_system_prompt_of_the_template() {
        assert_eq!(
            default_system_prompt(SMOLLM2).as_deref(),
            Some(FALLBACK_SYSTEM_PROMPT)
        );
        assert_eq!(default_system_prompt("{{ messages }}"), None);
    }

    #[test]
    fn renders_chatml_with_the_default_system_prompt() {
        let user = [ChatMessage::new(Role::User, "Hi")];
        assert_eq!(
            render(&user, Some("Be brief"), &[]),
            "<|im_start|>system\nBe brief<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
        let with_system = [
            ChatMessage::new(Role::System, "Own"),
            ChatMessage::new(Role::User, "Hi"),
        ];
        assert_eq!(
            render(&with_system, Some("Be brief"), &[]),
            "<|im_start|>system\nOwn<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }
}
