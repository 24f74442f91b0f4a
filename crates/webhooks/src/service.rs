//! Webhooks as the API offers them: register, read, list and delete within the caller's
//! organization, and read what was delivered.

use std::sync::Arc;

use tessera_kernel::{
    Actor, Clock, CursorCodec, DomainError, FieldError, Limit, OrganizationId, Page, PageRequest,
    TargetPolicy,
};

use crate::{
    Delivery, DeliveryId, EventKind, MAX_DESCRIPTION_CHARS, MAX_URL_CHARS, NewWebhook, Webhook,
    WebhookId, WebhookSecret, WebhookStore,
};

const WEBHOOK_LIST: &str = "webhooks";
const DELIVERY_LIST: &str = "webhook-deliveries";

/// The most webhooks one organization may register.
pub const MAX_WEBHOOKS_PER_ORGANIZATION: u64 = 20;

/// Webhooks of organizations.
#[derive(Clone)]
pub struct WebhookService {
    store: Arc<dyn WebhookStore>,
    clock: Arc<dyn Clock>,
    cursors: CursorCodec,
    policy: TargetPolicy,
}

fn field(loc: &[&str], msg: impl Into<String>, kind: &str) -> FieldError {
    FieldError::new(loc.iter().map(|&s| s.into()), msg, kind)
}

impl WebhookService {
    pub fn new(
        store: Arc<dyn WebhookStore>,
        clock: Arc<dyn Clock>,
        cursors: CursorCodec,
        policy: TargetPolicy,
    ) -> Self {
        Self {
            store,
            clock,
            cursors,
            policy,
        }
    }

    /// Registers a webhook; the answer holds its secret, which is shown only this once.
    pub async fn create(
        &self,
        organization: &OrganizationId,
        actor: &Actor,
        new: NewWebhook,
    ) -> Result<Webhook, DomainError> {
        let mut errors = Vec::new();
        let url = match self.policy.check(new.url.trim(), MAX_URL_CHARS) {
            Ok(url) => Some(url),
            Err(msg) => {
                errors.push(field(&["body", "url"], msg, "invalid_url"));
                None
            }
        };
        if new.events.is_empty() {
            errors.push(field(
                &["body", "events"],
                "name at least one event",
                "value_error",
            ));
        }
        let mut events = Vec::new();
        for (index, name) in new.events.iter().enumerate() {
            match EventKind::parse(name) {
                Some(kind) => events.push(kind),
                None => errors.push(FieldError::new(
                    ["body".into(), "events".into(), index.into()],
                    format!(
                        "unknown event `{name}`; one of {}",
                        EventKind::ALL.map(EventKind::as_str).join(", ")
                    ),
                    "invalid_event",
                )),
            }
        }
        events.sort();
        events.dedup();
        let description = new
            .description
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty());
        if description
            .as_ref()
            .is_some_and(|d| d.chars().count() > MAX_DESCRIPTION_CHARS)
        {
            errors.push(field(
                &["body", "description"],
                format!("at most {MAX_DESCRIPTION_CHARS} characters"),
                "value_error",
            ));
        }
        let Some(url) = url.filter(|_| errors.is_empty()) else {
            return Err(DomainError::Validation(errors));
        };
        if self.store.count(organization).await? >= MAX_WEBHOOKS_PER_ORGANIZATION {
            return Err(DomainError::Conflict {
                code: "webhook_limit_reached",
                message: format!(
                    "an organization may have at most {MAX_WEBHOOKS_PER_ORGANIZATION} webhooks; delete one first"
                ),
            });
        }
        let webhook = Webhook {
            id: WebhookId::generate(),
            organization: organization.clone(),
            url: url.to_string(),
            events,
            description,
            secret: WebhookSecret::generate(),
            created_by: actor.name().to_owned(),
            created_at: self.clock.now(),
        };
        let audit = actor.record(
            organization,
            "webhook.create",
            "webhook",
            webhook.id.as_str(),
            webhook.created_at,
        );
        self.store.insert(&webhook, &audit).await?;
        Ok(webhook)
    }

    pub async fn get(
        &self,
        organization: &OrganizationId,
        id: &WebhookId,
    ) -> Result<Webhook, DomainError> {
        self.store
            .get(organization, id)
            .await?
            .ok_or_else(|| DomainError::not_found("webhook", id))
    }

    /// Newest first.
    pub async fn list(
        &self,
        organization: &OrganizationId,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<Webhook>, DomainError> {
        let after = cursor
            .map(|c| {
                self.cursors
                    .decode::<WebhookId>(WEBHOOK_LIST, organization.as_str(), c)
            })
            .transpose()?;
        let rows = self
            .store
            .list(organization, &PageRequest { limit, after })
            .await?;
        let total = self.store.count(organization).await?;
        Ok(Page::from_overfetch(rows, limit, Some(total), |webhook| {
            self.cursors
                .encode(WEBHOOK_LIST, organization.as_str(), &webhook.id)
        }))
    }

    /// Deletes the webhook; its pending deliveries are dropped.
    pub async fn delete(
        &self,
        organization: &OrganizationId,
        id: &WebhookId,
        actor: &Actor,
    ) -> Result<(), DomainError> {
        let audit = actor.record(
            organization,
            "webhook.delete",
            "webhook",
            id.as_str(),
            self.clock.now(),
        );
        if self.store.delete(organization, id, &audit).await? {
            Ok(())
        } else {
            Err(DomainError::not_found("webhook", id))
        }
    }

    /// The webhook's deliveries, newest first.
    pub async fn deliveries(
        &self,
        organization: &OrganizationId,
        id: &WebhookId,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<Delivery>, DomainError> {
        self.get(organization, id).await?;
        let owner = CursorCodec::owner(organization.as_str(), id.as_str());
        let after = cursor
            .map(|c| self.cursors.decode::<DeliveryId>(DELIVERY_LIST, &owner, c))
            .transpose()?;
        let rows = self
            .store
            .deliveries(organization, id, &PageRequest { limit, after })
            .await?;
        let total = self.store.count_deliveries(organization, id).await?;
        Ok(Page::from_overfetch(rows, limit, Some(total), |delivery| {
            self.cursors.encode(DELIVERY_LIST, &owner, &delivery.id)
        }))
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use tessera_kernel::ManualClock;

    use super::*;
    use crate::MockWebhookStore;

    fn service(store: MockWebhookStore, policy: TargetPolicy) -> WebhookService {
        WebhookService::new(
            Arc::new(store),
            Arc::new(ManualClock::new(Utc::now())),
            CursorCodec::new([7; 32]),
            policy,
        )
    }

    fn new(url: &str, events: &[&str]) -> NewWebhook {
        NewWebhook {
            url: url.into(),
            events: events.iter().map(|&e| e.to_owned()).collect(),
            description: None,
        }
    }

    fn invalid_locations(error: DomainError) -> Vec<String> {
        match error {
            DomainError::Validation(errors) => errors
                .iter()
                .map(|e| {
                    e.to_string()
                        .split(':')
                        .next()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect(),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_valid_webhook_is_stored_with_sorted_events_and_a_fresh_secret() {
        let mut store = MockWebhookStore::new();
        store.expect_count().returning(|_| Ok(0));
        store.expect_insert().times(1).returning(|webhook, audit| {
            assert_eq!(audit.action, "webhook.create");
            assert_eq!(audit.resource_id.as_deref(), Some(webhook.id.as_str()));
            assert_eq!(audit.actor_id.as_deref(), Some("user-1"));
            assert_eq!(audit.organization_id.as_ref(), Some(&webhook.organization));
            Ok(())
        });
        let organization = OrganizationId::generate();
        let webhook = service(store, TargetPolicy::default())
            .create(
                &organization,
                &Actor::Operator("user-1".into()),
                new(
                    "https://hooks.example.com/tessera",
                    &["dataset.updated", "file.ready", "file.ready"],
                ),
            )
            .await
            .unwrap();
        assert_eq!(
            webhook.events,
            vec![EventKind::FileReady, EventKind::DatasetUpdated]
        );
        assert!(webhook.secret.expose().starts_with("whsec_"));
        assert_eq!(webhook.url, "https://hooks.example.com/tessera");
        assert_eq!(webhook.organization, organization);
    }

    #[tokio::test]
    async fn bad_urls_and_unknown_events_are_named_by_location() {
        let cases = [
            ("ftp://example.com/x", "body.url"),
            ("/relative", "body.url"),
            ("https://user:pw@example.com/", "body.url"),
            ("https://example.com/#frag", "body.url"),
            ("http://127.0.0.1:8080/hook", "body.url"),
            ("http://10.1.2.3/hook", "body.url"),
            ("http://[::1]/hook", "body.url"),
            ("http://169.254.169.254/latest", "body.url"),
            ("http://LocalHost./hook", "body.url"),
        ];
        for (url, loc) in cases {
            let error = service(MockWebhookStore::new(), TargetPolicy::default())
                .create(
                    &OrganizationId::generate(),
                    &Actor::Operator("u".into()),
                    new(url, &["file.ready"]),
                )
                .await
                .unwrap_err();
            assert_eq!(invalid_locations(error), vec![loc], "{url}");
        }
        let error = service(MockWebhookStore::new(), TargetPolicy::default())
            .create(
                &OrganizationId::generate(),
                &Actor::Operator("u".into()),
                new("https://example.com", &["file.ready", "file.deleted"]),
            )
            .await
            .unwrap_err();
        assert_eq!(invalid_locations(error), vec!["body.events.1"]);
        let error = service(MockWebhookStore::new(), TargetPolicy::default())
            .create(
                &OrganizationId::generate(),
                &Actor::Operator("u".into()),
                new("https://example.com", &[]),
            )
            .await
            .unwrap_err();
        assert_eq!(invalid_locations(error), vec!["body.events"]);
    }

    #[tokio::test]
    async fn private_targets_are_allowed_only_by_policy() {
        let mut store = MockWebhookStore::new();
        store.expect_count().returning(|_| Ok(0));
        store.expect_insert().returning(|_, _| Ok(()));
        let policy = TargetPolicy {
            allow_private_targets: true,
        };
        let webhook = service(store, policy)
            .create(
                &OrganizationId::generate(),
                &Actor::Operator("u".into()),
                new("http://127.0.0.1:9000/hook", &["file.failed"]),
            )
            .await
            .unwrap();
        assert_eq!(webhook.url, "http://127.0.0.1:9000/hook");
    }

    #[tokio::test]
    async fn the_limit_per_organization_is_a_conflict() {
        let mut store = MockWebhookStore::new();
        store
            .expect_count()
            .returning(|_| Ok(MAX_WEBHOOKS_PER_ORGANIZATION));
        let error = service(store, TargetPolicy::default())
            .create(
                &OrganizationId::generate(),
                &Actor::Operator("u".into()),
                new("https://example.com/hook", &["file.ready"]),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                DomainError::Conflict {
                    code: "webhook_limit_reached",
                    ..
                }
            ),
            "{error:?}"
        );
    }
}
