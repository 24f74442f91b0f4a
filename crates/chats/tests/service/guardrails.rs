//! Guardrails in the completion pipeline: a policy from a fixed source, the real checks of
//! `tessera-guardrails`, and the scripted model that records what the provider would read.

use tessera_chats::{ChatService, GuardrailSource};
use tessera_guardrails::{
    Effect, GuardedRequest, GuardrailPolicy, GuardrailRecord, Guardrails, PolicySpec,
};
use tessera_kernel::TargetPolicy;

use super::*;

/// One policy for every completion; what each completion's checks did, as reported.
struct FixedPolicy {
    policy: GuardrailPolicy,
    reports: Mutex<Vec<GuardrailRecord>>,
}

impl FixedPolicy {
    fn new(spec: serde_json::Value) -> Arc<Self> {
        let spec: PolicySpec = serde_json::from_value(spec).unwrap();
        let policy = GuardrailPolicy::new(spec, TargetPolicy::default(), &["body".into()]).unwrap();
        Arc::new(Self {
            policy,
            reports: Mutex::new(Vec::new()),
        })
    }

    fn effects(&self) -> Vec<(String, Effect)> {
        (self.reports.lock().unwrap().iter())
            .flat_map(|record| record.outcomes().to_vec())
            .map(|outcome| {
                (
                    format!("{}:{}", outcome.rule, outcome.direction),
                    outcome.effect,
                )
            })
            .collect()
    }
}

#[async_trait]
impl GuardrailSource for FixedPolicy {
    async fn begin(
        &self,
        _: &OrganizationId,
        _: &str,
    ) -> Result<Option<GuardedRequest>, DomainError> {
        Ok(Some(Guardrails::without_hook().begin(self.policy.clone())))
    }

    fn report(&self, record: &GuardrailRecord) {
        self.reports.lock().unwrap().push(record.clone());
    }
}

fn guarded(policy: &Arc<FixedPolicy>) -> (Fixture, ChatService) {
    let f = fixture();
    let chats = ChatService::new(ChatPorts {
        usage: f.usage.clone(),
        leases: f.store.clone(),
        ..f.ports()
    })
    .with_guardrails(policy.clone());
    (f, chats)
}

fn streamed_text(events: &[GenerationEvent]) -> String {
    (events.iter())
        .filter_map(|event| match event {
            GenerationEvent::Delta(ChatEvent::TextDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn finished(events: &[GenerationEvent]) -> Message {
    match events.last() {
        Some(GenerationEvent::Finished(message)) => (**message).clone(),
        other => panic!("expected the answer, got {other:?}"),
    }
}

/// The model's answer, streamed in pieces of `size` bytes (cut inside placeholders).
fn answer_in_pieces(model: &Scripted, text: &str, size: usize) {
    let mut events = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        events.push(Ok(ChatEvent::TextDelta(rest[..cut].into())));
        rest = &rest[cut..];
    }
    events.push(Ok(finish(FinishReason::Stop)));
    *model.reply.lock().unwrap() = events;
}

#[tokio::test]
async fn a_blocked_input_is_refused_where_it_is_and_no_model_is_asked() {
    let policy = FixedPolicy::new(json!({
        "pii": [{"id": "cards", "kind": "payment_card", "action": "block"}]
    }));
    let (f, chats) = guarded(&policy);
    let request = CompletionRequest {
        messages: vec![user("hello"), user("my card is 4111 1111 1111 1111")],
        ..ask("local/plain", "")
    };
    let Err(ChatError::Invalid(errors)) = chats.start(&f.alice, request).await else {
        panic!("expected a validation error");
    };
    assert_eq!(
        places(&errors),
        [(
            "body.messages.1.content".to_owned(),
            "guardrail_blocked".to_owned()
        )]
    );
    assert!(
        !errors[0].msg.contains("4111"),
        "the refusal names the rule, not the value"
    );
    assert!(f.model.requests.lock().unwrap().is_empty());
    assert_eq!(
        policy.effects(),
        [("cards:input".to_owned(), Effect::Blocked)]
    );
}

#[tokio::test]
async fn a_redacted_input_never_reaches_the_model_nor_the_store() {
    let policy = FixedPolicy::new(json!({
        "pii": [{"id": "emails", "kind": "email", "action": "redact"}]
    }));
    let (f, chats) = guarded(&policy);
    let started = chats
        .start(&f.alice, ask("local/plain", "write to ann@example.com"))
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    let answer = finished(&run(started).await);
    let read = f
        .model
        .last_request()
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert_eq!(read, "write to [REDACTED:EMAIL]");
    let stored = chats.get(&f.alice, &chat).await.unwrap().messages;
    assert_eq!(stored[0].content, "write to [REDACTED:EMAIL]");
    let record = &answer.usage.as_ref().unwrap().guardrails;
    assert_eq!(record.outcomes().len(), 1);
    assert_eq!(record.outcomes()[0].effect, Effect::Redacted);
    assert_eq!(
        stored[1].usage.as_ref().unwrap().guardrails,
        *record,
        "the record is stored with the answer"
    );
}

#[tokio::test]
async fn pseudonymised_values_are_restored_in_the_streamed_and_stored_answer() {
    let policy = FixedPolicy::new(json!({
        "pii": [{"id": "emails", "kind": "email", "action": "pseudonymise"}]
    }));
    let (f, chats) = guarded(&policy);
    answer_in_pieces(&f.model, "I will write to ⟦EMAIL_1⟧ now.", 5);
    let started = chats
        .start(&f.alice, ask("local/plain", "write to ann@example.com"))
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    let events = run(started).await;
    let read = f
        .model
        .last_request()
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert_eq!(
        read, "write to ⟦EMAIL_1⟧",
        "the provider reads a placeholder"
    );
    assert_eq!(
        streamed_text(&events),
        "I will write to ann@example.com now."
    );
    assert_eq!(
        finished(&events).content,
        "I will write to ann@example.com now."
    );
    let stored = chats.get(&f.alice, &chat).await.unwrap().messages;
    assert_eq!(
        stored[0].content, "write to ann@example.com",
        "the client's own text"
    );
    assert_eq!(stored[1].content, "I will write to ann@example.com now.");

    // The next turn checks the history afresh, with a vault of its own: a placeholder the
    // client writes itself is not one the vault restores.
    f.model.answer("Noted ⟦EMAIL_2⟧.");
    let events = run(chats
        .start(&f.alice, follow_up(&chat, "and bob@example.com"))
        .await
        .unwrap())
    .await;
    let sent: Vec<String> = (f.model.last_request().messages.iter())
        .map(|message| message.content.clone())
        .collect();
    assert!(
        !sent.iter().any(|text| text.contains("@example.com")),
        "{sent:?}"
    );
    assert!(sent.last().unwrap().ends_with("and ⟦EMAIL_2⟧"), "{sent:?}");
    assert_eq!(finished(&events).content, "Noted bob@example.com.");
}

#[tokio::test]
async fn a_checked_answer_is_held_then_masked_or_withheld() {
    let policy = FixedPolicy::new(json!({
        "deny": [
            {"id": "codename", "words": ["bluebird"], "action": "redact", "appliesTo": "output"},
            {"id": "forbidden", "words": ["launch codes"], "appliesTo": "output"}
        ]
    }));
    let (f, chats) = guarded(&policy);
    answer_in_pieces(&f.model, "The project is bluebird.", 4);
    let events = run(chats
        .start(&f.alice, ask("local/plain", "what is the project?"))
        .await
        .unwrap())
    .await;
    let deltas = (events.iter())
        .filter(|event| matches!(event, GenerationEvent::Delta(ChatEvent::TextDelta(_))))
        .count();
    assert_eq!(deltas, 1, "the answer is sent once checked, in one piece");
    assert_eq!(streamed_text(&events), "The project is [REDACTED:DENIED].");
    assert_eq!(
        finished(&events).content,
        "The project is [REDACTED:DENIED]."
    );

    f.model.answer("Here are the launch codes.");
    let started = chats
        .start(&f.alice, ask("local/plain", "tell me"))
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    let events = run(started).await;
    assert_eq!(streamed_text(&events), "");
    let answer = finished(&events);
    assert_eq!(answer.content, "");
    let usage = answer.usage.unwrap();
    assert_eq!(usage.finish_reason, FinishReason::ContentFilter);
    assert_eq!(
        usage.guardrails.blocked().unwrap().rule.as_str(),
        "forbidden"
    );
    let stored = chats.get(&f.alice, &chat).await.unwrap().messages;
    assert!(
        !stored[1].content.contains("launch"),
        "the withheld answer is stored nowhere"
    );
}
