//! `DatasetLinkStore` on PostgreSQL or SQLite: one `model_datasets` row per link, removed
//! with its model or its dataset by the foreign keys.

use async_trait::async_trait;
use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId};
use tessera_models::{DatasetLink, DatasetLinkStore, DatasetUsage, ModelId};

use crate::time::utc;
use crate::{
    Database,
    audit::record_audit,
    database::{with_connection, with_transaction},
    error::query_error,
    schema::model_datasets,
};

/// `DatasetLinkStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlDatasetLinkStore {
    db: Database,
}

impl SqlDatasetLinkStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = model_datasets)]
struct LinkRow {
    organization_id: String,
    model_id: String,
    dataset_id: String,
    usage_type: String,
    created_at: NaiveDateTime,
}

impl LinkRow {
    fn into_link(self) -> Result<DatasetLink, DomainError> {
        let corrupt = |what: String| {
            DomainError::internal(format!(
                "model_datasets row {}/{}: {what}",
                self.model_id, self.dataset_id
            ))
        };
        Ok(DatasetLink {
            model_id: self.model_id.parse().map_err(|e| corrupt(format!("{e}")))?,
            usage: DatasetUsage::parse(&self.usage_type)
                .ok_or_else(|| corrupt(format!("usage_type {}", self.usage_type)))?,
            created_at: utc(self.created_at),
            dataset_id: self.dataset_id,
        })
    }
}

macro_rules! one_link {
    ($organization:expr, $model:expr, $dataset:expr) => {
        model_datasets::table
            .filter(model_datasets::organization_id.eq($organization.as_str()))
            .filter(model_datasets::model_id.eq($model))
            .filter(model_datasets::dataset_id.eq($dataset))
    };
}

#[async_trait]
impl DatasetLinkStore for SqlDatasetLinkStore {
    async fn upsert(
        &self,
        organization: &OrganizationId,
        link: &DatasetLink,
        audit: &AuditRecord,
    ) -> Result<(DatasetLink, bool), DomainError> {
        let model = link.model_id.to_string();
        let usage = link.usage.as_str();
        let (row, created): (LinkRow, bool) = with_transaction!(&self.db, conn => {
            let changed = diesel::update(one_link!(organization, &model, &link.dataset_id))
                .set(model_datasets::usage_type.eq(usage))
                .execute(conn)
                .await?;
            if changed == 0 {
                diesel::insert_into(model_datasets::table)
                    .values(&LinkRow {
                        organization_id: organization.as_str().to_owned(),
                        model_id: model.clone(),
                        dataset_id: link.dataset_id.clone(),
                        usage_type: usage.to_owned(),
                        created_at: link.created_at.naive_utc(),
                    })
                    .execute(conn)
                    .await?;
            }
            let row = one_link!(organization, &model, &link.dataset_id)
                .select(LinkRow::as_select())
                .first(conn)
                .await?;
            record_audit!(conn, audit);
            Ok((row, changed == 0))
        })?;
        Ok((row.into_link()?, created))
    }

    async fn links(
        &self,
        organization: &OrganizationId,
        model: &ModelId,
    ) -> Result<Vec<DatasetLink>, DomainError> {
        let rows: Vec<LinkRow> = with_connection!(&self.db, conn => {
            model_datasets::table
                .filter(model_datasets::organization_id.eq(organization.as_str()))
                .filter(model_datasets::model_id.eq(model.as_str()))
                .order((model_datasets::created_at.asc(), model_datasets::dataset_id.asc()))
                .select(LinkRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(LinkRow::into_link).collect()
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        model: &ModelId,
        dataset_id: &str,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        with_transaction!(&self.db, conn => {
            let deleted = diesel::delete(one_link!(organization, model.as_str(), dataset_id))
                .execute(conn)
                .await?;
            if deleted > 0 {
                record_audit!(conn, audit);
            }
            Ok(deleted > 0)
        })
    }
}
