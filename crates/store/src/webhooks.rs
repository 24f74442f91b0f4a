//! `WebhookStore` on PostgreSQL or SQLite: registrations (`webhooks`) and the delivery
//! outbox (`webhook_deliveries`). Deliveries are written by `record_event!` inside the
//! transaction that makes an event happen (see `files.rs` and `datasets.rs`); dispatchers
//! claim due ones in one `UPDATE … RETURNING` (`FOR UPDATE SKIP LOCKED` on PostgreSQL), like
//! the file processing queue.

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::{
    prelude::*,
    sql_types::{Text, Timestamp},
};
use diesel_async::RunQueryDsl;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};
use tessera_webhooks::{
    AttemptRecord, ClaimedDelivery, Delivery, DeliveryId, DeliveryStatus, EventKind, Webhook,
    WebhookId, WebhookSecret, WebhookStore,
};

use crate::time::utc;
use crate::{
    Backend, Database,
    database::{with_connection, with_transaction},
    error::query_error,
    schema::{webhook_deliveries, webhooks},
};

/// `WebhookStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlWebhookStore {
    db: Database,
}

impl SqlWebhookStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = webhooks, treat_none_as_default_value = false)]
struct WebhookRow {
    id: String,
    organization_id: String,
    url: String,
    events: String,
    description: Option<String>,
    secret: String,
    created_by: String,
    created_at: NaiveDateTime,
}

impl From<&Webhook> for WebhookRow {
    fn from(webhook: &Webhook) -> Self {
        Self {
            id: webhook.id.to_string(),
            organization_id: webhook.organization.as_str().to_owned(),
            url: webhook.url.clone(),
            events: webhook
                .events
                .iter()
                .map(|kind| kind.as_str())
                .collect::<Vec<_>>()
                .join(","),
            description: webhook.description.clone(),
            secret: webhook.secret.expose().to_owned(),
            created_by: webhook.created_by.clone(),
            created_at: webhook.created_at.naive_utc(),
        }
    }
}

impl TryFrom<WebhookRow> for Webhook {
    type Error = DomainError;

    fn try_from(row: WebhookRow) -> Result<Self, Self::Error> {
        let corrupt =
            |what: String| DomainError::internal(format!("webhooks row {}: {what}", row.id));
        let events = row
            .events
            .split(',')
            .map(|name| EventKind::parse(name).ok_or_else(|| corrupt(format!("event {name}"))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Webhook {
            id: row.id.parse().map_err(|e| corrupt(format!("{e}")))?,
            organization: row
                .organization_id
                .parse()
                .map_err(|e| corrupt(format!("{e}")))?,
            events,
            url: row.url,
            description: row.description,
            secret: WebhookSecret::stored(row.secret),
            created_by: row.created_by,
            created_at: utc(row.created_at),
        })
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = webhook_deliveries, treat_none_as_default_value = false)]
pub(crate) struct DeliveryRow {
    id: String,
    webhook_id: String,
    organization_id: String,
    event_id: String,
    event: String,
    body: String,
    status: String,
    attempts: i32,
    next_attempt_at: Option<NaiveDateTime>,
    leased_by: Option<String>,
    leased_until: Option<NaiveDateTime>,
    last_status_code: Option<i32>,
    last_error: Option<String>,
    created_at: NaiveDateTime,
    delivered_at: Option<NaiveDateTime>,
}

impl DeliveryRow {
    /// The first, immediately due delivery of `event` to `webhook_id`.
    #[cfg(feature = "knowledge")]
    pub(crate) fn pending(
        webhook_id: String,
        event: &tessera_webhooks::Event,
        body: String,
    ) -> Self {
        let at = event.created_at.naive_utc();
        Self {
            id: DeliveryId::generate().to_string(),
            webhook_id,
            organization_id: event.organization.as_str().to_owned(),
            event_id: event.id.to_string(),
            event: event.kind.as_str().to_owned(),
            body,
            status: DeliveryStatus::Pending.as_str().to_owned(),
            attempts: 0,
            next_attempt_at: Some(at),
            leased_by: None,
            leased_until: None,
            last_status_code: None,
            last_error: None,
            created_at: at,
            delivered_at: None,
        }
    }
}

impl TryFrom<DeliveryRow> for Delivery {
    type Error = DomainError;

    fn try_from(row: DeliveryRow) -> Result<Self, Self::Error> {
        let corrupt = |what: String| {
            DomainError::internal(format!("webhook_deliveries row {}: {what}", row.id))
        };
        Ok(Delivery {
            id: row.id.parse().map_err(|e| corrupt(format!("{e}")))?,
            webhook_id: row
                .webhook_id
                .parse()
                .map_err(|e| corrupt(format!("{e}")))?,
            organization: row
                .organization_id
                .parse()
                .map_err(|e| corrupt(format!("{e}")))?,
            event_id: row.event_id.parse().map_err(|e| corrupt(format!("{e}")))?,
            event: EventKind::parse(&row.event)
                .ok_or_else(|| corrupt(format!("event {}", row.event)))?,
            status: DeliveryStatus::parse(&row.status)
                .ok_or_else(|| corrupt(format!("status {}", row.status)))?,
            attempts: u32::try_from(row.attempts).map_err(|e| corrupt(format!("{e}")))?,
            next_attempt_at: row.next_attempt_at.map(utc),
            last_status_code: row
                .last_status_code
                .and_then(|code| u16::try_from(code).ok()),
            body: row.body,
            last_error: row.last_error,
            created_at: utc(row.created_at),
            delivered_at: row.delivered_at.map(utc),
        })
    }
}

/// Writes `$event` (a `&tessera_webhooks::Event`) to the delivery outbox: one pending
/// delivery for every webhook of its organization that subscribes to its kind. Use it inside
/// the `with_transaction!` body that makes the event happen, so the event is recorded if and
/// only if the change commits. The knowledge part's stores are the ones that announce events.
#[cfg(feature = "knowledge")]
macro_rules! record_event {
    ($conn:expr, $event:expr) => {{
        let event: &tessera_webhooks::Event = $event;
        let subscribed: Vec<(String, String)> = $crate::schema::webhooks::table
            .filter($crate::schema::webhooks::organization_id.eq(event.organization.as_str()))
            .select((
                $crate::schema::webhooks::id,
                $crate::schema::webhooks::events,
            ))
            .load($conn)
            .await?;
        let kind = event.kind.as_str();
        let body = event.body();
        for (webhook_id, events) in subscribed {
            if events.split(',').any(|name| name == kind) {
                diesel::insert_into($crate::schema::webhook_deliveries::table)
                    .values($crate::webhooks::DeliveryRow::pending(
                        webhook_id,
                        event,
                        body.clone(),
                    ))
                    .execute($conn)
                    .await?;
            }
        }
    }};
}
#[cfg(feature = "knowledge")]
pub(crate) use record_event;

/// The delivery a claim took.
#[derive(QueryableByName)]
struct ClaimedRow {
    #[diesel(sql_type = Text)]
    id: String,
}

const CLAIM_POSTGRES: &str = "UPDATE webhook_deliveries SET attempts = attempts + 1, \
     leased_by = $1, leased_until = $3 WHERE id = (SELECT id FROM webhook_deliveries WHERE \
     status = 'pending' AND next_attempt_at <= $2 AND (leased_until IS NULL OR leased_until \
     <= $2) ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id";

/// SQLite numbers `$N` parameters by first appearance, so this one uses `?N`.
const CLAIM_SQLITE: &str = "UPDATE webhook_deliveries SET attempts = attempts + 1, \
     leased_by = ?1, leased_until = ?3 WHERE id = (SELECT id FROM webhook_deliveries WHERE \
     status = 'pending' AND next_attempt_at <= ?2 AND (leased_until IS NULL OR leased_until \
     <= ?2) ORDER BY next_attempt_at, id LIMIT 1) RETURNING id";

#[async_trait]
impl WebhookStore for SqlWebhookStore {
    async fn insert(&self, webhook: &Webhook, audit: &AuditRecord) -> Result<(), DomainError> {
        let row = WebhookRow::from(webhook);
        with_transaction!(&self.db, conn => {
            diesel::insert_into(webhooks::table)
                .values(&row)
                .execute(conn)
                .await?;
            crate::audit::record_audit!(conn, audit);
            Ok(())
        })
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &WebhookId,
    ) -> Result<Option<Webhook>, DomainError> {
        let row: Option<WebhookRow> = with_connection!(&self.db, conn => {
            webhooks::table
                .filter(webhooks::organization_id.eq(organization.as_str()))
                .filter(webhooks::id.eq(id.as_str()))
                .select(WebhookRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(Webhook::try_from).transpose()
    }

    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<WebhookId>,
    ) -> Result<Vec<Webhook>, DomainError> {
        let rows: Vec<WebhookRow> = with_connection!(&self.db, conn => {
            let mut query = webhooks::table
                .filter(webhooks::organization_id.eq(organization.as_str()))
                .into_boxed();
            if let Some(after) = &page.after {
                query = query.filter(webhooks::id.lt(after.as_str().to_owned()));
            }
            query
                .order(webhooks::id.desc())
                .limit(page.limit.overfetch())
                .select(WebhookRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(Webhook::try_from).collect()
    }

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            webhooks::table
                .filter(webhooks::organization_id.eq(organization.as_str()))
                .count()
                .get_result(conn)
                .await
                .map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &WebhookId,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        with_transaction!(&self.db, conn => {
            let owned: i64 = webhooks::table
                .filter(webhooks::organization_id.eq(organization.as_str()))
                .filter(webhooks::id.eq(id.as_str()))
                .count()
                .get_result(conn)
                .await?;
            if owned == 0 {
                return Ok(false);
            }
            // Explicit, not only the foreign key's cascade: SQLite enforces it per connection.
            diesel::delete(webhook_deliveries::table.filter(webhook_deliveries::webhook_id.eq(id.as_str())))
                .execute(conn)
                .await?;
            diesel::delete(webhooks::table.filter(webhooks::id.eq(id.as_str())))
                .execute(conn)
                .await?;
            crate::audit::record_audit!(conn, audit);
            Ok(true)
        })
    }

    async fn deliveries(
        &self,
        organization: &OrganizationId,
        webhook: &WebhookId,
        page: &PageRequest<DeliveryId>,
    ) -> Result<Vec<Delivery>, DomainError> {
        let rows: Vec<DeliveryRow> = with_connection!(&self.db, conn => {
            let mut query = webhook_deliveries::table
                .filter(webhook_deliveries::organization_id.eq(organization.as_str()))
                .filter(webhook_deliveries::webhook_id.eq(webhook.as_str()))
                .into_boxed();
            if let Some(after) = &page.after {
                query = query.filter(webhook_deliveries::id.lt(after.as_str().to_owned()));
            }
            query
                .order(webhook_deliveries::id.desc())
                .limit(page.limit.overfetch())
                .select(DeliveryRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(Delivery::try_from).collect()
    }

    async fn count_deliveries(
        &self,
        organization: &OrganizationId,
        webhook: &WebhookId,
    ) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            webhook_deliveries::table
                .filter(webhook_deliveries::organization_id.eq(organization.as_str()))
                .filter(webhook_deliveries::webhook_id.eq(webhook.as_str()))
                .count()
                .get_result(conn)
                .await
                .map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn claim_due(
        &self,
        worker: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<ClaimedDelivery>, DomainError> {
        let sql = match self.db.backend() {
            Backend::Postgres => CLAIM_POSTGRES,
            Backend::Sqlite => CLAIM_SQLITE,
        };
        let (now, lease_until) = (now.naive_utc(), lease_until.naive_utc());
        let claimed: Option<(DeliveryRow, String, String)> = with_connection!(&self.db, conn => {
            let claimed: Option<ClaimedRow> = diesel::sql_query(sql)
                .bind::<Text, _>(worker)
                .bind::<Timestamp, _>(now)
                .bind::<Timestamp, _>(lease_until)
                .get_result(conn)
                .await
                .optional()
                .map_err(query_error)?;
            match claimed {
                None => None,
                Some(claimed) => webhook_deliveries::table
                    .inner_join(webhooks::table)
                    .filter(webhook_deliveries::id.eq(&claimed.id))
                    .select((DeliveryRow::as_select(), webhooks::url, webhooks::secret))
                    .first(conn)
                    .await
                    .optional()
                    .map_err(query_error)?,
            }
        });
        claimed
            .map(|(row, url, secret)| {
                Ok(ClaimedDelivery {
                    delivery: Delivery::try_from(row)?,
                    url,
                    secret: WebhookSecret::stored(secret),
                })
            })
            .transpose()
    }

    async fn record_attempt(
        &self,
        id: &DeliveryId,
        worker: &str,
        record: &AttemptRecord,
    ) -> Result<bool, DomainError> {
        let at = record.at.naive_utc();
        let delivered_at = (record.status == DeliveryStatus::Delivered).then_some(at);
        let changed: usize = with_connection!(&self.db, conn => {
            diesel::update(
                webhook_deliveries::table
                    .filter(webhook_deliveries::id.eq(id.as_str()))
                    .filter(webhook_deliveries::leased_by.eq(worker)),
            )
            .set((
                webhook_deliveries::status.eq(record.status.as_str()),
                webhook_deliveries::last_status_code.eq(record.status_code.map(i32::from)),
                webhook_deliveries::last_error.eq(record.error.as_deref()),
                webhook_deliveries::next_attempt_at.eq(record.next_attempt_at.map(|t| t.naive_utc())),
                webhook_deliveries::leased_by.eq(None::<String>),
                webhook_deliveries::leased_until.eq(None::<NaiveDateTime>),
                webhook_deliveries::delivered_at.eq(delivered_at),
            ))
            .execute(conn)
            .await
            .map_err(query_error)?
        });
        Ok(changed > 0)
    }
}
