//! The in-memory [`CachePolicyStore`]: the port's reference implementation (the contract
//! suite runs against it as against the SQL stores), for tests. It keeps no organizations,
//! so unlike the SQL stores it cannot refuse an audit record of an organization that does
//! not exist.

use std::{
    collections::BTreeMap,
    sync::{Mutex, PoisonError},
};

use async_trait::async_trait;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId};

use crate::{CachePolicyStore, StoredCachePolicy};

#[derive(Default)]
struct State {
    /// By organization, then model id: a range of one organization is its list, in order.
    policies: BTreeMap<(OrganizationId, String), StoredCachePolicy>,
    audit: Vec<AuditRecord>,
}

#[derive(Default)]
pub struct InMemoryCachePolicyStore {
    state: Mutex<State>,
}

impl InMemoryCachePolicyStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The audit records written with the changes made, in order.
    pub fn audit_records(&self) -> Vec<AuditRecord> {
        self.with(|state| state.audit.clone())
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[async_trait]
impl CachePolicyStore for InMemoryCachePolicyStore {
    async fn get(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Option<StoredCachePolicy>, DomainError> {
        Ok(self.with(|state| {
            (state.policies)
                .get(&(organization.clone(), model_id.to_owned()))
                .cloned()
        }))
    }

    async fn list(
        &self,
        organization: &OrganizationId,
    ) -> Result<Vec<StoredCachePolicy>, DomainError> {
        Ok(self.with(|state| {
            (state.policies.values())
                .filter(|policy| &policy.organization_id == organization)
                .cloned()
                .collect()
        }))
    }

    async fn put(
        &self,
        policy: &StoredCachePolicy,
        audit: &AuditRecord,
    ) -> Result<(), DomainError> {
        self.with(|state| {
            let key = (policy.organization_id.clone(), policy.model_id.clone());
            state.policies.insert(key, policy.clone());
            state.audit.push(audit.clone());
        });
        Ok(())
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        model_id: &str,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let removed = (state.policies)
                .remove(&(organization.clone(), model_id.to_owned()))
                .is_some();
            if removed {
                state.audit.push(audit.clone());
            }
            removed
        }))
    }
}
