//! The database technologies the store speaks, named apart from the pools and migrations
//! that depend on them.

/// Which database technology a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    Sqlite,
}
