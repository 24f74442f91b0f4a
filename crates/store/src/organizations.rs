use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};
use tessera_organizations::{Organization, OrganizationChange, OrganizationStore, Plan};

use crate::time::utc;
use crate::{
    Database,
    audit::record_audit,
    database::{with_connection, with_transaction},
    error::query_error,
    schema::organizations,
};

/// `OrganizationStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlOrganizationStore {
    db: Database,
}

impl SqlOrganizationStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = organizations)]
struct OrganizationRow {
    id: String,
    name: String,
    plan: String,
    image_ocr: bool,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
}

/// The columns an update sets: the settings it names (a `None` leaves its column as it is)
/// and `updated_at`.
#[derive(AsChangeset)]
#[diesel(table_name = organizations)]
struct OrganizationChanges {
    image_ocr: Option<bool>,
    updated_at: NaiveDateTime,
}

impl From<&Organization> for OrganizationRow {
    fn from(org: &Organization) -> Self {
        Self {
            id: org.id.to_string(),
            name: org.name.clone(),
            plan: org.plan.as_str().to_owned(),
            image_ocr: org.image_ocr,
            created_at: org.created_at.naive_utc(),
            updated_at: org.updated_at.naive_utc(),
        }
    }
}

impl TryFrom<OrganizationRow> for Organization {
    type Error = DomainError;

    fn try_from(row: OrganizationRow) -> Result<Self, Self::Error> {
        let corrupt =
            |what: String| DomainError::internal(format!("organization row {}: {what}", row.id));
        Ok(Organization {
            id: row.id.parse().map_err(|e| corrupt(format!("{e}")))?,
            plan: row
                .plan
                .parse::<Plan>()
                .map_err(|e| corrupt(e.to_string()))?,
            name: row.name.clone(),
            image_ocr: row.image_ocr,
            created_at: utc(row.created_at),
            updated_at: utc(row.updated_at),
        })
    }
}

#[async_trait]
impl OrganizationStore for SqlOrganizationStore {
    async fn insert(
        &self,
        organization: &Organization,
        audit: &[AuditRecord],
    ) -> Result<(), DomainError> {
        let row = OrganizationRow::from(organization);
        with_transaction!(&self.db, conn => {
            diesel::insert_into(organizations::table).values(&row).execute(conn).await?;
            for record in audit {
                record_audit!(conn, record);
            }
            Ok(())
        })
    }

    async fn get(&self, id: &OrganizationId) -> Result<Option<Organization>, DomainError> {
        let row: Option<OrganizationRow> = with_connection!(&self.db, conn => {
            organizations::table
                .find(id.as_str())
                .select(OrganizationRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(Organization::try_from).transpose()
    }

    async fn update(
        &self,
        id: &OrganizationId,
        change: &OrganizationChange,
        updated_at: DateTime<Utc>,
        audit: &[AuditRecord],
    ) -> Result<Option<Organization>, DomainError> {
        let changes = OrganizationChanges {
            image_ocr: change.image_ocr,
            updated_at: updated_at.naive_utc(),
        };
        let row: Option<OrganizationRow> = with_transaction!(&self.db, conn => {
            let changed = diesel::update(organizations::table.find(id.as_str()))
                .set(&changes)
                .execute(conn)
                .await?;
            if changed == 0 {
                return Ok(None);
            }
            for record in audit {
                record_audit!(conn, record);
            }
            let row = organizations::table
                .find(id.as_str())
                .select(OrganizationRow::as_select())
                .first(conn)
                .await?;
            Ok(Some(row))
        })?;
        row.map(Organization::try_from).transpose()
    }

    async fn list(
        &self,
        page: &PageRequest<OrganizationId>,
    ) -> Result<Vec<Organization>, DomainError> {
        let after = page
            .after
            .as_ref()
            .map(|id| id.as_str().to_owned())
            .unwrap_or_default();
        let rows: Vec<OrganizationRow> = with_connection!(&self.db, conn => {
            organizations::table
                .filter(organizations::id.gt(&after))
                .order(organizations::id.asc())
                .limit(page.limit.overfetch())
                .select(OrganizationRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(Organization::try_from).collect()
    }

    async fn count(&self) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            organizations::table.count().get_result(conn).await.map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }
}
