//! The records the checks store and the filters and pages they ask for.

use super::*;

/// Microsecond precision, as the domain's clock produces; `at(s)` is `s` seconds later.
pub fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap()
        + Duration::microseconds(123_456)
        + Duration::seconds(seconds)
}

/// A plain chat: no system prompt, no title, idle, live.
pub fn chat(organization: &OrganizationId, owner: &str) -> Chat {
    Chat {
        id: ChatId::generate(),
        organization_id: organization.clone(),
        owner: owner.to_owned(),
        model: ModelSnapshot {
            model_id: "local/smollm2-135m".to_owned(),
            base_model_id: "local/smollm2-135m".to_owned(),
            system_prompt: None,
            system_prompt_id: None,
        },
        title: None,
        status: None,
        error: None,
        deleted_at: None,
        created_at: at(0),
        updated_at: at(0),
    }
}

/// A plain chat of alice.
pub fn chat_of(organization: &OrganizationId) -> Chat {
    chat(organization, "alice")
}

/// A chat with every optional field set and unicode text.
pub fn rich_chat(organization: &OrganizationId) -> Chat {
    Chat {
        model: ModelSnapshot {
            model_id: "mdl_0192b2c1d2e37f00a1b2c3d4e5f60718".to_owned(),
            base_model_id: "openai/gpt-4o-mini".to_owned(),
            system_prompt: Some(
                "Du bist ein hilfreicher Assistent. 你好 — \"knapp\"\n\t✓".to_owned(),
            ),
            system_prompt_id: Some(SystemPromptId::generate()),
        },
        title: Some("Ünïcode – 研究 ✓ 🚀 'quoted'".to_owned()),
        status: Some(ChatStatus::Error),
        error: Some("upstream timed out – 超时".to_owned()),
        deleted_at: Some(at(5) + Duration::microseconds(1)),
        created_at: at(1) + Duration::microseconds(999_999),
        updated_at: at(6) + Duration::microseconds(654_321),
        ..chat(organization, "user|auth0|Ünïcode 42")
    }
}

/// A plain message of `chat`.
pub fn message(chat: &Chat, sequence: u32, role: Role, content: &str) -> Message {
    Message {
        id: MessageId::generate(),
        chat_id: chat.id.clone(),
        sequence,
        role,
        content: content.to_owned(),
        reasoning: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        sources: Vec::new(),
        attachments: Vec::new(),
        usage: None,
        created_at: at(10),
    }
}

/// An answer's usage; half of its input was read from a cache.
pub fn usage(input: u32, output: u32, reasoning: u32, finish_reason: FinishReason) -> MessageUsage {
    MessageUsage {
        usage: Usage {
            input_tokens: input,
            output_tokens: output,
            reasoning_tokens: reasoning,
            cached_input_tokens: input / 2,
        },
        finish_reason,
        route: None,
        guardrails: tessera_guardrails::GuardrailRecord::default(),
    }
}

/// What an answer of `chat` consumed (answer `message_id`), as the chat service records it.
pub fn usage_record(chat: &Chat, message_id: &MessageId, when: DateTime<Utc>) -> UsageRecord {
    let tokens = Tokens {
        input: 1_200,
        output: 345,
        reasoning: 67,
        cached_input: 890,
    };
    UsageRecord {
        id: UsageId::generate(),
        organization_id: chat.organization_id.clone(),
        principal: chat.owner.clone(),
        principal_kind: PrincipalKind::User,
        chat_id: chat.id.to_string(),
        message_id: message_id.to_string(),
        model_id: chat.model.model_id.clone(),
        parent_model_id: chat.model.base_model_id.clone(),
        provider: "local".to_owned(),
        credits: tokens.credits(3),
        tokens,
        latency_ms: 1_234,
        finish_reason: "stop".to_owned(),
        created_at: when,
        cached: false,
    }
}

/// A finished turn: `messages`, the usage of its answer (the last message, or an answer
/// that was not stored when there are none), no artifacts.
pub fn turn_of(chat: &Chat, messages: &[Message], when: DateTime<Utc>) -> FinishedTurn {
    let answer = messages
        .last()
        .map_or_else(MessageId::generate, |m| m.id.clone());
    FinishedTurn {
        messages: messages.to_vec(),
        usage: usage_record(chat, &answer, when),
        artifacts: Vec::new(),
        error: None,
    }
}

/// Version `version` of artifact `identifier`, found in `answer` of `chat`.
pub fn artifact(chat: &Chat, answer: &Message, identifier: &str, version: u32) -> Artifact {
    Artifact {
        id: ArtifactId::generate(),
        organization_id: chat.organization_id.clone(),
        owner: chat.owner.clone(),
        chat_id: chat.id.clone(),
        message_id: answer.id.clone(),
        kind: ArtifactKind::Code,
        language: Some("rust".to_owned()),
        title: format!("Skript – {identifier} ✓"),
        identifier: identifier.to_owned(),
        version,
        content: format!("fn main() {{\n    println!(\"{identifier} v{version} – 你好\");\n}}\n"),
        created_at: answer.created_at + Duration::microseconds(1),
    }
}

/// A markdown artifact without a language.
pub fn document(chat: &Chat, answer: &Message, identifier: &str, version: u32) -> Artifact {
    Artifact {
        kind: ArtifactKind::Markdown,
        language: None,
        content: format!("# {identifier}\n\n*Version {version}* — «zitiert»"),
        ..artifact(chat, answer, identifier, version)
    }
}

/// A user message and an answer from `sequence` on, with `artifacts` (identifier, version)
/// found in the answer.
pub fn turn_with_artifacts(
    chat: &Chat,
    sequence: u32,
    artifacts: &[(&str, u32)],
    when: DateTime<Utc>,
) -> FinishedTurn {
    let messages = vec![
        Message {
            created_at: when,
            ..message(chat, sequence, Role::User, "Schreib mir ein Skript.")
        },
        Message {
            usage: Some(usage(100, 50, 0, FinishReason::Stop)),
            created_at: when,
            ..message(chat, sequence + 1, Role::Assistant, "Hier ist es.")
        },
    ];
    let artifacts = artifacts
        .iter()
        .enumerate()
        .map(|(i, (identifier, version))| {
            if i % 2 == 0 {
                artifact(chat, &messages[1], identifier, *version)
            } else {
                document(chat, &messages[1], identifier, *version)
            }
        })
        .collect();
    FinishedTurn {
        artifacts,
        ..turn_of(chat, &messages, when)
    }
}

pub fn source(id: &str, dataset: Option<&str>, score: f32) -> Source {
    Source {
        id: id.to_owned(),
        file_id: format!("fil_{id}"),
        dataset_id: dataset.map(str::to_owned),
        title: dataset.map(|d| format!("Handbuch – {d} ✓")),
        text: "Passage «quoted» – 段落\nsecond line".to_owned(),
        score,
        file_name: dataset.map(|_| "Handbuch.pdf".to_owned()),
        location: dataset.map(|_| SourceLocation {
            page: Some(3),
            section: Some("Ferien › Urlaub".into()),
            char_start: 120,
            char_end: 980,
        }),
    }
}

/// One turn with every kind of message and every field set somewhere, from `sequence` on.
pub fn rich_turn(chat: &Chat, sequence: u32) -> Vec<Message> {
    let when = at(20) + Duration::microseconds(7);
    vec![
        Message {
            created_at: when,
            ..message(chat, sequence, Role::System, "Antworte knapp. 简洁")
        },
        Message {
            attachments: vec![
                Attachment {
                    file_id: "fil_karte".to_owned(),
                    file_name: "Wetterkarte \"Süd\".png".to_owned(),
                    kind: AttachmentKind::Image,
                    media_type: "image/png".to_owned(),
                },
                Attachment {
                    file_id: "fil_bericht".to_owned(),
                    file_name: "bericht.pdf".to_owned(),
                    kind: AttachmentKind::Document,
                    media_type: "application/pdf".to_owned(),
                },
            ],
            created_at: when,
            ..message(chat, sequence + 1, Role::User, "Wie wird das Wetter? ☀️🌧")
        },
        Message {
            reasoning: Some("The user asks about weather; call the tool.".to_owned()),
            tool_calls: vec![
                ToolCall {
                    id: "call_1".to_owned(),
                    name: "weather".to_owned(),
                    arguments: r#"{"city":"Zürich","days":[1,2]}"#.to_owned(),
                },
                ToolCall {
                    id: "call_2".to_owned(),
                    name: "time".to_owned(),
                    arguments: "{}".to_owned(),
                },
            ],
            usage: Some(usage(1200, 45, 30, FinishReason::ToolCalls)),
            created_at: when + Duration::microseconds(1),
            ..message(chat, sequence + 2, Role::Assistant, "")
        },
        Message {
            tool_call_id: Some("call_1".to_owned()),
            created_at: when + Duration::microseconds(2),
            ..message(
                chat,
                sequence + 3,
                Role::Tool,
                r#"{"temp":21.5,"sky":"klar"}"#,
            )
        },
        Message {
            tool_call_id: Some("call_2".to_owned()),
            created_at: when + Duration::microseconds(2),
            ..message(chat, sequence + 4, Role::Tool, "12:00")
        },
        Message {
            reasoning: Some(String::new()),
            sources: vec![
                source("chk_1", Some("dst_wetter"), 0.875),
                source("chk_2", None, 0.1),
            ],
            usage: Some(usage(u32::MAX, 0, 0, FinishReason::Other("x".to_owned()))),
            created_at: when + Duration::microseconds(3),
            ..message(chat, sequence + 5, Role::Assistant, "Sonnig, 21,5 °C. ✓")
        },
        Message {
            usage: Some(usage(10, 20, 0, FinishReason::Stop)),
            ..message(chat, sequence + 6, Role::Assistant, "stop")
        },
        Message {
            usage: Some(usage(10, 4096, 0, FinishReason::Length)),
            ..message(chat, sequence + 7, Role::Assistant, "length")
        },
        Message {
            usage: Some(usage(10, 0, 0, FinishReason::ContentFilter)),
            ..message(chat, sequence + 8, Role::Assistant, "")
        },
        Message {
            usage: Some(usage(1, 2, 3, FinishReason::Other(String::new()))),
            ..message(chat, sequence + 9, Role::Assistant, "empty reason")
        },
    ]
}

/// A filter of an organization's live chats, of every owner.
pub fn live(organization: &OrganizationId) -> ChatFilter {
    ChatFilter {
        organization: organization.clone(),
        owner: None,
        include_deleted: false,
    }
}

pub fn owned_by(organization: &OrganizationId, owner: &str) -> ChatFilter {
    ChatFilter {
        owner: Some(owner.to_owned()),
        ..live(organization)
    }
}

pub fn with_deleted(filter: ChatFilter) -> ChatFilter {
    ChatFilter {
        include_deleted: true,
        ..filter
    }
}

pub fn page<K: Clone>(limit: i64, after: Option<&K>) -> PageRequest<K> {
    PageRequest {
        limit: Limit::new(limit).unwrap(),
        after: after.cloned(),
    }
}

/// Newest first: by id, descending.
pub fn newest_first(mut chats: Vec<Chat>) -> Vec<Chat> {
    chats.sort_by(|a, b| b.id.cmp(&a.id));
    chats
}

pub fn is_not_found<T: std::fmt::Debug>(result: &Result<T, DomainError>) -> bool {
    matches!(result, Err(DomainError::NotFound { .. }))
}

pub fn is_internal<T: std::fmt::Debug>(result: &Result<T, DomainError>) -> bool {
    matches!(result, Err(DomainError::Internal { .. }))
}

pub fn is_conflict<T: std::fmt::Debug>(result: &Result<T, DomainError>) -> bool {
    matches!(result, Err(DomainError::Conflict { .. }))
}

/// A filter of an organization's artifacts.
pub fn artifacts_of(
    organization: &OrganizationId,
    owner: Option<&str>,
    chat: Option<&ChatId>,
) -> ArtifactFilter {
    ArtifactFilter {
        organization: organization.clone(),
        owner: owner.map(str::to_owned),
        chat_id: chat.cloned(),
    }
}

pub fn newest_artifacts_first(mut artifacts: Vec<Artifact>) -> Vec<Artifact> {
    artifacts.sort_by(|a, b| b.id.cmp(&a.id));
    artifacts
}

pub fn versions(pairs: &[(&str, u32)]) -> HashMap<String, u32> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}
