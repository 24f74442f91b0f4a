//! The in-memory [`GuardrailPolicyStore`]: the port's reference implementation (the contract
//! suite runs against it as against the SQL stores), for tests. It keeps no organizations,
//! so unlike the SQL stores it cannot refuse an audit record of an organization that does
//! not exist.

use std::{
    collections::BTreeMap,
    sync::{Mutex, PoisonError},
};

use async_trait::async_trait;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId};

use crate::{GuardrailPolicyStore, PolicyScope, StoredPolicy};

#[derive(Default)]
struct State {
    policies: BTreeMap<(OrganizationId, PolicyScope), StoredPolicy>,
    audit: Vec<AuditRecord>,
}

#[derive(Default)]
pub struct InMemoryGuardrailPolicyStore {
    state: Mutex<State>,
}

impl InMemoryGuardrailPolicyStore {
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
impl GuardrailPolicyStore for InMemoryGuardrailPolicyStore {
    async fn get(
        &self,
        organization: &OrganizationId,
        scope: &PolicyScope,
    ) -> Result<Option<StoredPolicy>, DomainError> {
        Ok(self.with(|state| {
            (state.policies)
                .get(&(organization.clone(), scope.clone()))
                .cloned()
        }))
    }

    async fn put(&self, policy: &StoredPolicy, audit: &AuditRecord) -> Result<(), DomainError> {
        self.with(|state| {
            let key = (policy.organization_id.clone(), policy.scope.clone());
            state.policies.insert(key, policy.clone());
            state.audit.push(audit.clone());
        });
        Ok(())
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        scope: &PolicyScope,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let removed = (state.policies)
                .remove(&(organization.clone(), scope.clone()))
                .is_some();
            if removed {
                state.audit.push(audit.clone());
            }
            removed
        }))
    }

    async fn list_models(
        &self,
        organization: &OrganizationId,
    ) -> Result<Vec<StoredPolicy>, DomainError> {
        Ok(self.with(|state| {
            (state.policies.values())
                .filter(|policy| &policy.organization_id == organization)
                .filter(|policy| matches!(policy.scope, PolicyScope::Model(_)))
                .cloned()
                .collect()
        }))
    }
}
