use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use tessera_identity::{ApiKey, ApiKeyHash, ApiKeyId, ApiKeyStore, StoredApiKey};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest, ScopeSet};

use crate::time::utc;
use crate::{
    Database,
    audit::record_audit,
    database::{with_connection, with_transaction},
    error::query_error,
    schema::api_keys,
};

/// `ApiKeyStore` on PostgreSQL or SQLite. Authentication reads one row by the unique hash
/// index, uncached, so a revocation holds on the next request on every replica.
#[derive(Clone)]
pub struct SqlApiKeyStore {
    db: Database,
}

impl SqlApiKeyStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

/// A key's record without its secret hash (what `get` and `list` read).
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = api_keys)]
struct ApiKeyRow {
    id: String,
    organization_id: String,
    name: String,
    scopes: String,
    created_by: String,
    expires_at: Option<NaiveDateTime>,
    last_used_at: Option<NaiveDateTime>,
    revoked_at: Option<NaiveDateTime>,
    created_at: NaiveDateTime,
}

/// A key's record with its secret hash (what `insert` writes and authentication reads).
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = api_keys)]
struct StoredApiKeyRow {
    #[diesel(embed)]
    key: ApiKeyRow,
    secret_hash: String,
}

impl From<&StoredApiKey> for StoredApiKeyRow {
    fn from(stored: &StoredApiKey) -> Self {
        let key = &stored.key;
        Self {
            key: ApiKeyRow {
                id: key.id.to_string(),
                organization_id: key.organization_id.as_str().to_owned(),
                name: key.name.clone(),
                scopes: key.scopes.to_string(),
                created_by: key.created_by.clone(),
                expires_at: key.expires_at.map(|at| at.naive_utc()),
                last_used_at: key.last_used_at.map(|at| at.naive_utc()),
                revoked_at: key.revoked_at.map(|at| at.naive_utc()),
                created_at: key.created_at.naive_utc(),
            },
            secret_hash: stored.secret_hash.0.clone(),
        }
    }
}

impl TryFrom<ApiKeyRow> for ApiKey {
    type Error = DomainError;

    fn try_from(row: ApiKeyRow) -> Result<Self, Self::Error> {
        let corrupt =
            |what: String| DomainError::internal(format!("api key row {}: {what}", row.id));
        Ok(ApiKey {
            id: row.id.parse().map_err(|e| corrupt(format!("{e}")))?,
            organization_id: row
                .organization_id
                .parse()
                .map_err(|e| corrupt(format!("{e}")))?,
            scopes: ScopeSet::parse_list(&row.scopes).map_err(|e| corrupt(format!("{e}")))?,
            name: row.name.clone(),
            created_by: row.created_by.clone(),
            expires_at: row.expires_at.map(utc),
            last_used_at: row.last_used_at.map(utc),
            revoked_at: row.revoked_at.map(utc),
            created_at: utc(row.created_at),
        })
    }
}

impl TryFrom<StoredApiKeyRow> for StoredApiKey {
    type Error = DomainError;

    fn try_from(row: StoredApiKeyRow) -> Result<Self, Self::Error> {
        Ok(StoredApiKey {
            key: ApiKey::try_from(row.key)?,
            secret_hash: ApiKeyHash(row.secret_hash),
        })
    }
}

#[async_trait]
impl ApiKeyStore for SqlApiKeyStore {
    async fn insert(&self, key: &StoredApiKey, audit: &AuditRecord) -> Result<(), DomainError> {
        let row = StoredApiKeyRow::from(key);
        with_transaction!(&self.db, conn => {
            diesel::insert_into(api_keys::table).values(&row).execute(conn).await?;
            record_audit!(conn, audit);
            Ok(())
        })
    }

    async fn find_by_hash(&self, hash: &ApiKeyHash) -> Result<Option<StoredApiKey>, DomainError> {
        let row: Option<StoredApiKeyRow> = with_connection!(&self.db, conn => {
            api_keys::table
                .filter(api_keys::secret_hash.eq(&hash.0))
                .select(StoredApiKeyRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(StoredApiKey::try_from).transpose()
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ApiKeyId,
    ) -> Result<Option<ApiKey>, DomainError> {
        let row: Option<ApiKeyRow> = with_connection!(&self.db, conn => {
            api_keys::table
                .filter(api_keys::organization_id.eq(organization.as_str()))
                .filter(api_keys::id.eq(id.as_str()))
                .filter(api_keys::revoked_at.is_null())
                .select(ApiKeyRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(ApiKey::try_from).transpose()
    }

    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<ApiKeyId>,
    ) -> Result<Vec<ApiKey>, DomainError> {
        let after = page
            .after
            .as_ref()
            .map(|id| id.as_str().to_owned())
            .unwrap_or_default();
        let rows: Vec<ApiKeyRow> = with_connection!(&self.db, conn => {
            api_keys::table
                .filter(api_keys::organization_id.eq(organization.as_str()))
                .filter(api_keys::revoked_at.is_null())
                .filter(api_keys::id.gt(&after))
                .order(api_keys::id.asc())
                .limit(page.limit.overfetch())
                .select(ApiKeyRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(ApiKey::try_from).collect()
    }

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            api_keys::table
                .filter(api_keys::organization_id.eq(organization.as_str()))
                .filter(api_keys::revoked_at.is_null())
                .count()
                .get_result(conn)
                .await
                .map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn revoke(
        &self,
        organization: &OrganizationId,
        id: &ApiKeyId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        let at = at.naive_utc();
        with_transaction!(&self.db, conn => {
            let changed = diesel::update(
                api_keys::table
                    .filter(api_keys::organization_id.eq(organization.as_str()))
                    .filter(api_keys::id.eq(id.as_str()))
                    .filter(api_keys::revoked_at.is_null()),
            )
            .set(api_keys::revoked_at.eq(Some(at)))
            .execute(conn)
            .await?;
            if changed > 0 {
                record_audit!(conn, audit);
            }
            Ok(changed > 0)
        })
    }

    async fn touch(
        &self,
        id: &ApiKeyId,
        at: DateTime<Utc>,
        stale_before: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        let (at, stale_before) = (at.naive_utc(), stale_before.naive_utc());
        let changed: usize = with_connection!(&self.db, conn => {
            diesel::update(
                api_keys::table
                    .filter(api_keys::id.eq(id.as_str()))
                    .filter(
                        api_keys::last_used_at
                            .is_null()
                            .or(api_keys::last_used_at.le(stale_before)),
                    ),
            )
            .set(api_keys::last_used_at.eq(Some(at)))
            .execute(conn)
            .await
            .map_err(query_error)?
        });
        Ok(changed > 0)
    }
}
