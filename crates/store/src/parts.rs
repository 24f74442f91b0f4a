//! The store's parts: each domain's tables with their own migrations
//! (`migrations/<backend>/<part>/`), so that a service taking one domain's store migrates
//! that domain's tables and the ones it refers to, and nothing else. Every part's
//! migrations are recorded in the same diesel table with versions unique across parts, so a
//! database migrated before the split (one sequence for everything) has nothing to redo.

use diesel_migrations::EmbeddedMigrations;

use crate::Backend;

/// A domain's share of the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Part {
    /// Organizations (every record's tenant) and the audit trail that their changes, and
    /// every other audited part's, write in the same transaction.
    Tenants,
    /// OAuth2 clients and API keys.
    Identity,
    /// Particles, their versions and system prompts.
    Prompts,
    /// Stored responses of idempotent requests.
    Idempotency,
    /// Files, their chunks and processing jobs, datasets and snapshots. Its store records
    /// `file.*` and `dataset.*` events in the webhook outbox, hence it needs `Webhooks`.
    Knowledge,
    /// User models and their dataset links.
    Models,
    /// MCP servers and the models they are linked to.
    Mcp,
    /// Chats, messages, artifacts and generation leases.
    Chats,
    /// Usage records and their hourly rollups.
    Usage,
    /// Webhooks and their delivery outbox.
    Webhooks,
    /// Guardrail policies of organizations and their models.
    Guardrails,
    /// Response cache policies of organizations' models.
    ResponseCache,
}

impl Part {
    /// Every part, in the order migrations run: a part comes after those it refers to.
    pub const ALL: [Part; 12] = [
        Part::Tenants,
        Part::Identity,
        Part::Prompts,
        Part::Idempotency,
        Part::Webhooks,
        Part::Knowledge,
        Part::Models,
        Part::Mcp,
        Part::Chats,
        Part::Usage,
        Part::Guardrails,
        Part::ResponseCache,
    ];

    /// The folder of its migrations under `migrations/<backend>/`.
    pub fn name(self) -> &'static str {
        match self {
            Part::Tenants => "tenants",
            Part::Identity => "identity",
            Part::Prompts => "prompts",
            Part::Idempotency => "idempotency",
            Part::Knowledge => "knowledge",
            Part::Models => "models",
            Part::Mcp => "mcp",
            Part::Chats => "chats",
            Part::Usage => "usage",
            Part::Webhooks => "webhooks",
            Part::Guardrails => "guardrails",
            Part::ResponseCache => "response_cache",
        }
    }

    /// The parts whose tables this part's tables or store refer to.
    pub fn needs(self) -> &'static [Part] {
        match self {
            Part::Tenants => &[],
            Part::Identity
            | Part::Prompts
            | Part::Idempotency
            | Part::Chats
            | Part::Usage
            | Part::Webhooks
            | Part::Guardrails
            | Part::ResponseCache => &[Part::Tenants],
            Part::Knowledge => &[Part::Tenants, Part::Webhooks],
            Part::Models => &[Part::Tenants, Part::Prompts, Part::Knowledge],
            Part::Mcp => &[Part::Tenants, Part::Models],
        }
    }

    /// `parts` and every part they need, in migration order.
    pub fn with_needs(parts: &[Part]) -> Vec<Part> {
        let mut wanted = std::collections::BTreeSet::new();
        let mut next: Vec<Part> = parts.to_vec();
        while let Some(part) = next.pop() {
            if wanted.insert(part) {
                next.extend_from_slice(part.needs());
            }
        }
        Part::ALL
            .into_iter()
            .filter(|part| wanted.contains(part))
            .collect()
    }

    pub(crate) fn migrations(self, backend: Backend) -> EmbeddedMigrations {
        let (postgres, sqlite) = match self {
            Part::Tenants => (postgres::TENANTS, sqlite::TENANTS),
            Part::Identity => (postgres::IDENTITY, sqlite::IDENTITY),
            Part::Prompts => (postgres::PROMPTS, sqlite::PROMPTS),
            Part::Idempotency => (postgres::IDEMPOTENCY, sqlite::IDEMPOTENCY),
            Part::Knowledge => (postgres::KNOWLEDGE, sqlite::KNOWLEDGE),
            Part::Models => (postgres::MODELS, sqlite::MODELS),
            Part::Mcp => (postgres::MCP, sqlite::MCP),
            Part::Chats => (postgres::CHATS, sqlite::CHATS),
            Part::Usage => (postgres::USAGE, sqlite::USAGE),
            Part::Webhooks => (postgres::WEBHOOKS, sqlite::WEBHOOKS),
            Part::Guardrails => (postgres::GUARDRAILS, sqlite::GUARDRAILS),
            Part::ResponseCache => (postgres::RESPONSE_CACHE, sqlite::RESPONSE_CACHE),
        };
        match backend {
            Backend::Postgres => postgres,
            Backend::Sqlite => sqlite,
        }
    }
}

/// Each part's migrations, embedded at compile time (the macro must initialise a constant).
mod postgres {
    use diesel_migrations::{EmbeddedMigrations, embed_migrations};

    pub const TENANTS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres/tenants");
    pub const IDENTITY: EmbeddedMigrations =
        embed_migrations!("../../migrations/postgres/identity");
    pub const PROMPTS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres/prompts");
    pub const IDEMPOTENCY: EmbeddedMigrations =
        embed_migrations!("../../migrations/postgres/idempotency");
    pub const KNOWLEDGE: EmbeddedMigrations =
        embed_migrations!("../../migrations/postgres/knowledge");
    pub const MODELS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres/models");
    pub const MCP: EmbeddedMigrations = embed_migrations!("../../migrations/postgres/mcp");
    pub const CHATS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres/chats");
    pub const USAGE: EmbeddedMigrations = embed_migrations!("../../migrations/postgres/usage");
    pub const WEBHOOKS: EmbeddedMigrations =
        embed_migrations!("../../migrations/postgres/webhooks");
    pub const GUARDRAILS: EmbeddedMigrations =
        embed_migrations!("../../migrations/postgres/guardrails");
    pub const RESPONSE_CACHE: EmbeddedMigrations =
        embed_migrations!("../../migrations/postgres/response_cache");
}

mod sqlite {
    use diesel_migrations::{EmbeddedMigrations, embed_migrations};

    pub const TENANTS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite/tenants");
    pub const IDENTITY: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite/identity");
    pub const PROMPTS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite/prompts");
    pub const IDEMPOTENCY: EmbeddedMigrations =
        embed_migrations!("../../migrations/sqlite/idempotency");
    pub const KNOWLEDGE: EmbeddedMigrations =
        embed_migrations!("../../migrations/sqlite/knowledge");
    pub const MODELS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite/models");
    pub const MCP: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite/mcp");
    pub const CHATS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite/chats");
    pub const USAGE: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite/usage");
    pub const WEBHOOKS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite/webhooks");
    pub const GUARDRAILS: EmbeddedMigrations =
        embed_migrations!("../../migrations/sqlite/guardrails");
    pub const RESPONSE_CACHE: EmbeddedMigrations =
        embed_migrations!("../../migrations/sqlite/response_cache");
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Part {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Part::ALL
            .into_iter()
            .find(|part| part.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Part::ALL.iter().map(|part| part.name()).collect();
                format!("unknown store part `{name}` (one of {})", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_comes_with_what_it_needs_in_migration_order() {
        assert_eq!(
            Part::with_needs(&[Part::Chats]),
            vec![Part::Tenants, Part::Chats]
        );
        assert_eq!(
            Part::with_needs(&[Part::Mcp]),
            vec![
                Part::Tenants,
                Part::Prompts,
                Part::Webhooks,
                Part::Knowledge,
                Part::Models,
                Part::Mcp
            ]
        );
        assert_eq!(Part::with_needs(&Part::ALL), Part::ALL.to_vec());
    }

    #[test]
    fn every_part_migrates_after_the_parts_it_needs() {
        for (position, part) in Part::ALL.iter().enumerate() {
            for needed in part.needs() {
                let before = Part::ALL.iter().position(|p| p == needed);
                assert!(before < Some(position), "{part} needs {needed} first");
            }
        }
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for part in Part::ALL {
            assert_eq!(part.name().parse::<Part>(), Ok(part));
        }
        let refused = "billing".parse::<Part>().unwrap_err();
        assert!(
            refused.contains("unknown store part `billing`"),
            "{refused}"
        );
    }

    #[test]
    fn migration_versions_are_unique_across_parts() {
        use diesel::migration::MigrationSource;
        for backend in [Backend::Postgres, Backend::Sqlite] {
            let mut versions = std::collections::BTreeMap::new();
            for part in Part::ALL {
                let migrations: Vec<Box<dyn diesel::migration::Migration<diesel::sqlite::Sqlite>>> =
                    MigrationSource::<diesel::sqlite::Sqlite>::migrations(&part.migrations(backend))
                        .unwrap();
                assert!(!migrations.is_empty(), "{part} has no migrations");
                for migration in migrations {
                    let version = migration.name().version().to_string();
                    if let Some(other) = versions.insert(version.clone(), part) {
                        panic!("{backend:?}: version {version} is in {other} and {part}");
                    }
                }
            }
        }
    }
}
