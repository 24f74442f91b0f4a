//! The tenant services over an opened (and migrated) database.

use std::{sync::Arc, time::Duration};

use tessera_audit::{AuditService, Retention};
use tessera_auth::{
    Argon2SecretHasher, HmacApiKeyHasher, JwtKeys, KeyError, OidcProvider, OidcVerifier, TokenRules,
};
use tessera_identity::{ApiKeyService, CredentialLimitsService, IdentityService, TokenSettings};
use tessera_kernel::{CursorCodec, SystemClock};
use tessera_organizations::OrganizationService;
use tessera_store::{
    Database, PoolOptions, SqlApiKeyStore, SqlAuditStore, SqlClientStore, SqlCredentialLimitsStore,
    SqlOrganizationStore, StoreError,
};

use crate::{config::Settings, secrets};

/// Why the tenant services could not be built; each message is one line naming what to fix.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("config key `data_dir`: {0}")]
    DataDir(String),
    #[error("config key `auth.keys_dir`: {0}")]
    Keys(#[from] KeyError),
}

/// Opens (and migrates) the configured database, building the pool.
pub async fn open_database(settings: &Settings) -> Result<Database, StoreError> {
    let url = settings.database();
    Database::migrate(&url).await?;
    let options = PoolOptions {
        max_connections: settings.database.max_connections,
        acquire_timeout: Duration::from_secs(settings.database.acquire_timeout_secs),
    };
    Database::connect(&url, options).await
}

/// The services that manage tenants and their credentials (organizations, API clients, API
/// keys, token issuing and verification): all the admin CLI's `org`, `client` and `key`
/// commands need, without the models, the vector index or the workers the API opens besides.
pub struct Tenancy {
    pub organizations: OrganizationService,
    pub identity: IdentityService,
    pub api_keys: ApiKeyService,
    /// API keys' and clients' budgets and model allow-lists.
    pub credential_limits: CredentialLimitsService,
    /// The audit log (the admin CLI's `audit list` reads every organization's).
    pub audit: AuditService,
    pub keys: Arc<JwtKeys>,
    pub cursors: CursorCodec,
}

/// Builds [`Tenancy`] over an opened database; `issuer` is the token issuer URL.
pub fn tenancy(
    settings: &Settings,
    database: &Database,
    issuer: &str,
) -> Result<Tenancy, SetupError> {
    // Outbound HTTPS (identity providers) and the listener share one rustls provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cursors = secrets::cursor_codec(settings).map_err(SetupError::DataDir)?;
    let clock = Arc::new(SystemClock);
    let organizations = OrganizationService::new(
        Arc::new(SqlOrganizationStore::new(database.clone())),
        clock.clone(),
        cursors.clone(),
    );
    let rules = TokenRules {
        issuer: issuer.to_owned(),
        audience: settings.auth.audience.clone(),
        leeway_secs: settings.auth.leeway_secs,
    };
    let keys = Arc::new(JwtKeys::load_or_create(&settings.keys_dir(), rules)?);
    let identity = IdentityService::new(
        Arc::new(SqlClientStore::new(database.clone())),
        Arc::new(Argon2SecretHasher::default()),
        keys.clone(),
        keys.clone(),
        clock.clone(),
        cursors.clone(),
        TokenSettings {
            issuer: issuer.to_owned(),
            audience: settings.auth.audience.clone(),
            lifetime: Duration::from_secs(settings.auth.token_lifetime_secs),
        },
    );
    let sessions = settings
        .auth
        .oidc
        .iter()
        .map(|provider| {
            Arc::new(OidcVerifier::new(OidcProvider {
                // Exactly as configured: some providers' `iss` ends with a slash.
                issuer: provider.issuer.clone(),
                audience: provider.audience.clone(),
                organization_claim: provider.organization_claim.clone(),
                scopes_claim: provider.scopes_claim.clone(),
                leeway_secs: settings.auth.leeway_secs,
                refresh_interval: Duration::from_secs(provider.jwks_refresh_secs),
            })) as Arc<dyn tessera_identity::SessionVerifier>
        })
        .collect();
    let api_key_hash_key = secrets::api_key_hash_key(settings).map_err(SetupError::DataDir)?;
    let api_key_store = Arc::new(SqlApiKeyStore::new(database.clone()));
    let credential_limits = CredentialLimitsService::new(
        Arc::new(SqlCredentialLimitsStore::new(database.clone())),
        api_key_store.clone(),
        Arc::new(SqlClientStore::new(database.clone())),
        clock.clone(),
    );
    let api_keys = ApiKeyService::new(
        api_key_store,
        Arc::new(HmacApiKeyHasher::new(&api_key_hash_key)),
        clock,
        cursors.clone(),
    );
    let identity = identity
        .with_sessions(sessions)
        .with_organizations(Arc::new(SqlOrganizationStore::new(database.clone())))
        .with_api_keys(api_keys.clone())
        .with_refusal_log(Arc::new(SqlAuditStore::new(database.clone())));
    let audit = AuditService::new(
        Arc::new(SqlAuditStore::new(database.clone())),
        Arc::new(SystemClock),
        cursors.clone(),
        Retention::days(settings.audit.retention_days),
    );
    Ok(Tenancy {
        organizations,
        identity,
        api_keys,
        credential_limits,
        audit,
        keys,
        cursors,
    })
}
