//! What the first embedded run creates and announces once: the default organization and an
//! `org:admin` client for it.

use tessera_identity::{ClientName, ClientSecret, NewClient};
use tessera_kernel::{Actor, DomainError, Scope, ScopeSet};
use tessera_organizations::Organization;
use tessera_setup::config::Settings;

use crate::Services;

/// The default organization and its first client, created by this start.
#[derive(Debug, Clone)]
pub struct Bootstrap {
    pub organization: Organization,
    pub client_id: String,
    pub client_secret: ClientSecret,
}

impl Services {
    /// Creates the default organization and its `org:admin` client when the database holds
    /// no organization yet; `None` when it already does.
    pub async fn bootstrap(&self, settings: &Settings) -> Result<Option<Bootstrap>, DomainError> {
        let Some(organization) = self
            .organizations
            .ensure_first(&settings.default_organization_name)
            .await?
        else {
            return Ok(None);
        };
        let new = NewClient {
            organization_id: organization.id.clone(),
            name: ClientName::parse("bootstrap").map_err(DomainError::internal)?,
            scopes: [Scope::ORG_ADMIN].into_iter().collect::<ScopeSet>(),
        };
        let (client, client_secret) = self.identity.create_client(new, &Actor::System).await?;
        Ok(Some(Bootstrap {
            organization,
            client_id: client.id.to_string(),
            client_secret,
        }))
    }
}
