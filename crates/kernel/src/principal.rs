//! Who is calling, and what they may do. Scopes follow the service interface:
//! `<group>:<action>`, with `chat:*` accepted as a spelling of `chats:*`. Implications:
//! `<group>:admin` grants read, write and delete of its group; `org:admin` grants every
//! resource scope; `org:owner` grants everything `org:admin` does.

use std::{collections::BTreeSet, fmt, str::FromStr};

use serde::{Deserialize, Serialize};

use crate::OrganizationId;

/// The resource groups scopes are granted on.
const GROUPS: &[&str] = &[
    "chats",
    "models",
    "datasets",
    "files",
    "particles",
    "system-prompts",
    "usage",
    "connections",
    "channels",
    "org",
];

/// What a scope allows within its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Read,
    Write,
    Delete,
    Invoke,
    Admin,
    Owner,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::Read => "read",
            Action::Write => "write",
            Action::Delete => "delete",
            Action::Invoke => "invoke",
            Action::Admin => "admin",
            Action::Owner => "owner",
        }
    }
}

/// Why a scope string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scope `{0}`")]
pub struct ScopeError(pub String);

/// One permission, e.g. `files:read`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Scope {
    group: &'static str,
    action: Action,
}

impl Scope {
    pub fn group(&self) -> &'static str {
        self.group
    }

    pub fn action(&self) -> Action {
        self.action
    }

    /// Whether holding `self` grants `required`.
    pub fn grants(&self, required: &Scope) -> bool {
        if self == required {
            return true;
        }
        match (self.group, self.action) {
            ("org", Action::Owner) => true,
            ("org", Action::Admin) => required != &Scope::ORG_OWNER,
            (group, Action::Admin) => {
                group == required.group
                    && matches!(
                        required.action,
                        Action::Read | Action::Write | Action::Delete
                    )
            }
            _ => false,
        }
    }

    /// Every scope Tessera knows, in canonical spelling (for discovery documents).
    pub fn all() -> Vec<Scope> {
        let actions = [
            Action::Read,
            Action::Write,
            Action::Delete,
            Action::Invoke,
            Action::Admin,
            Action::Owner,
        ];
        GROUPS
            .iter()
            .flat_map(|group| {
                actions
                    .iter()
                    .map(move |action| format!("{group}:{}", action.as_str()))
            })
            .filter_map(|text| text.parse().ok())
            .collect()
    }

    pub const ORG_ADMIN: Scope = Scope {
        group: "org",
        action: Action::Admin,
    };
    pub const ORG_OWNER: Scope = Scope {
        group: "org",
        action: Action::Owner,
    };
    /// Starts completions.
    pub const CHATS_INVOKE: Scope = Scope {
        group: "chats",
        action: Action::Invoke,
    };
    /// Sees and manages every chat of the organization, not only the caller's own.
    pub const CHATS_ADMIN: Scope = Scope {
        group: "chats",
        action: Action::Admin,
    };
    /// Reads the organization's files (and attaches them to chat messages).
    pub const FILES_READ: Scope = Scope {
        group: "files",
        action: Action::Read,
    };
    /// Uploads and changes the organization's files.
    pub const FILES_WRITE: Scope = Scope {
        group: "files",
        action: Action::Write,
    };
    /// Reads the organization's datasets and searches them.
    pub const DATASETS_READ: Scope = Scope {
        group: "datasets",
        action: Action::Read,
    };
    /// Sees every principal's usage, not only the caller's own.
    pub const USAGE_ADMIN: Scope = Scope {
        group: "usage",
        action: Action::Admin,
    };
}

impl FromStr for Scope {
    type Err = ScopeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let unknown = || ScopeError(text.to_owned());
        let (group, action) = text.split_once(':').ok_or_else(unknown)?;
        let group = if group == "chat" { "chats" } else { group };
        let group = GROUPS
            .iter()
            .copied()
            .find(|known| *known == group)
            .ok_or_else(unknown)?;
        let action = match action {
            "read" => Action::Read,
            "write" => Action::Write,
            "delete" => Action::Delete,
            "invoke" if group == "chats" => Action::Invoke,
            "admin" => Action::Admin,
            "owner" if group == "org" => Action::Owner,
            _ => return Err(unknown()),
        };
        if group == "org" && !matches!(action, Action::Admin | Action::Owner) {
            return Err(unknown());
        }
        if group == "usage" && !matches!(action, Action::Read | Action::Admin) {
            return Err(unknown());
        }
        Ok(Scope { group, action })
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.group, self.action.as_str())
    }
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// The scopes a principal holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ScopeSet(BTreeSet<Scope>);

impl ScopeSet {
    /// Parses a space- or comma-separated list (the OAuth2 `scope` form, or a CLI list).
    pub fn parse_list(text: &str) -> Result<Self, ScopeError> {
        text.split([' ', ','])
            .filter(|part| !part.is_empty())
            .map(str::parse)
            .collect::<Result<BTreeSet<_>, _>>()
            .map(Self)
    }

    pub fn allows(&self, required: &Scope) -> bool {
        self.0.iter().any(|held| held.grants(required))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Scope> {
        self.0.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<Scope> for ScopeSet {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl fmt::Display for ScopeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(" "))
    }
}

/// Whether the principal is a person (session token), a machine client (client
/// credentials) or a long-lived API key (`tsk_…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrincipalKind {
    User,
    Client,
    ApiKey,
}

impl PrincipalKind {
    /// The stored and serialised spelling: `user`, `client` or `api_key`.
    pub fn as_str(self) -> &'static str {
        match self {
            PrincipalKind::User => "user",
            PrincipalKind::Client => "client",
            PrincipalKind::ApiKey => "api_key",
        }
    }
}

/// The authenticated caller of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Principal {
    pub organization_id: OrganizationId,
    /// The user's subject claim, the client's id or the API key's id.
    pub subject: String,
    pub kind: PrincipalKind,
    pub scopes: ScopeSet,
    /// Where the request that authenticated came from (client address, request id), when
    /// it came over the network; audit records carry it. Not part of who the caller is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// Where a request came from: the client's address (as the listener saw it, or as a
/// trusted proxy reported it) and the request id it was served under.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    pub address: Option<String>,
    pub request_id: Option<String>,
}

impl Principal {
    pub fn can(&self, required: &Scope) -> bool {
        self.scopes.allows(required)
    }

    /// The same principal, acting from `origin`.
    pub fn with_origin(mut self, origin: Origin) -> Self {
        self.origin = Some(origin);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(text: &str) -> Scope {
        text.parse().unwrap()
    }

    #[test]
    fn the_catalog_matches_the_interface() {
        let all: Vec<String> = Scope::all().iter().map(ToString::to_string).collect();
        assert_eq!(all.len(), 5 + 7 * 4 + 2 + 2, "{all:?}");
        for expected in [
            "chats:invoke",
            "system-prompts:admin",
            "usage:read",
            "usage:admin",
            "org:admin",
            "org:owner",
            "channels:delete",
        ] {
            assert!(all.iter().any(|s| s == expected), "{expected}");
        }
    }

    #[test]
    fn the_named_scopes_are_the_parsed_ones() {
        for (named, text) in [
            (Scope::ORG_ADMIN, "org:admin"),
            (Scope::ORG_OWNER, "org:owner"),
            (Scope::CHATS_INVOKE, "chats:invoke"),
            (Scope::CHATS_ADMIN, "chats:admin"),
            (Scope::FILES_READ, "files:read"),
            (Scope::FILES_WRITE, "files:write"),
            (Scope::DATASETS_READ, "datasets:read"),
            (Scope::USAGE_ADMIN, "usage:admin"),
        ] {
            assert_eq!(named, scope(text));
        }
    }

    #[test]
    fn both_spellings_of_chat_scopes_are_one_scope() {
        assert_eq!(scope("chat:write"), scope("chats:write"));
        assert_eq!(scope("chat:invoke").to_string(), "chats:invoke");
    }

    #[test]
    fn unknown_scopes_are_refused() {
        for bad in [
            "",
            "files",
            "files:fly",
            "widgets:read",
            "org:read",
            "usage:write",
            "files:invoke",
            "files:owner",
        ] {
            assert!(bad.parse::<Scope>().is_err(), "{bad}");
        }
    }

    #[test]
    fn admin_implies_read_write_delete_of_its_group_only() {
        let admin = scope("files:admin");
        assert!(admin.grants(&scope("files:read")));
        assert!(admin.grants(&scope("files:write")));
        assert!(admin.grants(&scope("files:delete")));
        assert!(!admin.grants(&scope("datasets:read")));
        assert!(!scope("chats:admin").grants(&scope("chats:invoke")));
        assert!(scope("usage:admin").grants(&scope("usage:read")));
        assert!(!scope("files:read").grants(&scope("files:write")));
    }

    #[test]
    fn org_admin_grants_every_resource_scope_but_not_owner() {
        let admin = scope("org:admin");
        for required in [
            "chats:invoke",
            "models:delete",
            "usage:admin",
            "system-prompts:write",
        ] {
            assert!(admin.grants(&scope(required)), "{required}");
        }
        assert!(!admin.grants(&Scope::ORG_OWNER));
        assert!(Scope::ORG_OWNER.grants(&Scope::ORG_ADMIN));
    }

    #[test]
    fn scope_lists_parse_with_spaces_or_commas() {
        let set = ScopeSet::parse_list("files:read, chat:invoke  models:read").unwrap();
        assert_eq!(set.to_string(), "chats:invoke files:read models:read");
        assert!(ScopeSet::parse_list("files:read,nope").is_err());
        assert!(set.allows(&scope("files:read")));
        assert!(!set.allows(&scope("files:write")));
    }

    #[test]
    fn principal_kinds_are_spelled_in_snake_case() {
        for kind in [
            PrincipalKind::User,
            PrincipalKind::Client,
            PrincipalKind::ApiKey,
        ] {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.as_str())
            );
        }
        assert_eq!(PrincipalKind::ApiKey.as_str(), "api_key");
    }
}
