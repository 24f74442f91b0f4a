//! Serving the domains over HTTPS with actix-web and rustls, for Tessera's API and any other
//! actix front end of its domains: the one place errors become `application/problem+json`
//! ([`problem`], with the interface's `loc`/`msg`/`type` validation details), extractors that
//! validate bodies and queries ([`extract`]), request guards (header size, HTTPS behind a
//! trusted proxy) and request ids ([`middleware`]), the caller's address ([`origin`]), rate
//! limit headers and refusals ([`rate_limit`]), `Idempotency-Key` replay over the idempotency
//! domain ([`idempotency`]) and the listener's certificate ([`tls`]). It knows no route and
//! no business rule: the app's handlers and route table use it.

pub mod extract;
pub mod idempotency;
pub mod middleware;
pub mod origin;
pub mod problem;
pub mod rate_limit;
pub mod tls;
