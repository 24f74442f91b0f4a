//! `ArtifactStore` on PostgreSQL or SQLite: one row per artifact version in `artifacts`,
//! written by `SqlChatStore::finish_generation` in the transaction that stores the answer.

use async_trait::async_trait;
use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use tessera_chats::{Artifact, ArtifactFilter, ArtifactId, ArtifactKind, ArtifactStore};
use tessera_kernel::{DomainError, OrganizationId, PageRequest};

use crate::time::utc;
use crate::{Database, database::with_connection, error::query_error, schema::artifacts};

/// `ArtifactStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlArtifactStore {
    db: Database,
}

impl SqlArtifactStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = artifacts, treat_none_as_default_value = false)]
pub(crate) struct ArtifactRow {
    id: String,
    organization_id: String,
    owner: String,
    chat_id: String,
    message_id: String,
    kind: String,
    language: Option<String>,
    title: String,
    identifier: String,
    version: i32,
    content: String,
    created_at: NaiveDateTime,
}

impl From<&Artifact> for ArtifactRow {
    fn from(artifact: &Artifact) -> Self {
        Self {
            id: artifact.id.to_string(),
            organization_id: artifact.organization_id.as_str().to_owned(),
            owner: artifact.owner.clone(),
            chat_id: artifact.chat_id.to_string(),
            message_id: artifact.message_id.to_string(),
            kind: artifact.kind.as_str().to_owned(),
            language: artifact.language.clone(),
            title: artifact.title.clone(),
            identifier: artifact.identifier.clone(),
            version: i32::try_from(artifact.version).unwrap_or(i32::MAX),
            content: artifact.content.clone(),
            created_at: artifact.created_at.naive_utc(),
        }
    }
}

impl TryFrom<ArtifactRow> for Artifact {
    type Error = DomainError;

    fn try_from(row: ArtifactRow) -> Result<Self, Self::Error> {
        let corrupt =
            |what: String| DomainError::internal(format!("artifacts row {}: {what}", row.id));
        Ok(Artifact {
            id: row.id.parse().map_err(|e| corrupt(format!("{e}")))?,
            organization_id: row
                .organization_id
                .parse::<OrganizationId>()
                .map_err(|e| corrupt(format!("{e}")))?,
            chat_id: row.chat_id.parse().map_err(|e| corrupt(format!("{e}")))?,
            message_id: row
                .message_id
                .parse()
                .map_err(|e| corrupt(format!("{e}")))?,
            kind: ArtifactKind::parse(&row.kind)
                .ok_or_else(|| corrupt(format!("kind {}", row.kind)))?,
            version: u32::try_from(row.version).map_err(|e| corrupt(format!("{e}")))?,
            owner: row.owner,
            language: row.language,
            title: row.title,
            identifier: row.identifier,
            content: row.content,
            created_at: utc(row.created_at),
        })
    }
}

/// The artifacts `$filter` (a `&ArtifactFilter`) shows, as a boxed query.
macro_rules! shown_by {
    ($filter:expr) => {{
        let filter: &ArtifactFilter = $filter;
        let mut query = artifacts::table
            .filter(artifacts::organization_id.eq(filter.organization.as_str()))
            .into_boxed();
        if let Some(owner) = &filter.owner {
            query = query.filter(artifacts::owner.eq(owner.as_str()));
        }
        if let Some(chat_id) = &filter.chat_id {
            query = query.filter(artifacts::chat_id.eq(chat_id.as_str()));
        }
        query
    }};
}

#[async_trait]
impl ArtifactStore for SqlArtifactStore {
    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ArtifactId,
    ) -> Result<Option<Artifact>, DomainError> {
        let row: Option<ArtifactRow> = with_connection!(&self.db, conn => {
            artifacts::table
                .filter(artifacts::organization_id.eq(organization.as_str()))
                .filter(artifacts::id.eq(id.as_str()))
                .select(ArtifactRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(Artifact::try_from).transpose()
    }

    async fn list(
        &self,
        filter: &ArtifactFilter,
        page: &PageRequest<ArtifactId>,
    ) -> Result<Vec<Artifact>, DomainError> {
        let rows: Vec<ArtifactRow> = with_connection!(&self.db, conn => {
            let mut query = shown_by!(filter);
            if let Some(after) = &page.after {
                query = query.filter(artifacts::id.lt(after.as_str()));
            }
            query
                .order(artifacts::id.desc())
                .limit(page.limit.overfetch())
                .select(ArtifactRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(Artifact::try_from).collect()
    }

    async fn count(&self, filter: &ArtifactFilter) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            shown_by!(filter).count().get_result(conn).await.map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }
}
