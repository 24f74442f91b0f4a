//! Whether a principal authenticated earlier still stands: work run later on someone's
//! behalf (a batch's lines, hours after it was created) asks before each step, so revoking
//! the API key or the client that started it stops it as it stops that credential's next
//! request. A user's session token is the identity provider's to revoke; this service keeps
//! no record of it, so a user stands while their organization's provider last said so.

use tessera_kernel::{Principal, PrincipalKind};

use crate::{ApiKeyId, ClientId, IdentityError, IdentityService, TokenError};

impl IdentityService {
    /// `Ok` while `principal`'s credential is neither revoked nor expired: an API key that
    /// is still active (`InvalidToken(UnknownApiKey)` once revoked, `ApiKeyExpired` once
    /// expired), a client that is still active in its organization (`InvalidToken(Revoked)`).
    /// `InvalidToken(Unavailable)` when the store cannot answer.
    pub async fn still_stands(&self, principal: &Principal) -> Result<(), IdentityError> {
        let refused = |reason| Err(IdentityError::InvalidToken(reason));
        match principal.kind {
            PrincipalKind::User => Ok(()),
            PrincipalKind::ApiKey => {
                let Ok(id) = principal.subject.parse::<ApiKeyId>() else {
                    return refused(TokenError::UnknownApiKey);
                };
                match &self.api_keys {
                    Some(keys) => keys
                        .still_active(&principal.organization_id, &id)
                        .await
                        .map_err(IdentityError::InvalidToken),
                    None => refused(TokenError::UnknownApiKey),
                }
            }
            PrincipalKind::Client => {
                let Ok(id) = principal.subject.parse::<ClientId>() else {
                    return refused(TokenError::Revoked);
                };
                let stored = self
                    .clients
                    .find_for_authentication(&id)
                    .await
                    .map_err(|_| IdentityError::InvalidToken(TokenError::Unavailable))?;
                let active = stored.is_some_and(|stored| {
                    stored.client.is_active()
                        && stored.client.organization_id == principal.organization_id
                });
                if active {
                    Ok(())
                } else {
                    refused(TokenError::Revoked)
                }
            }
        }
    }
}
