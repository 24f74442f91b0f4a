//! `ModelStore` on PostgreSQL or SQLite: organizations' user models, one row each in
//! `user_models`, metadata as a serialized JSON object.

use async_trait::async_trait;
use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde_json::{Map, Value};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};
use tessera_models::{ModelId, ModelStore, UserModel};

use crate::time::utc;
use crate::{
    Database,
    audit::record_audit,
    database::{with_connection, with_transaction},
    error::query_error,
    schema::user_models,
};

/// `ModelStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlModelStore {
    db: Database,
}

impl SqlModelStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = user_models, treat_none_as_default_value = false)]
struct ModelRow {
    id: String,
    organization_id: String,
    parent_model_id: String,
    display_name: String,
    description: Option<String>,
    system_prompt_id: Option<String>,
    system_prompt: Option<String>,
    metadata: String,
    enabled: bool,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
}

impl TryFrom<&UserModel> for ModelRow {
    type Error = DomainError;

    fn try_from(model: &UserModel) -> Result<Self, Self::Error> {
        let metadata = serde_json::to_string(&model.metadata).map_err(|e| {
            DomainError::internal(format!("user model {}: metadata: {e}", model.id))
        })?;
        Ok(Self {
            id: model.id.to_string(),
            organization_id: model.organization_id.as_str().to_owned(),
            parent_model_id: model.parent_model_id.clone(),
            display_name: model.display_name.clone(),
            description: model.description.clone(),
            system_prompt_id: model.system_prompt_id.as_ref().map(|id| id.to_string()),
            system_prompt: model.system_prompt.clone(),
            metadata,
            enabled: model.enabled,
            created_at: model.created_at.naive_utc(),
            updated_at: model.updated_at.naive_utc(),
        })
    }
}

impl TryFrom<ModelRow> for UserModel {
    type Error = DomainError;

    /// A row that does not read back as a model (bad id, metadata that is not a JSON
    /// object) is an internal error.
    fn try_from(row: ModelRow) -> Result<Self, Self::Error> {
        let corrupt =
            |what: String| DomainError::internal(format!("user_models row {}: {what}", row.id));
        let metadata: Map<String, Value> =
            serde_json::from_str(&row.metadata).map_err(|e| corrupt(format!("metadata: {e}")))?;
        Ok(UserModel {
            id: row.id.parse().map_err(|e| corrupt(format!("{e}")))?,
            organization_id: row
                .organization_id
                .parse()
                .map_err(|e| corrupt(format!("{e}")))?,
            system_prompt_id: row
                .system_prompt_id
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e| corrupt(format!("system_prompt_id: {e}")))?,
            parent_model_id: row.parent_model_id,
            display_name: row.display_name,
            description: row.description,
            system_prompt: row.system_prompt,
            metadata,
            enabled: row.enabled,
            created_at: utc(row.created_at),
            updated_at: utc(row.updated_at),
        })
    }
}

#[async_trait]
impl ModelStore for SqlModelStore {
    async fn insert(&self, model: &UserModel, audit: &AuditRecord) -> Result<(), DomainError> {
        let row = ModelRow::try_from(model)?;
        with_transaction!(&self.db, conn => {
            diesel::insert_into(user_models::table)
                .values(&row)
                .execute(conn)
                .await?;
            record_audit!(conn, audit);
            Ok(())
        })
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ModelId,
    ) -> Result<Option<UserModel>, DomainError> {
        let row: Option<ModelRow> = with_connection!(&self.db, conn => {
            user_models::table
                .filter(user_models::organization_id.eq(organization.as_str()))
                .filter(user_models::id.eq(id.as_str()))
                .select(ModelRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(UserModel::try_from).transpose()
    }

    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<ModelId>,
    ) -> Result<Vec<UserModel>, DomainError> {
        let after = page.after.as_ref().map_or("", |id| id.as_str());
        let rows: Vec<ModelRow> = with_connection!(&self.db, conn => {
            user_models::table
                .filter(user_models::organization_id.eq(organization.as_str()))
                .filter(user_models::id.gt(after))
                .order(user_models::id.asc())
                .limit(page.limit.overfetch())
                .select(ModelRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(UserModel::try_from).collect()
    }

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            user_models::table
                .filter(user_models::organization_id.eq(organization.as_str()))
                .count()
                .get_result(conn)
                .await
                .map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn update(&self, model: &UserModel, audit: &AuditRecord) -> Result<bool, DomainError> {
        let row = ModelRow::try_from(model)?;
        with_transaction!(&self.db, conn => {
            let changed = diesel::update(
                user_models::table
                    .filter(user_models::organization_id.eq(&row.organization_id))
                    .filter(user_models::id.eq(&row.id)),
            )
            .set((
                user_models::parent_model_id.eq(&row.parent_model_id),
                user_models::display_name.eq(&row.display_name),
                user_models::description.eq(&row.description),
                user_models::system_prompt_id.eq(&row.system_prompt_id),
                user_models::system_prompt.eq(&row.system_prompt),
                user_models::metadata.eq(&row.metadata),
                user_models::enabled.eq(row.enabled),
                user_models::updated_at.eq(row.updated_at),
            ))
            .execute(conn)
            .await?;
            if changed > 0 {
                record_audit!(conn, audit);
            }
            Ok(changed > 0)
        })
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &ModelId,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        with_transaction!(&self.db, conn => {
            let deleted = diesel::delete(
                user_models::table
                    .filter(user_models::organization_id.eq(organization.as_str()))
                    .filter(user_models::id.eq(id.as_str())),
            )
            .execute(conn)
            .await?;
            if deleted > 0 {
                record_audit!(conn, audit);
            }
            Ok(deleted > 0)
        })
    }
}
