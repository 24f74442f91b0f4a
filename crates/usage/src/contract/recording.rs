//! Recording: one record per message.

use super::*;

pub async fn a_message_is_recorded_once(stores: &impl UsageStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let first = record(&acme, "2026-09-01T10:00:00Z", 100);
    f.store.record(&first).await.unwrap();

    // The same message again (a new record id, other figures).
    let again = UsageRecord {
        id: UsageId::generate(),
        ..record(&acme, "2026-09-01T11:00:00Z", 1_000)
    };
    let again = UsageRecord {
        message_id: first.message_id.clone(),
        ..again
    };
    let refused = f.store.record(&again).await;
    assert!(
        matches!(refused, Err(DomainError::Conflict { .. })),
        "{refused:?}"
    );
    // A record id taken.
    let reused = UsageRecord {
        id: first.id.clone(),
        ..record(&acme, "2026-09-01T12:00:00Z", 10_000)
    };
    let refused = f.store.record(&reused).await;
    assert!(
        matches!(refused, Err(DomainError::Conflict { .. })),
        "{refused:?}"
    );

    let day = query(&acme, "2026-09-01T00:00:00Z", "2026-09-02T00:00:00Z");
    let got = f.store.aggregate(&day).await.unwrap();
    assert_eq!(got.totals, sum([&first]));

    // The store goes on recording other messages.
    let next = record(&acme, "2026-09-01T13:00:00Z", 7);
    f.store.record(&next).await.unwrap();
    let got = f.store.aggregate(&day).await.unwrap();
    assert_eq!(got.totals, sum([&first, &next]));
}
