//! Anthropic's Messages API at `/anthropic/v1` over the same domain services as `/v1`:
//! messages (the chats domain's completion pipeline, always stateless, as Anthropic's API
//! is), their token counts (the same pipeline without the model) and models. The shapes and their translation are `tessera_wire::anthropic`; these
//! handlers parse, call and map. Errors leave in Anthropic's error shape (`dialects`
//! rewrites every problem on these paths, the credential checks' included), and the key may
//! come as `x-api-key`, as Anthropic's clients send it.

pub mod error;
pub mod messages;
pub mod models;
