//! Refused credentials, for the audit log: which kind of credential was refused, and, when the
//! refusal got that far, which client or key it claimed to be and that one's organization.
//! Never the credential itself. Outages (the store or the identity provider could not answer)
//! and requests that were authenticated but asked for too much (`invalid_scope`) are not
//! refusals of a credential and are not recorded.

use std::{fmt::Display, sync::Arc};

use tessera_kernel::{AuditRecord, OrganizationId, Origin, Principal};

use crate::{ClientSecret, IdentityError, IdentityService, IssuedToken, RefusalLog, TokenError};

/// A failed authentication and what is known about who attempted it.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) error: IdentityError,
    /// The kind of credential refused; `None` when nothing is to be recorded.
    credential: Option<&'static str>,
    organization: Option<OrganizationId>,
    claimed: Option<String>,
}

impl Refusal {
    pub(crate) const ACCESS_TOKEN: &'static str = "access_token";
    pub(crate) const SESSION_TOKEN: &'static str = "session_token";
    pub(crate) const API_KEY: &'static str = "api_key";
    pub(crate) const CLIENT_SECRET: &'static str = "client_secret";

    /// A credential refused before anything about its holder was known.
    pub(crate) fn anonymous(credential: &'static str, error: IdentityError) -> Self {
        Self {
            error,
            credential: Some(credential),
            organization: None,
            claimed: None,
        }
    }

    /// A credential that claimed to be `claimed` (a client or key id), of `organization`
    /// when that one exists.
    pub(crate) fn claiming(
        credential: &'static str,
        organization: Option<&OrganizationId>,
        claimed: &impl Display,
        error: IdentityError,
    ) -> Self {
        Self {
            error,
            credential: Some(credential),
            organization: organization.cloned(),
            claimed: Some(claimed.to_string()),
        }
    }

    /// A failure that refuses no credential (an outage, a scope the client does not hold).
    pub(crate) fn not_recorded(error: IdentityError) -> Self {
        Self {
            error,
            credential: None,
            organization: None,
            claimed: None,
        }
    }

    /// The audit record of this refusal, unless it is not one to record.
    fn record(&self, origin: &Origin, now: chrono::DateTime<chrono::Utc>) -> Option<AuditRecord> {
        let credential = self.credential?;
        if matches!(
            self.error,
            IdentityError::InvalidToken(TokenError::Unavailable) | IdentityError::Domain(_)
        ) {
            return None;
        }
        Some(AuditRecord::failed_authentication(
            self.organization.clone(),
            credential,
            self.claimed.clone(),
            Some(origin),
            now,
        ))
    }
}

impl IdentityService {
    /// Record refused credentials in `log` (see `authenticate_from`, `issue_token_from`).
    pub fn with_refusal_log(mut self, log: Arc<dyn RefusalLog>) -> Self {
        self.refusals = Some(log);
        self
    }

    /// `authenticate`, recording a refused credential, with the request's origin, in the
    /// refusal log when one is set. A failure to record is logged, never the request's.
    pub async fn authenticate_from(
        &self,
        token: &str,
        origin: &Origin,
    ) -> Result<Principal, IdentityError> {
        match self.authenticate_attributed(token).await {
            Ok(principal) => Ok(principal),
            Err(refusal) => {
                self.note(&refusal, origin).await;
                Err(refusal.error)
            }
        }
    }

    /// `issue_token`, recording a refused client credential like `authenticate_from`.
    pub async fn issue_token_from(
        &self,
        client_id: &str,
        secret: &ClientSecret,
        requested_scope: Option<&str>,
        origin: &Origin,
    ) -> Result<IssuedToken, IdentityError> {
        match self
            .issue_token_attributed(client_id, secret, requested_scope)
            .await
        {
            Ok(issued) => Ok(issued),
            Err(refusal) => {
                self.note(&refusal, origin).await;
                Err(refusal.error)
            }
        }
    }

    async fn note(&self, refusal: &Refusal, origin: &Origin) {
        let Some(log) = &self.refusals else { return };
        let Some(record) = refusal.record(origin, self.clock.now()) else {
            return;
        };
        if let Err(error) = log.record(&record).await {
            tracing::warn!(%error, "refused credential not recorded in the audit log");
        }
    }
}
