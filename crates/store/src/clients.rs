use std::{collections::HashMap, sync::Arc};

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use tessera_identity::{Client, ClientId, ClientStore, SecretHash, StoredClient};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest, PerThread, ScopeSet};

use crate::time::utc;
use crate::{
    Database,
    audit::record_audit,
    batch::{Batcher, Limits, NotOnRuntime, Pending},
    batch_connections::BatchConnections,
    database::{with_connection, with_transaction},
    error::query_error,
    schema::clients,
};

/// `ClientStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlClientStore {
    db: Database,
    /// PostgreSQL's batched reads of clients being authenticated (every request with a
    /// client's token reads its client), one batching task per thread; absent on SQLite.
    lookups: Option<Arc<PerThread<ClientLookups, NotOnRuntime>>>,
}

/// One thread's queue of client reads, answered in batches.
type ClientLookups = Batcher<ClientId, Option<StoredClient>>;

/// Lookups in flight at once (per thread), and the most ids one lookup asks for.
const LOOKUP_LIMITS: Limits = Limits {
    in_flight: 2,
    max_weight: 500,
};

impl SqlClientStore {
    /// The store; on PostgreSQL each thread's batched client reads start on its Tokio
    /// runtime when it first authenticates a client.
    pub fn new(db: Database) -> Self {
        let lookups = match &db {
            Database::Postgres(pool) => {
                let pool = pool.clone();
                Some(Arc::new(
                    PerThread::new(move || {
                        let connections =
                            Arc::new(BatchConnections::new(pool.clone(), LOOKUP_LIMITS.in_flight));
                        Batcher::start(
                            LOOKUP_LIMITS,
                            |_| 1,
                            move |batch| {
                                let connections = Arc::clone(&connections);
                                async move { look_up_together(&connections, batch).await }
                            },
                        )
                    })
                    .replacing_unless(ClientLookups::running),
                ))
            }
            Database::Sqlite(_) => None,
        };
        Self { db, lookups }
    }
}

/// Answers concurrent authentications' client reads with one query (each distinct id once).
async fn look_up_together(
    connections: &BatchConnections,
    batch: Vec<Pending<ClientId, Option<StoredClient>>>,
) {
    let mut ids: Vec<&str> = batch.iter().map(|p| p.request.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let found: Result<Vec<StoredClientRow>, DomainError> = async move {
        let mut conn = connections.get().await?;
        let found = clients::table
            .filter(clients::id.eq_any(ids))
            .select(StoredClientRow::as_select())
            .load(&mut conn)
            .await
            .map_err(query_error);
        connections.put_back(conn, &found);
        found
    }
    .await;
    let found = found.map(|rows| {
        rows.into_iter()
            .map(|row| (row.client.id.clone(), StoredClient::try_from(row)))
            .collect::<HashMap<_, _>>()
    });
    for pending in batch {
        let outcome = match &found {
            Ok(clients) => clients.get(pending.request.as_str()).cloned().transpose(),
            Err(error) => Err(error.clone()),
        };
        pending.answer(outcome);
    }
}

/// A client's record without its secret hash (what `get` and `list` read).
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = clients)]
struct ClientRow {
    id: String,
    organization_id: String,
    name: String,
    scopes: String,
    secret_generation: i32,
    revoked_at: Option<NaiveDateTime>,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
}

/// A client's record with its secret hash (what `insert` writes and authentication reads).
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = clients)]
struct StoredClientRow {
    #[diesel(embed)]
    client: ClientRow,
    secret_hash: String,
}

/// The column value of a secret generation.
fn generation_column(generation: u32) -> Result<i32, DomainError> {
    i32::try_from(generation).map_err(|_| {
        DomainError::internal(format!(
            "client secret generation {generation} exceeds the column's range"
        ))
    })
}

impl TryFrom<&StoredClient> for StoredClientRow {
    type Error = DomainError;

    fn try_from(stored: &StoredClient) -> Result<Self, Self::Error> {
        let client = &stored.client;
        Ok(Self {
            client: ClientRow {
                id: client.id.to_string(),
                organization_id: client.organization_id.as_str().to_owned(),
                name: client.name.clone(),
                scopes: client.scopes.to_string(),
                secret_generation: generation_column(client.secret_generation)?,
                revoked_at: client.revoked_at.map(|at| at.naive_utc()),
                created_at: client.created_at.naive_utc(),
                updated_at: client.updated_at.naive_utc(),
            },
            secret_hash: stored.secret_hash.0.clone(),
        })
    }
}

impl TryFrom<ClientRow> for Client {
    type Error = DomainError;

    fn try_from(row: ClientRow) -> Result<Self, Self::Error> {
        let corrupt =
            |what: String| DomainError::internal(format!("client row {}: {what}", row.id));
        Ok(Client {
            id: row.id.parse().map_err(|e| corrupt(format!("{e}")))?,
            organization_id: row
                .organization_id
                .parse()
                .map_err(|e| corrupt(format!("{e}")))?,
            scopes: ScopeSet::parse_list(&row.scopes).map_err(|e| corrupt(format!("{e}")))?,
            secret_generation: u32::try_from(row.secret_generation)
                .map_err(|e| corrupt(format!("secret generation: {e}")))?,
            name: row.name.clone(),
            revoked_at: row.revoked_at.map(utc),
            created_at: utc(row.created_at),
            updated_at: utc(row.updated_at),
        })
    }
}

impl TryFrom<StoredClientRow> for StoredClient {
    type Error = DomainError;

    fn try_from(row: StoredClientRow) -> Result<Self, Self::Error> {
        Ok(StoredClient {
            client: Client::try_from(row.client)?,
            secret_hash: SecretHash(row.secret_hash),
        })
    }
}

#[async_trait]
impl ClientStore for SqlClientStore {
    async fn insert(&self, client: &StoredClient, audit: &AuditRecord) -> Result<(), DomainError> {
        let row = StoredClientRow::try_from(client)?;
        with_transaction!(&self.db, conn => {
            diesel::insert_into(clients::table).values(&row).execute(conn).await?;
            record_audit!(conn, audit);
            Ok(())
        })
    }

    async fn find_for_authentication(
        &self,
        id: &ClientId,
    ) -> Result<Option<StoredClient>, DomainError> {
        if let Some(lookups) = self.lookups.as_ref().and_then(|lookups| lookups.get().ok()) {
            return lookups.call(id.clone()).await;
        }
        let row: Option<StoredClientRow> = with_connection!(&self.db, conn => {
            clients::table
                .find(id.as_str())
                .select(StoredClientRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(StoredClient::try_from).transpose()
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
    ) -> Result<Option<Client>, DomainError> {
        let row: Option<ClientRow> = with_connection!(&self.db, conn => {
            clients::table
                .filter(clients::organization_id.eq(organization.as_str()))
                .filter(clients::id.eq(id.as_str()))
                .select(ClientRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(Client::try_from).transpose()
    }

    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<ClientId>,
    ) -> Result<Vec<Client>, DomainError> {
        let after = page
            .after
            .as_ref()
            .map(|id| id.as_str().to_owned())
            .unwrap_or_default();
        let rows: Vec<ClientRow> = with_connection!(&self.db, conn => {
            clients::table
                .filter(clients::organization_id.eq(organization.as_str()))
                .filter(clients::id.gt(&after))
                .order(clients::id.asc())
                .limit(page.limit.overfetch())
                .select(ClientRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(Client::try_from).collect()
    }

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            clients::table
                .filter(clients::organization_id.eq(organization.as_str()))
                .count()
                .get_result(conn)
                .await
                .map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn replace_secret(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
        hash: &SecretHash,
        generation: u32,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        let generation = generation_column(generation)?;
        let at = at.naive_utc();
        with_transaction!(&self.db, conn => {
            let changed = diesel::update(
                clients::table
                    .filter(clients::organization_id.eq(organization.as_str()))
                    .filter(clients::id.eq(id.as_str()))
                    .filter(clients::revoked_at.is_null()),
            )
            .set((
                clients::secret_hash.eq(&hash.0),
                clients::secret_generation.eq(generation),
                clients::updated_at.eq(at),
            ))
            .execute(conn)
            .await?;
            if changed > 0 {
                record_audit!(conn, audit);
            }
            Ok(changed > 0)
        })
    }

    async fn revoke(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        let at = at.naive_utc();
        with_transaction!(&self.db, conn => {
            let changed = diesel::update(
                clients::table
                    .filter(clients::organization_id.eq(organization.as_str()))
                    .filter(clients::id.eq(id.as_str()))
                    .filter(clients::revoked_at.is_null()),
            )
            .set((clients::revoked_at.eq(Some(at)), clients::updated_at.eq(at)))
            .execute(conn)
            .await?;
            if changed > 0 {
                record_audit!(conn, audit);
            }
            Ok(changed > 0)
        })
    }
}
