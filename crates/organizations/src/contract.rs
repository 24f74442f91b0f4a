//! The `OrganizationStore` contract, for anyone implementing the port: each function checks
//! one promise of the trait against a fresh, empty store, and
//! [`organization_store_contract!`](crate::organization_store_contract) turns them into
//! tests. Tessera runs it against the in-memory store and both SQL stores.
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{Duration, TimeZone, Utc};
use tessera_kernel::{DomainError, Limit, OrganizationId, PageRequest};

use crate::{Organization, OrganizationChange, OrganizationStore, Plan};

/// Runs every check of the contract as a `#[tokio::test]` of the calling crate, each on its
/// own store made by `$factory`: an expression that, called with no argument, gives a future
/// of `(store, guard)` (the guard, e.g. a throwaway database, lives until the test ends).
#[macro_export]
macro_rules! organization_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            inserted_records_read_back_unchanged,
            unknown_ids_are_absent,
            duplicate_ids_conflict,
            list_pages_in_creation_order,
            audit_records_need_a_stored_organization,
            updates_change_the_settings_and_keep_the_rest,
            updates_of_unknown_organizations_find_none,
            a_refused_update_changes_nothing,
        );
    };
}

/// An organization as the domain makes them (microsecond timestamps, as its clock gives).
pub fn organization(name: &str, plan: Plan) -> Organization {
    let at = Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap() + Duration::microseconds(123_456);
    Organization {
        id: OrganizationId::generate(),
        name: name.to_owned(),
        plan,
        image_ocr: false,
        created_at: at,
        updated_at: at + Duration::seconds(1),
    }
}

pub async fn inserted_records_read_back_unchanged(store: &impl OrganizationStore) {
    let acme = organization("Acme – Ünïcode ✓", Plan::Enterprise);
    store.insert(&acme, &[]).await.unwrap();
    assert_eq!(store.get(&acme.id).await.unwrap(), Some(acme));
    let reading = Organization {
        image_ocr: true,
        ..organization("Reads images", Plan::Free)
    };
    store.insert(&reading, &[]).await.unwrap();
    assert_eq!(store.get(&reading.id).await.unwrap(), Some(reading));
}

pub async fn unknown_ids_are_absent(store: &impl OrganizationStore) {
    assert_eq!(store.get(&OrganizationId::generate()).await.unwrap(), None);
    assert_eq!(store.count().await.unwrap(), 0);
}

pub async fn duplicate_ids_conflict(store: &impl OrganizationStore) {
    let acme = organization("Acme", Plan::Free);
    store.insert(&acme, &[]).await.unwrap();
    let again = store.insert(&acme, &[]).await.unwrap_err();
    assert!(
        matches!(
            again,
            DomainError::Conflict {
                code: "already_exists",
                ..
            }
        ),
        "{again:?}"
    );
    assert_eq!(store.count().await.unwrap(), 1);
}

pub async fn list_pages_in_creation_order(store: &impl OrganizationStore) {
    let mut created = Vec::new();
    for i in 0..5 {
        let org = organization(&format!("org {i}"), Plan::Pro);
        store.insert(&org, &[]).await.unwrap();
        created.push(org);
    }
    let limit = Limit::new(2).unwrap();
    let first = store.list(&PageRequest::first(limit)).await.unwrap();
    assert_eq!(
        first,
        created[..3],
        "a page fetches one extra row to tell whether more exist"
    );
    let after = |i: usize| PageRequest {
        limit,
        after: Some(created[i].id.clone()),
    };
    assert_eq!(store.list(&after(1)).await.unwrap(), created[2..5]);
    assert!(store.list(&after(4)).await.unwrap().is_empty());
    assert_eq!(store.count().await.unwrap(), 5);
}

/// An audit record of an organization that does not exist refuses the whole insert: the
/// change and its record commit together or not at all.
pub async fn audit_records_need_a_stored_organization(store: &impl OrganizationStore) {
    let globex = organization("Globex", Plan::Free);
    let nowhere = organization("Nowhere", Plan::Free);
    let stray = tessera_kernel::AuditRecord::by_operator(
        &nowhere.id,
        tessera_kernel::ActorKind::Operator,
        "tessera-admin",
        "organization.create",
        "organization",
        nowhere.id.as_str(),
        nowhere.created_at,
    );
    assert!(store.insert(&globex, &[stray]).await.is_err());
    assert_eq!(store.get(&globex.id).await.unwrap(), None);
}

/// The audit record of an operator's change of `organization` at `at`.
fn change_record(
    organization: &Organization,
    at: chrono::DateTime<Utc>,
) -> tessera_kernel::AuditRecord {
    tessera_kernel::AuditRecord::by_operator(
        &organization.id,
        tessera_kernel::ActorKind::Operator,
        "tessera-admin",
        "organization.update",
        "organization",
        organization.id.as_str(),
        at,
    )
}

/// A change sets what it names and `updated_at`, keeps everything else, and touches no
/// other organization; a change naming nothing still moves `updated_at`.
pub async fn updates_change_the_settings_and_keep_the_rest(store: &impl OrganizationStore) {
    let acme = organization("Acme", Plan::Pro);
    let globex = organization("Globex", Plan::Free);
    store.insert(&acme, &[]).await.unwrap();
    store.insert(&globex, &[]).await.unwrap();
    let later = acme.updated_at + Duration::hours(2) + Duration::microseconds(7);
    let on = OrganizationChange {
        image_ocr: Some(true),
    };
    let changed = store
        .update(&acme.id, &on, later, &[change_record(&acme, later)])
        .await
        .unwrap();
    let expected = Organization {
        image_ocr: true,
        updated_at: later,
        ..acme.clone()
    };
    assert_eq!(changed.as_ref(), Some(&expected));
    assert_eq!(store.get(&acme.id).await.unwrap(), Some(expected.clone()));
    assert_eq!(store.get(&globex.id).await.unwrap(), Some(globex));

    // Nothing named: the setting stays on.
    let again = later + Duration::seconds(1);
    let kept = store
        .update(&acme.id, &OrganizationChange::default(), again, &[])
        .await
        .unwrap()
        .unwrap();
    assert!(kept.image_ocr);
    assert_eq!(kept.updated_at, again);

    let off = OrganizationChange {
        image_ocr: Some(false),
    };
    let turned_off = store.update(&acme.id, &off, again, &[]).await.unwrap();
    assert_eq!(
        turned_off.map(|organization| organization.image_ocr),
        Some(false)
    );
    assert_eq!(store.count().await.unwrap(), 2);
}

pub async fn updates_of_unknown_organizations_find_none(store: &impl OrganizationStore) {
    let nowhere = organization("Nowhere", Plan::Free);
    let change = OrganizationChange {
        image_ocr: Some(true),
    };
    let at = nowhere.updated_at;
    assert_eq!(
        store.update(&nowhere.id, &change, at, &[]).await.unwrap(),
        None
    );
    assert_eq!(store.get(&nowhere.id).await.unwrap(), None);
}

/// An update whose audit record names an organization that does not exist is refused whole:
/// the change and its record commit together or not at all.
pub async fn a_refused_update_changes_nothing(store: &impl OrganizationStore) {
    let acme = organization("Acme", Plan::Free);
    store.insert(&acme, &[]).await.unwrap();
    let nowhere = organization("Nowhere", Plan::Free);
    let change = OrganizationChange {
        image_ocr: Some(true),
    };
    let at = acme.updated_at + Duration::seconds(5);
    assert!(
        store
            .update(&acme.id, &change, at, &[change_record(&nowhere, at)])
            .await
            .is_err()
    );
    assert_eq!(store.get(&acme.id).await.unwrap(), Some(acme));
}
