//! Authentication that records what it refuses: the service's entry points taking the
//! request's origin, which write a refused credential's [`Refusal`] to the audit log when a
//! [`RefusalLog`] is set.

use std::sync::Arc;

use tessera_kernel::{Origin, Principal};

use crate::{
    ClientSecret, IdentityError, IdentityService, IssuedToken, RefusalLog, refusal::Refusal,
};

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
