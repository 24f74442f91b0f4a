use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use chrono::{DateTime, Duration, Utc};
use tessera_kernel::{Actor, Clock, CursorCodec, DomainError, OrganizationId, Page, PageRequest};

use crate::{
    NewOrganization, Organization, OrganizationChange, OrganizationName, OrganizationStore, Plan,
};

/// Errors of the organization service.
#[derive(Debug, thiserror::Error)]
pub enum OrganizationError {
    #[error("organization {0} was not found")]
    NotFound(OrganizationId),
    #[error(transparent)]
    Domain(#[from] DomainError),
}

impl From<OrganizationError> for DomainError {
    fn from(error: OrganizationError) -> Self {
        match error {
            OrganizationError::NotFound(id) => DomainError::not_found("organization", id),
            OrganizationError::Domain(error) => error,
        }
    }
}

/// The list name cursors of this service are bound to.
const CURSOR_LIST: &str = "organizations";

/// How long a plan read by [`OrganizationService::plan`] is reused. Every completion needs
/// its organization's plan, and plans change rarely and only by operators: a change reaches
/// a running process within this time.
const PLAN_CACHE_SECS: i64 = 5;
/// Cached plans beyond this many are dropped all at once (a bound, not an LRU: the cache is
/// refilled by one read per organization).
const PLAN_CACHE_ENTRIES: usize = 10_000;

/// Creates, reads, lists and changes organizations.
#[derive(Clone)]
pub struct OrganizationService {
    store: Arc<dyn OrganizationStore>,
    clock: Arc<dyn Clock>,
    cursors: CursorCodec,
    plans: Arc<Mutex<HashMap<OrganizationId, CachedPlan>>>,
}

/// A plan and when it was read.
type CachedPlan = (Plan, DateTime<Utc>);

impl OrganizationService {
    pub fn new(
        store: Arc<dyn OrganizationStore>,
        clock: Arc<dyn Clock>,
        cursors: CursorCodec,
    ) -> Self {
        Self {
            store,
            clock,
            cursors,
            plans: Arc::default(),
        }
    }

    pub async fn create(
        &self,
        new: NewOrganization,
        actor: &Actor,
    ) -> Result<Organization, OrganizationError> {
        let now = self.clock.now();
        let organization = Organization {
            id: OrganizationId::generate(),
            name: new.name.as_str().to_owned(),
            plan: new.plan,
            image_ocr: false,
            created_at: now,
            updated_at: now,
        };
        let audit = actor.record(
            &organization.id,
            "organization.create",
            "organization",
            organization.id.as_str(),
            now,
        );
        self.store.insert(&organization, &[audit]).await?;
        Ok(organization)
    }

    pub async fn get(&self, id: &OrganizationId) -> Result<Organization, OrganizationError> {
        self.store
            .get(id)
            .await?
            .ok_or_else(|| OrganizationError::NotFound(id.clone()))
    }

    /// Changes the organization's settings (`PATCH /v1/organization`, `tessera-admin org
    /// set`), writing the audit event `organization.update` in the change's transaction. A
    /// change of nothing writes nothing and answers the organization as it is.
    pub async fn update(
        &self,
        id: &OrganizationId,
        change: OrganizationChange,
        actor: &Actor,
    ) -> Result<Organization, OrganizationError> {
        if change.is_empty() {
            return self.get(id).await;
        }
        let now = self.clock.now();
        let audit = actor.record(id, "organization.update", "organization", id.as_str(), now);
        self.store
            .update(id, &change, now, &[audit])
            .await?
            .ok_or_else(|| OrganizationError::NotFound(id.clone()))
    }

    /// Whether the organization's uploaded images are read by OCR (its `image_ocr`), read
    /// from the store each time: a change applies to the next upload.
    pub async fn reads_images(&self, id: &OrganizationId) -> Result<bool, OrganizationError> {
        Ok(self.get(id).await?.image_ocr)
    }

    /// The organization's plan, read at most once per [`PLAN_CACHE_SECS`] per organization.
    pub async fn plan(&self, id: &OrganizationId) -> Result<Plan, OrganizationError> {
        let now = self.clock.now();
        let fresh = Duration::seconds(PLAN_CACHE_SECS);
        let cached = (self.plans.lock().unwrap_or_else(PoisonError::into_inner))
            .get(id)
            .filter(|(_, read_at)| now - *read_at < fresh && *read_at <= now)
            .map(|(plan, _)| *plan);
        if let Some(plan) = cached {
            return Ok(plan);
        }
        let plan = self.get(id).await?.plan;
        let mut plans = self.plans.lock().unwrap_or_else(PoisonError::into_inner);
        if plans.len() >= PLAN_CACHE_ENTRIES {
            plans.clear();
        }
        plans.insert(id.clone(), (plan, now));
        Ok(plan)
    }

    /// One page of organizations in creation order; `cursor` is a previous page's `nextCursor`.
    pub async fn list(
        &self,
        limit: tessera_kernel::Limit,
        cursor: Option<&str>,
    ) -> Result<Page<Organization>, OrganizationError> {
        let after = cursor
            .map(|c| self.cursors.decode::<OrganizationId>(CURSOR_LIST, "", c))
            .transpose()
            .map_err(DomainError::from)?;
        let rows = self.store.list(&PageRequest { limit, after }).await?;
        let total = self.store.count().await?;
        Ok(Page::from_overfetch(rows, limit, Some(total), |last| {
            self.cursors.encode(CURSOR_LIST, "", &last.id)
        }))
    }

    /// Creates the named organization on a first run, when none exists yet; returns it only
    /// when it was created, so callers can announce it once.
    pub async fn ensure_first(
        &self,
        name: &str,
    ) -> Result<Option<Organization>, OrganizationError> {
        if self.store.count().await? > 0 {
            return Ok(None);
        }
        let name = OrganizationName::parse(name)
            .map_err(|e| DomainError::invalid(["name".into()], e.to_string(), "value_error"))?;
        self.create(
            NewOrganization {
                name,
                plan: Plan::Free,
            },
            &Actor::System,
        )
        .await
        .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use tessera_kernel::{Limit, ManualClock};

    use super::*;
    use crate::MockOrganizationStore;

    fn service(store: MockOrganizationStore) -> OrganizationService {
        let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap());
        OrganizationService::new(Arc::new(store), Arc::new(clock), CursorCodec::new([1; 32]))
    }

    fn org(id: &OrganizationId) -> Organization {
        let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        Organization {
            id: id.clone(),
            name: "x".into(),
            plan: Plan::Free,
            image_ocr: false,
            created_at: at,
            updated_at: at,
        }
    }

    #[tokio::test]
    async fn plans_are_read_once_per_cache_period() {
        let id: OrganizationId = "org_plans".parse().unwrap();
        let mut store = MockOrganizationStore::new();
        store.expect_get().times(2).returning(|id| {
            Ok(Some(Organization {
                plan: Plan::Pro,
                ..org(id)
            }))
        });
        let clock = Arc::new(ManualClock::new(
            Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap(),
        ));
        let service =
            OrganizationService::new(Arc::new(store), clock.clone(), CursorCodec::new([1; 32]));
        assert_eq!(service.plan(&id).await.unwrap(), Plan::Pro);
        clock.advance(Duration::seconds(PLAN_CACHE_SECS - 1));
        assert_eq!(service.plan(&id).await.unwrap(), Plan::Pro); // cached: no read
        clock.advance(Duration::seconds(1));
        assert_eq!(service.plan(&id).await.unwrap(), Plan::Pro); // expired: read again
    }

    #[tokio::test]
    async fn an_unknown_organization_has_no_plan_and_is_not_cached() {
        let id: OrganizationId = "org_unknown".parse().unwrap();
        let mut store = MockOrganizationStore::new();
        store.expect_get().times(2).returning(|_| Ok(None));
        let service = service(store);
        for _ in 0..2 {
            let error = service.plan(&id).await.unwrap_err();
            assert!(matches!(error, OrganizationError::NotFound(ref missing) if missing == &id));
        }
    }

    #[tokio::test]
    async fn create_stamps_id_and_time_from_the_clock() {
        let mut store = MockOrganizationStore::new();
        store.expect_insert().times(1).returning(|org, audit| {
            assert_eq!(audit.len(), 1);
            assert_eq!(audit[0].action, "organization.create");
            assert_eq!(audit[0].organization_id.as_ref(), Some(&org.id));
            assert_eq!(audit[0].resource_id.as_deref(), Some(org.id.as_str()));
            assert_eq!(audit[0].actor_id.as_deref(), Some("ops"));
            Ok(())
        });
        let created = service(store)
            .create(
                NewOrganization {
                    name: OrganizationName::parse("Acme").unwrap(),
                    plan: Plan::Pro,
                },
                &Actor::Operator("ops".into()),
            )
            .await
            .unwrap();
        assert!(created.id.as_str().starts_with("org_"));
        assert_eq!(
            created.created_at,
            Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap()
        );
        assert_eq!(created.plan, Plan::Pro);
    }

    #[tokio::test]
    async fn update_applies_the_change_with_its_audit_record_at_the_clocks_time() {
        let id: OrganizationId = "org_update".parse().unwrap();
        let mut store = MockOrganizationStore::new();
        store
            .expect_update()
            .times(1)
            .returning(|id, change, at, audit| {
                assert_eq!(change.image_ocr, Some(true));
                assert_eq!(at, Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap());
                assert_eq!(audit.len(), 1);
                assert_eq!(audit[0].action, "organization.update");
                assert_eq!(audit[0].organization_id.as_ref(), Some(id));
                assert_eq!(audit[0].resource_type, "organization");
                assert_eq!(audit[0].resource_id.as_deref(), Some(id.as_str()));
                assert_eq!(audit[0].actor_id.as_deref(), Some("ops"));
                Ok(Some(change.apply(&org(id), at)))
            });
        let changed = service(store)
            .update(
                &id,
                OrganizationChange {
                    image_ocr: Some(true),
                },
                &Actor::Operator("ops".into()),
            )
            .await
            .unwrap();
        assert!(changed.image_ocr);
        assert_eq!(
            changed.updated_at,
            Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap()
        );
    }

    #[tokio::test]
    async fn updating_a_missing_organization_is_not_found_and_nothing_changes_nothing() {
        let mut store = MockOrganizationStore::new();
        store
            .expect_update()
            .times(1)
            .returning(|_, _, _, _| Ok(None));
        let id = OrganizationId::generate();
        let error = service(store)
            .update(
                &id,
                OrganizationChange {
                    image_ocr: Some(false),
                },
                &Actor::System,
            )
            .await
            .unwrap_err();
        assert!(matches!(error, OrganizationError::NotFound(ref missing) if missing == &id));

        // An empty change reads the organization and writes no event.
        let mut store = MockOrganizationStore::new();
        store.expect_update().never();
        store
            .expect_get()
            .times(1)
            .returning(|id| Ok(Some(org(id))));
        let same = service(store)
            .update(&id, OrganizationChange::default(), &Actor::System)
            .await
            .unwrap();
        assert_eq!(same, org(&id));
    }

    #[tokio::test]
    async fn missing_organization_is_not_found() {
        let mut store = MockOrganizationStore::new();
        store.expect_get().returning(|_| Ok(None));
        let id = OrganizationId::generate();
        let error = service(store).get(&id).await.unwrap_err();
        assert!(matches!(
            DomainError::from(error),
            DomainError::NotFound {
                resource: "organization",
                ..
            }
        ));
    }

    #[tokio::test]
    async fn ensure_first_creates_only_when_empty() {
        let mut store = MockOrganizationStore::new();
        store.expect_count().times(1).returning(|| Ok(1));
        store.expect_insert().never();
        assert!(
            service(store)
                .ensure_first("Default")
                .await
                .unwrap()
                .is_none()
        );

        let mut empty = MockOrganizationStore::new();
        empty.expect_count().times(1).returning(|| Ok(0));
        empty.expect_insert().times(1).returning(|_, audit| {
            assert_eq!(audit[0].actor_kind, tessera_kernel::ActorKind::System);
            Ok(())
        });
        assert_eq!(
            service(empty)
                .ensure_first("Default")
                .await
                .unwrap()
                .map(|o| o.name),
            Some("Default".into())
        );
    }

    #[tokio::test]
    async fn list_passes_the_decoded_cursor_and_issues_the_next_one() {
        let ids: Vec<OrganizationId> = (0..3).map(|_| OrganizationId::generate()).collect();
        let rows: Vec<Organization> = ids.iter().map(org).collect();
        let mut store = MockOrganizationStore::new();
        store.expect_list().returning(move |_| Ok(rows.clone()));
        store.expect_count().returning(|| Ok(3));
        let service = service(store);
        let page = service.list(Limit::new(2).unwrap(), None).await.unwrap();
        assert!(page.has_more);
        let cursor = page.next_cursor.unwrap();

        let mut store = MockOrganizationStore::new();
        let expected = ids[1].clone();
        store
            .expect_list()
            .withf(move |page| page.after.as_ref() == Some(&expected))
            .returning(|_| Ok(vec![]));
        store.expect_count().returning(|| Ok(3));
        let service = OrganizationService {
            store: Arc::new(store),
            ..service
        };
        service
            .list(Limit::new(2).unwrap(), Some(cursor.as_str()))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn forged_cursor_is_a_validation_error() {
        let store = MockOrganizationStore::new();
        let error = service(store)
            .list(Limit::default(), Some("bm9wZQ.AAAAAAAAAAAAAAAAAAAAAA"))
            .await
            .unwrap_err();
        assert!(matches!(
            DomainError::from(error),
            DomainError::Validation(_)
        ));
    }
}
