//! The keys a completion is cached under, computed from the request the provider would
//! read (after the system prompt was composed, knowledge retrieved, guardrails applied and
//! the context window fitted), so two requests share an answer only when the provider
//! would have read the same thing.

use sha2::{Digest, Sha256};
use tessera_kernel::OrganizationId;
use tessera_models::{ChatMessage, ChatRequest, Role, ToolChoice};

/// Who may share an answer: one organization's requests of one model, and one principal's
/// only when answers are specific to their user (their knowledge was retrieved for them).
#[derive(Debug, Clone, Copy)]
pub struct CacheScope<'a> {
    pub organization: &'a OrganizationId,
    /// The model the request names (a catalog model or one of the organization's own).
    pub model_id: &'a str,
    pub principal: Option<&'a str>,
}

/// The exact key: the scope and the whole normalised request (messages, tools, tool choice,
/// response format and every sampling parameter).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExactKey(String);

/// The semantic partition: the scope and the request without its last user message.
/// Requests of one partition differ only in their question, so a near-duplicate question
/// may share an answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Partition(String);

impl ExactKey {
    pub fn of(scope: &CacheScope<'_>, request: &ChatRequest) -> Self {
        let mut hasher = KeyHasher::new("exact", scope);
        hasher.request(request, &request.messages);
        Self(hasher.finish())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Partition {
    /// The partition and the question of a request whose last message is a user's text
    /// (no images); `None` for any other request, which only exact keys serve.
    pub fn of<'r>(scope: &CacheScope<'_>, request: &'r ChatRequest) -> Option<(Self, &'r str)> {
        let (last, earlier) = request.messages.split_last()?;
        if last.role != Role::User || !last.images.is_empty() || last.content.trim().is_empty() {
            return None;
        }
        let mut hasher = KeyHasher::new("semantic", scope);
        hasher.request(request, earlier);
        Some((Self(hasher.finish()), last.content.as_str()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// SHA-256 over length-prefixed fields, so no two different requests feed it the same bytes.
struct KeyHasher(Sha256);

impl KeyHasher {
    /// Version 1 of the key's layout: a change of what is hashed changes the version.
    fn new(kind: &str, scope: &CacheScope<'_>) -> Self {
        let mut hasher = Self(Sha256::new());
        hasher.text("tessera-response-cache/1");
        hasher.text(kind);
        hasher.text(scope.organization.as_str());
        hasher.text(scope.model_id);
        hasher.optional(scope.principal);
        hasher
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
    }

    fn text(&mut self, text: &str) {
        self.bytes(text.as_bytes());
    }

    fn optional(&mut self, text: Option<&str>) {
        match text {
            Some(text) => {
                self.0.update([1]);
                self.text(text);
            }
            None => self.0.update([0]),
        }
    }

    fn number(&mut self, number: Option<u64>) {
        self.optional(number.map(|n| n.to_string()).as_deref());
    }

    fn float(&mut self, number: Option<f32>) {
        self.optional(number.map(|n| n.to_bits().to_string()).as_deref());
    }

    fn json(&mut self, value: &serde_json::Value) {
        let mut canonical = String::new();
        write_canonical(value, &mut canonical);
        self.text(&canonical);
    }

    fn request(&mut self, request: &ChatRequest, messages: &[ChatMessage]) {
        self.text(&request.model);
        self.number(Some(messages.len() as u64));
        for message in messages {
            self.message(message);
        }
        self.number(Some(request.tools.len() as u64));
        for tool in &request.tools {
            self.text(&tool.name);
            self.optional(tool.description.as_deref());
            self.json(&tool.parameters);
        }
        match &request.tool_choice {
            ToolChoice::Auto => self.text("auto"),
            ToolChoice::None => self.text("none"),
            ToolChoice::Required => self.text("required"),
            ToolChoice::Function(name) => {
                self.text("function");
                self.text(name);
            }
        }
        match &request.response_format {
            Some(format) => {
                self.text(&format.name);
                self.text(if format.strict { "strict" } else { "lax" });
                self.json(&format.schema);
            }
            None => self.text("text"),
        }
        self.number(request.max_tokens.map(u64::from));
        self.float(request.temperature);
        self.float(request.top_p);
        self.number(request.seed);
        self.number(Some(request.stop.len() as u64));
        for stop in &request.stop {
            self.text(stop);
        }
        match request.reasoning {
            Some((effort, budget)) => {
                self.optional(Some(&format!("{effort:?}")));
                self.number(budget.map(u64::from));
            }
            None => self.optional(None),
        }
    }

    fn message(&mut self, message: &ChatMessage) {
        self.text(message.role.as_str());
        self.text(&message.content);
        self.number(Some(message.tool_calls.len() as u64));
        for call in &message.tool_calls {
            self.text(&call.id);
            self.text(&call.name);
            self.text(&call.arguments);
        }
        self.optional(message.tool_call_id.as_deref());
        self.number(Some(message.images.len() as u64));
        for image in &message.images {
            self.text(&image.media_type);
            self.bytes(&image.data);
        }
    }

    fn finish(self) -> String {
        self.0
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// JSON with every object's keys sorted, so a schema's key order does not change a key.
fn write_canonical(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        serde_json::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tessera_models::ToolSpec;

    use super::*;

    fn request(question: &str) -> ChatRequest {
        ChatRequest {
            model: "smollm2".into(),
            messages: vec![
                ChatMessage::new(Role::System, "Be brief."),
                ChatMessage::new(Role::User, question),
            ],
            temperature: Some(0.0),
            ..ChatRequest::default()
        }
    }

    fn scope<'a>(organization: &'a OrganizationId, principal: Option<&'a str>) -> CacheScope<'a> {
        CacheScope {
            organization,
            model_id: "tessera/smollm2",
            principal,
        }
    }

    #[test]
    fn the_same_request_has_the_same_key_and_any_difference_another() {
        let acme = "acme".parse::<OrganizationId>().unwrap();
        let key = ExactKey::of(&scope(&acme, None), &request("What is Rust?"));
        assert_eq!(
            key,
            ExactKey::of(&scope(&acme, None), &request("What is Rust?"))
        );
        assert_eq!(key.as_str().len(), 64);
        assert_ne!(
            key,
            ExactKey::of(&scope(&acme, None), &request("What is Go?"))
        );
        let warmer = ChatRequest {
            temperature: Some(0.2),
            ..request("What is Rust?")
        };
        assert_ne!(key, ExactKey::of(&scope(&acme, None), &warmer));
        let shorter = ChatRequest {
            max_tokens: Some(5),
            ..request("What is Rust?")
        };
        assert_ne!(key, ExactKey::of(&scope(&acme, None), &shorter));
    }

    #[test]
    fn organizations_models_and_users_never_share_a_key() {
        let acme = "acme".parse::<OrganizationId>().unwrap();
        let globex = "globex".parse::<OrganizationId>().unwrap();
        let asked = request("What is Rust?");
        let key = ExactKey::of(&scope(&acme, None), &asked);
        assert_ne!(key, ExactKey::of(&scope(&globex, None), &asked));
        assert_ne!(key, ExactKey::of(&scope(&acme, Some("alice")), &asked));
        assert_ne!(
            ExactKey::of(&scope(&acme, Some("alice")), &asked),
            ExactKey::of(&scope(&acme, Some("bob")), &asked)
        );
        let other_model = CacheScope {
            model_id: "acme-helper",
            ..scope(&acme, None)
        };
        assert_ne!(key, ExactKey::of(&other_model, &asked));
    }

    #[test]
    fn fields_cannot_run_into_each_other() {
        let acme = "acme".parse::<OrganizationId>().unwrap();
        let mut split = request("b");
        split.messages[0].content = "a".into();
        let mut joined = request("");
        joined.messages[0].content = "ab".into();
        assert_ne!(
            ExactKey::of(&scope(&acme, None), &split),
            ExactKey::of(&scope(&acme, None), &joined)
        );
    }

    #[test]
    fn a_schemas_key_order_does_not_matter() {
        let acme = "acme".parse::<OrganizationId>().unwrap();
        let tool = |parameters| ChatRequest {
            tools: vec![ToolSpec {
                name: "weather".into(),
                description: None,
                parameters,
            }],
            ..request("Weather?")
        };
        let one = tool(json!({"type": "object", "properties": {"city": {"type": "string"}}}));
        let other = tool(json!({"properties": {"city": {"type": "string"}}, "type": "object"}));
        assert_eq!(
            ExactKey::of(&scope(&acme, None), &one),
            ExactKey::of(&scope(&acme, None), &other)
        );
    }

    #[test]
    fn the_partition_leaves_out_the_question_only() {
        let acme = "acme".parse::<OrganizationId>().unwrap();
        let asked = request("What is Rust?");
        let (partition, question) = Partition::of(&scope(&acme, None), &asked).unwrap();
        assert_eq!(question, "What is Rust?");
        let (same, _) = Partition::of(&scope(&acme, None), &request("Tell me about Rust")).unwrap();
        assert_eq!(partition, same);
        let mut other_system = request("What is Rust?");
        other_system.messages[0].content = "Be verbose.".into();
        assert_ne!(
            partition,
            Partition::of(&scope(&acme, None), &other_system).unwrap().0
        );
        let mut answered = request("What is Rust?");
        answered
            .messages
            .push(ChatMessage::new(Role::Assistant, "A language."));
        assert!(Partition::of(&scope(&acme, None), &answered).is_none());
    }
}
