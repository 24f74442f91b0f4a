//! The in-memory [`OrganizationStore`]: the port's reference implementation (the contract
//! suite runs against it as against the SQL stores), for tests and services that keep their
//! tenants in configuration.

use std::{
    collections::BTreeMap,
    sync::{Mutex, PoisonError},
};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{Organization, OrganizationChange, OrganizationStore};

#[derive(Default)]
struct State {
    /// By id, so listing in id order (creation order) is a range.
    organizations: BTreeMap<OrganizationId, Organization>,
    audit: Vec<AuditRecord>,
}

#[derive(Default)]
pub struct InMemoryOrganizationStore {
    state: Mutex<State>,
}

impl InMemoryOrganizationStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The audit records written with the organizations, in order.
    pub fn audit_records(&self) -> Vec<AuditRecord> {
        self.with(|state| state.audit.clone())
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[async_trait]
impl OrganizationStore for InMemoryOrganizationStore {
    async fn insert(
        &self,
        organization: &Organization,
        audit: &[AuditRecord],
    ) -> Result<(), DomainError> {
        self.with(|state| {
            if state.organizations.contains_key(&organization.id) {
                return Err(DomainError::Conflict {
                    code: "already_exists",
                    message: format!("organization {} already exists", organization.id),
                });
            }
            // As the SQL stores' foreign key: an event names a stored organization.
            let known = |id: &OrganizationId| {
                id == &organization.id || state.organizations.contains_key(id)
            };
            let stray = audit
                .iter()
                .filter_map(|record| record.organization_id.as_ref())
                .find(|id| !known(id));
            if let Some(stray) = stray {
                return Err(DomainError::Conflict {
                    code: "missing_reference",
                    message: format!("organization {stray} does not exist"),
                });
            }
            state
                .organizations
                .insert(organization.id.clone(), organization.clone());
            state.audit.extend_from_slice(audit);
            Ok(())
        })
    }

    async fn get(&self, id: &OrganizationId) -> Result<Option<Organization>, DomainError> {
        Ok(self.with(|state| state.organizations.get(id).cloned()))
    }

    async fn update(
        &self,
        id: &OrganizationId,
        change: &OrganizationChange,
        updated_at: DateTime<Utc>,
        audit: &[AuditRecord],
    ) -> Result<Option<Organization>, DomainError> {
        self.with(|state| {
            let Some(stored) = state.organizations.get(id) else {
                return Ok(None);
            };
            // As the SQL stores' foreign key: an event names a stored organization.
            let stray = audit
                .iter()
                .filter_map(|record| record.organization_id.as_ref())
                .find(|organization| !state.organizations.contains_key(organization));
            if let Some(stray) = stray {
                return Err(DomainError::Conflict {
                    code: "missing_reference",
                    message: format!("organization {stray} does not exist"),
                });
            }
            let changed = change.apply(stored, updated_at);
            state.organizations.insert(id.clone(), changed.clone());
            state.audit.extend_from_slice(audit);
            Ok(Some(changed))
        })
    }

    async fn list(
        &self,
        page: &PageRequest<OrganizationId>,
    ) -> Result<Vec<Organization>, DomainError> {
        Ok(self.with(|state| {
            state
                .organizations
                .values()
                .filter(|org| page.after.as_ref().is_none_or(|after| &org.id > after))
                .take(usize::try_from(page.limit.overfetch()).unwrap_or(usize::MAX))
                .cloned()
                .collect()
        }))
    }

    async fn count(&self) -> Result<u64, DomainError> {
        Ok(self.with(|state| state.organizations.len() as u64))
    }
}
