//! The JSON shapes of Tessera's HTTP surfaces, apart from the HTTP framework that serves
//! them: OpenAI's dialect (`openai`: chat completions, the Responses API, embeddings,
//! models, its error shape and both of its event streams), Anthropic's (`anthropic`: the
//! Messages API, its event stream, models and error shape), `/v1`'s bodies (`v1`, by
//! resource), its two chat stream formats (`chat_stream`), the chat shapes both surfaces
//! share (`chat`) and their tool choice (`tool_choice`), the list bodies (`page`), a problem
//! as plain values for the dialects' error shapes to render (`problem`), and how a request's
//! body, query and path are parsed and validated (`parse`). Each shape carries its serde form and its OpenAPI
//! schema; requests are translated into the domains' requests (with every field error
//! located as the client sent it), and domain records, messages and generation events into
//! responses and stream events. Which HTTP status a domain error becomes, and the handlers
//! themselves, stay in the app, so another service can speak these dialects with the
//! framework of its choice.

pub mod anthropic;
pub mod chat;
pub mod chat_stream;
pub mod openai;
pub mod page;
pub mod parse;
pub mod problem;
pub mod tool_choice;
pub mod v1;

/// Deserializes an optional field so that absent (`None`) and `null` (`Some(None)`) differ:
/// `#[serde(default, deserialize_with = "tessera_wire::nullable")]` on an
/// `Option<Option<T>>` (a PATCH body's "leave" versus "clear").
pub fn nullable<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(deserializer).map(Some)
}
