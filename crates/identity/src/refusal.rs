//! Refused credentials, for the audit log: which kind of credential was refused, and, when the
//! refusal got that far, which client or key it claimed to be and that one's organization.
//! Never the credential itself. Outages (the store or the identity provider could not answer)
//! and requests that were authenticated but asked for too much (`invalid_scope`) are not
//! refusals of a credential and are not recorded.

use std::fmt::Display;

use tessera_kernel::{AuditRecord, OrganizationId, Origin};

use crate::{IdentityError, TokenError};

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
    pub(crate) fn record(
        &self,
        origin: &Origin,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Option<AuditRecord> {
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
