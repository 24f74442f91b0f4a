//! Serving the domains over HTTPS with actix-web and rustls, for Tessera's API and any other
//! actix front end of its domains: the one place errors become `application/problem+json`
//! ([`problem`], a chat's failures included, with the interface's `loc`/`msg`/`type`
//! validation details, every problem of a kind of one catalogue, `problem::ProblemKind`,
//! that decides its status and title), chat generations as Server-Sent Events in every stream format
//! ([`chat_stream`]), the graceful stop that lets running generations finish ([`drain`]),
//! extractors that validate bodies and queries ([`extract`]), request
//! guards (header size, HTTPS behind a trusted proxy) and request ids ([`middleware`]), the
//! caller's address ([`origin`]), rate limit headers and refusals ([`rate_limit`]),
//! `Idempotency-Key` replay over the idempotency domain ([`idempotency`]) and the listener's
//! certificate ([`tls`]). It knows no route and no business rule: the app's handlers and
//! route table use it.

mod chat_problem;
pub mod chat_stream;
pub mod drain;
pub mod extract;
pub mod idempotency;
pub mod middleware;
pub mod origin;
pub mod problem;
mod problem_kind;
pub mod rate_limit;
pub mod tls;
