//! The creator rule every operation on a credential applies, apart from the services that
//! apply it (clients in `service`, API keys in `api_key_service`).

use tessera_kernel::{Actor, DomainError, ScopeSet};

use crate::IdentityError;

/// The creator rule, applied to every operation on a credential (creating, rotating or
/// revoking a client; creating or revoking an API key): a principal acts only on credentials
/// whose every scope it holds itself, so no caller gains or takes away power beyond its own
/// (403 `scope_not_held`, naming the first scope it lacks after `doing`). Operators
/// (`tessera-admin`) and the service itself act on any credential.
pub(crate) fn act_within_held_scopes(
    actor: &Actor,
    scopes: &ScopeSet,
    doing: &str,
) -> Result<(), IdentityError> {
    let Actor::Principal(principal) = actor else {
        return Ok(());
    };
    match scopes.iter().find(|scope| !principal.can(scope)) {
        None => Ok(()),
        Some(beyond) => Err(DomainError::Forbidden {
            code: "scope_not_held",
            message: format!("{doing} `{beyond}`, which the caller does not hold"),
        }
        .into()),
    }
}
