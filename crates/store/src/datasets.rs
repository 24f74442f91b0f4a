//! `DatasetStore` on PostgreSQL or SQLite: datasets, their files (`dataset_files`) and
//! snapshots (`dataset_snapshots`, `snapshot_files`). The version is bumped in the statement
//! that changes the content, so concurrent changes never lose a step.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};
use tessera_knowledge::{
    AttributeValue, Attributes, Dataset, DatasetChange, DatasetFile, DatasetFileCounts, DatasetId,
    DatasetStore, DatasetUpdated, FileBatch, FileBatchId, FileId, FileStatus, Metadata, Snapshot,
    StoredFile,
};
use tessera_webhooks::Event;

use crate::time::utc;
use crate::{
    Database,
    audit::record_audit,
    database::{with_connection, with_transaction},
    error::{Rollback, query_error},
    files::FileRow,
    schema::{
        dataset_file_batches, dataset_files, dataset_snapshots, datasets, files, snapshot_files,
    },
    webhooks::record_event,
};

/// `DatasetStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlDatasetStore {
    db: Database,
}

impl SqlDatasetStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = datasets, treat_none_as_default_value = false)]
struct DatasetRow {
    id: String,
    organization_id: String,
    name: String,
    description: Option<String>,
    version: i64,
    created_by: String,
    late_interaction: bool,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
    metadata: Option<String>,
    expires_after_days: Option<i32>,
    last_active_at: NaiveDateTime,
}

fn corrupt(table: &str, id: &str, what: impl std::fmt::Display) -> DomainError {
    DomainError::internal(format!("{table} row {id}: {what}"))
}

impl DatasetRow {
    fn into_dataset(self, file_count: i64) -> Result<Dataset, DomainError> {
        Ok(Dataset {
            id: self
                .id
                .parse()
                .map_err(|e| corrupt("datasets", &self.id, e))?,
            organization: self
                .organization_id
                .parse()
                .map_err(|e| corrupt("datasets", &self.id, e))?,
            version: u64::try_from(self.version).map_err(|e| corrupt("datasets", &self.id, e))?,
            file_count: u64::try_from(file_count).unwrap_or_default(),
            name: self.name,
            description: self.description,
            late_interaction: self.late_interaction,
            metadata: match &self.metadata {
                None => Metadata::default(),
                Some(text) => Metadata::trusted(
                    serde_json::from_str(text).map_err(|e| corrupt("datasets", &self.id, e))?,
                ),
            },
            expires_after_days: self
                .expires_after_days
                .map(u16::try_from)
                .transpose()
                .map_err(|e| corrupt("datasets", &self.id, e))?,
            last_active_at: utc(self.last_active_at),
            created_by: self.created_by,
            created_at: utc(self.created_at),
            updated_at: utc(self.updated_at),
        })
    }
}

/// The metadata column: a JSON object, `NULL` when there is none.
fn metadata_text(metadata: &Metadata) -> Option<String> {
    (!metadata.is_empty())
        .then(|| serde_json::to_string(metadata.pairs()).ok())
        .flatten()
}

/// The attributes column: a JSON object of strings, numbers and booleans, `NULL` when there
/// are none.
fn attributes_text(attributes: &Attributes) -> Option<String> {
    if attributes.is_empty() {
        return None;
    }
    let object: serde_json::Map<String, serde_json::Value> = (attributes.pairs().iter())
        .map(|(key, value)| {
            let value = match value {
                AttributeValue::Text(text) => serde_json::Value::from(text.as_str()),
                AttributeValue::Number(number) => serde_json::Value::from(*number),
                AttributeValue::Bool(flag) => serde_json::Value::from(*flag),
            };
            (key.clone(), value)
        })
        .collect();
    Some(serde_json::Value::Object(object).to_string())
}

/// The attributes a column holds.
fn read_attributes(text: Option<&str>, file: &str) -> Result<Attributes, DomainError> {
    let Some(text) = text else {
        return Ok(Attributes::default());
    };
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(text).map_err(|e| corrupt("dataset_files", file, e))?;
    let pairs = object
        .into_iter()
        .map(|(key, value)| {
            let value = match value {
                serde_json::Value::String(text) => AttributeValue::Text(text),
                serde_json::Value::Bool(flag) => AttributeValue::Bool(flag),
                serde_json::Value::Number(number) => AttributeValue::Number(
                    number
                        .as_f64()
                        .ok_or_else(|| corrupt("dataset_files", file, &number))?,
                ),
                other => return Err(corrupt("dataset_files", file, other)),
            };
            Ok((key, value))
        })
        .collect::<Result<_, DomainError>>()?;
    Ok(Attributes::trusted(pairs))
}

/// A dataset's file as read with its association.
fn dataset_file(
    file: FileRow,
    added_at: NaiveDateTime,
    attributes: Option<String>,
) -> Result<DatasetFile, DomainError> {
    let file = StoredFile::try_from(file)?;
    let attributes = read_attributes(attributes.as_deref(), file.id.as_str())?;
    Ok(DatasetFile {
        file,
        added_at: utc(added_at),
        attributes,
    })
}

/// The dataset of an organization, in a query's `FROM`.
macro_rules! one_dataset {
    ($organization:expr, $id:expr) => {
        datasets::table
            .filter(datasets::organization_id.eq($organization.as_str()))
            .filter(datasets::id.eq($id.as_str()))
    };
}

/// The file batch `$id` of the organization's dataset, in a query's `FROM` (the dataset's
/// organization checked as well: a batch outlives nothing its dataset does).
macro_rules! one_batch {
    ($organization:expr, $dataset:expr, $id:expr) => {
        dataset_file_batches::table
            .filter(dataset_file_batches::id.eq($id.as_str()))
            .filter(dataset_file_batches::organization_id.eq($organization.as_str()))
            .filter(dataset_file_batches::dataset_id.eq($dataset.as_str()))
    };
}

/// The files of a `dataset_files ⋈ files` query by status: `(status, count, bytes)`.
macro_rules! by_status {
    ($query:expr, $conn:ident) => {
        $query
            .group_by(files::status)
            .select((
                files::status,
                diesel::dsl::count_star(),
                // SUM of a BIGINT is NUMERIC on PostgreSQL; the cast keeps it an integer.
                diesel::dsl::sql::<diesel::sql_types::Nullable<diesel::sql_types::BigInt>>(
                    "CAST(SUM(files.size) AS BIGINT)",
                ),
            ))
            .load($conn)
            .await
            .map_err(query_error)?
    };
}

/// Loads a dataset with its file count on `$conn`; `None` when it does not exist.
macro_rules! load_dataset {
    ($conn:ident, $organization:expr, $id:expr) => {{
        let row: Option<DatasetRow> = one_dataset!($organization, $id)
            .select(DatasetRow::as_select())
            .first($conn)
            .await
            .optional()?;
        match row {
            None => None,
            Some(row) => {
                let count: i64 = dataset_files::table
                    .filter(dataset_files::dataset_id.eq(&row.id))
                    .count()
                    .get_result($conn)
                    .await?;
                Some((row, count))
            }
        }
    }};
}

/// The knowledge domain's event of a content change that brought `row` to its version, as
/// the webhook outbox records it (`dataset.updated`).
fn dataset_updated(
    organization: &OrganizationId,
    dataset: &DatasetId,
    row: &DatasetRow,
    change: DatasetChange,
    file: &FileId,
    at: NaiveDateTime,
) -> Event {
    let updated = DatasetUpdated {
        organization: organization.clone(),
        dataset: dataset.clone(),
        version: u64::try_from(row.version).unwrap_or_default(),
        change,
        file: file.clone(),
        at: utc(at),
    };
    updated_event(&updated)
}

/// The webhook event the knowledge domain's `DatasetUpdated` is.
fn updated_event(updated: &DatasetUpdated) -> Event {
    let change = match updated.change {
        DatasetChange::FileAdded => tessera_webhooks::DatasetChange::FileAdded,
        DatasetChange::FileRemoved => tessera_webhooks::DatasetChange::FileRemoved,
    };
    Event::dataset_updated(
        &updated.organization,
        updated.dataset.as_str(),
        updated.version,
        change,
        updated.file.as_str(),
        updated.at,
    )
}

fn snapshot_from(
    dataset: &DatasetId,
    version: i64,
    created_at: NaiveDateTime,
    files: Vec<(String, String)>,
) -> Result<Snapshot, DomainError> {
    Ok(Snapshot {
        dataset_id: dataset.clone(),
        version: u64::try_from(version)
            .map_err(|e| corrupt("dataset_snapshots", dataset.as_str(), e))?,
        files: files
            .into_iter()
            .map(|(file, sha256)| {
                file.parse::<FileId>()
                    .map(|id| (id, sha256))
                    .map_err(|e| corrupt("snapshot_files", &file, e))
            })
            .collect::<Result<_, _>>()?,
        created_at: utc(created_at),
    })
}

#[async_trait]
impl DatasetStore for SqlDatasetStore {
    async fn insert(&self, dataset: &Dataset, audit: &AuditRecord) -> Result<(), DomainError> {
        let row = DatasetRow {
            id: dataset.id.to_string(),
            organization_id: dataset.organization.as_str().to_owned(),
            name: dataset.name.clone(),
            description: dataset.description.clone(),
            version: i64::try_from(dataset.version).unwrap_or(i64::MAX),
            created_by: dataset.created_by.clone(),
            late_interaction: dataset.late_interaction,
            created_at: dataset.created_at.naive_utc(),
            updated_at: dataset.updated_at.naive_utc(),
            metadata: metadata_text(&dataset.metadata),
            expires_after_days: dataset.expires_after_days.map(i32::from),
            last_active_at: dataset.last_active_at.naive_utc(),
        };
        with_transaction!(&self.db, conn => {
            diesel::insert_into(datasets::table)
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
        id: &DatasetId,
    ) -> Result<Option<Dataset>, DomainError> {
        let found: Option<(DatasetRow, i64)> = with_connection!(&self.db, conn => {
            (async { Ok::<_, diesel::result::Error>(load_dataset!(conn, organization, id)) })
                .await
                .map_err(query_error)?
        });
        found
            .map(|(row, count)| row.into_dataset(count))
            .transpose()
    }

    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<DatasetId>,
    ) -> Result<Vec<Dataset>, DomainError> {
        let (rows, counts): (Vec<DatasetRow>, Vec<(String, i64)>) = with_connection!(&self.db, conn => {
            let mut query = datasets::table
                .filter(datasets::organization_id.eq(organization.as_str()))
                .into_boxed();
            if let Some(after) = &page.after {
                query = query.filter(datasets::id.lt(after.as_str().to_owned()));
            }
            let rows: Vec<DatasetRow> = query
                .order(datasets::id.desc())
                .limit(page.limit.overfetch())
                .select(DatasetRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?;
            let ids: Vec<&str> = rows.iter().map(|row| row.id.as_str()).collect();
            let counts: Vec<(String, i64)> = dataset_files::table
                .filter(dataset_files::dataset_id.eq_any(&ids))
                .group_by(dataset_files::dataset_id)
                .select((dataset_files::dataset_id, diesel::dsl::count_star()))
                .load(conn)
                .await
                .map_err(query_error)?;
            (rows, counts)
        });
        let counts: HashMap<String, i64> = counts.into_iter().collect();
        rows.into_iter()
            .map(|row| {
                let count = counts.get(&row.id).copied().unwrap_or_default();
                row.into_dataset(count)
            })
            .collect()
    }

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            datasets::table
                .filter(datasets::organization_id.eq(organization.as_str()))
                .count()
                .get_result(conn)
                .await
                .map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn update(&self, dataset: &Dataset, audit: &AuditRecord) -> Result<bool, DomainError> {
        with_transaction!(&self.db, conn => {
            let changed = diesel::update(one_dataset!(dataset.organization, dataset.id))
                .set((
                    datasets::name.eq(&dataset.name),
                    datasets::description.eq(&dataset.description),
                    datasets::late_interaction.eq(dataset.late_interaction),
                    datasets::metadata.eq(metadata_text(&dataset.metadata)),
                    datasets::expires_after_days.eq(dataset.expires_after_days.map(i32::from)),
                    datasets::updated_at.eq(dataset.updated_at.naive_utc()),
                ))
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
        organization: &OrganizationId,
        id: &DatasetId,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        let at = at.naive_utc();
        let moved = with_connection!(&self.db, conn => {
            // The condition keeps it moving forward when activities race.
            diesel::update(one_dataset!(organization, id).filter(datasets::last_active_at.lt(at)))
                .set(datasets::last_active_at.eq(at))
                .execute(conn)
                .await
                .map_err(query_error)?
        });
        Ok(moved > 0)
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &DatasetId,
        audit: &AuditRecord,
    ) -> Result<Option<Vec<FileId>>, DomainError> {
        let held: Option<Vec<String>> = with_transaction!(&self.db, conn => {
            let files: Vec<String> = dataset_files::table
                .inner_join(datasets::table)
                .filter(datasets::organization_id.eq(organization.as_str()))
                .filter(dataset_files::dataset_id.eq(id.as_str()))
                .select(dataset_files::file_id)
                .load(conn)
                .await?;
            let deleted = diesel::delete(one_dataset!(organization, id)).execute(conn).await?;
            if deleted > 0 {
                record_audit!(conn, audit);
            }
            Ok((deleted > 0).then_some(files))
        })?;
        held.map(|files| {
            files
                .iter()
                .map(|file| file.parse().map_err(|e| corrupt("dataset_files", file, e)))
                .collect()
        })
        .transpose()
    }

    async fn add_file(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        file: &FileId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<(Dataset, bool), DomainError> {
        let at = at.naive_utc();
        let (row, count, added): (DatasetRow, i64, bool) = with_transaction!(&self.db, conn => {
            let file_exists: i64 = files::table
                .filter(files::organization_id.eq(organization.as_str()))
                .filter(files::id.eq(file.as_str()))
                .count()
                .get_result(conn)
                .await?;
            if file_exists == 0 {
                return Err(Rollback::Fail(DomainError::not_found("file", file)));
            }
            let exists: i64 = one_dataset!(organization, dataset).count().get_result(conn).await?;
            if exists == 0 {
                return Err(Rollback::Fail(DomainError::not_found("dataset", dataset)));
            }
            let inserted = diesel::insert_into(dataset_files::table)
                .values((
                    dataset_files::dataset_id.eq(dataset.as_str()),
                    dataset_files::file_id.eq(file.as_str()),
                    dataset_files::added_at.eq(at),
                ))
                .on_conflict_do_nothing()
                .execute(conn)
                .await?;
            if inserted > 0 {
                diesel::update(one_dataset!(organization, dataset))
                    .set((
                        datasets::version.eq(datasets::version + 1),
                        datasets::updated_at.eq(at),
                    ))
                    .execute(conn)
                    .await?;
            }
            match load_dataset!(conn, organization, dataset) {
                Some((row, count)) => {
                    if inserted > 0 {
                        let event =
                            dataset_updated(organization, dataset, &row, DatasetChange::FileAdded, file, at);
                        record_event!(conn, &event);
                        record_audit!(conn, audit);
                    }
                    Ok((row, count, inserted > 0))
                }
                None => Err(Rollback::Fail(DomainError::not_found("dataset", dataset))),
            }
        })?;
        Ok((row.into_dataset(count)?, added))
    }

    async fn remove_file(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        file: &FileId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<Option<(Dataset, bool)>, DomainError> {
        let at = at.naive_utc();
        let found: Option<(DatasetRow, i64, bool)> = with_transaction!(&self.db, conn => {
            let exists: i64 = one_dataset!(organization, dataset).count().get_result(conn).await?;
            if exists == 0 {
                return Ok(None);
            }
            let removed = diesel::delete(
                dataset_files::table
                    .filter(dataset_files::dataset_id.eq(dataset.as_str()))
                    .filter(dataset_files::file_id.eq(file.as_str())),
            )
            .execute(conn)
            .await?;
            if removed > 0 {
                diesel::update(one_dataset!(organization, dataset))
                    .set((
                        datasets::version.eq(datasets::version + 1),
                        datasets::updated_at.eq(at),
                    ))
                    .execute(conn)
                    .await?;
            }
            let loaded = load_dataset!(conn, organization, dataset);
            if let Some((row, _)) = &loaded
                && removed > 0
            {
                let event =
                    dataset_updated(organization, dataset, row, DatasetChange::FileRemoved, file, at);
                record_event!(conn, &event);
                record_audit!(conn, audit);
            }
            Ok(loaded.map(|(row, count)| (row, count, removed > 0)))
        })?;
        found
            .map(|(row, count, removed)| Ok((row.into_dataset(count)?, removed)))
            .transpose()
    }

    async fn set_attributes(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        file: &FileId,
        attributes: &Attributes,
    ) -> Result<bool, DomainError> {
        let text = attributes_text(attributes);
        let changed = with_connection!(&self.db, conn => {
            let of_organization = datasets::table
                .filter(datasets::organization_id.eq(organization.as_str()))
                .select(datasets::id);
            diesel::update(
                dataset_files::table
                    .filter(dataset_files::dataset_id.eq(dataset.as_str()))
                    .filter(dataset_files::file_id.eq(file.as_str()))
                    .filter(dataset_files::dataset_id.eq_any(of_organization)),
            )
            .set(dataset_files::attributes.eq(&text))
            .execute(conn)
            .await
            .map_err(query_error)?
        });
        Ok(changed > 0)
    }

    async fn attributes(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
    ) -> Result<Vec<(FileId, Attributes)>, DomainError> {
        let rows: Vec<(String, Option<String>)> = with_connection!(&self.db, conn => {
            dataset_files::table
                .inner_join(datasets::table)
                .inner_join(files::table)
                .filter(datasets::organization_id.eq(organization.as_str()))
                .filter(files::organization_id.eq(organization.as_str()))
                .filter(dataset_files::dataset_id.eq(dataset.as_str()))
                .select((dataset_files::file_id, dataset_files::attributes))
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter()
            .map(|(file, attributes)| {
                let attributes = read_attributes(attributes.as_deref(), &file)?;
                let id = file
                    .parse()
                    .map_err(|e| corrupt("dataset_files", &file, e))?;
                Ok((id, attributes))
            })
            .collect()
    }

    async fn file_counts(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        only: Option<Vec<FileId>>,
    ) -> Result<Option<DatasetFileCounts>, DomainError> {
        let only: Option<Vec<&str>> = only
            .as_ref()
            .map(|files| files.iter().map(FileId::as_str).collect());
        let found: Option<Vec<(String, i64, Option<i64>)>> = with_connection!(&self.db, conn => {
            let exists: Option<String> = one_dataset!(organization, dataset)
                .select(datasets::id)
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?;
            match exists {
                None => None,
                Some(_) => {
                    let held = dataset_files::table
                        .inner_join(files::table)
                        .filter(files::organization_id.eq(organization.as_str()))
                        .filter(dataset_files::dataset_id.eq(dataset.as_str()));
                    Some(match &only {
                        Some(only) => {
                            by_status!(held.filter(dataset_files::file_id.eq_any(only)), conn)
                        }
                        None => by_status!(held, conn),
                    })
                }
            }
        });
        let Some(groups) = found else {
            return Ok(None);
        };
        let mut counts = DatasetFileCounts::default();
        for (status, count, bytes) in groups {
            let count = u64::try_from(count).unwrap_or_default();
            match FileStatus::parse(&status) {
                Some(FileStatus::Processing) => counts.processing += count,
                Some(FileStatus::Ready) => counts.ready += count,
                Some(FileStatus::Failed) => counts.failed += count,
                None => {
                    return Err(corrupt(
                        "files",
                        dataset.as_str(),
                        format!("status {status}"),
                    ));
                }
            }
            counts.bytes += bytes
                .and_then(|bytes| u64::try_from(bytes).ok())
                .unwrap_or_default();
        }
        Ok(Some(counts))
    }

    async fn insert_batch(&self, batch: &FileBatch) -> Result<(), DomainError> {
        let files: Vec<&str> = batch.files.iter().map(FileId::as_str).collect();
        let file_ids = serde_json::to_string(&files)
            .map_err(|e| corrupt("dataset_file_batches", batch.id.as_str(), e))?;
        with_connection!(&self.db, conn => {
            diesel::insert_into(dataset_file_batches::table)
                .values((
                    dataset_file_batches::id.eq(batch.id.as_str()),
                    dataset_file_batches::organization_id.eq(batch.organization.as_str()),
                    dataset_file_batches::dataset_id.eq(batch.dataset.as_str()),
                    dataset_file_batches::file_ids.eq(&file_ids),
                    dataset_file_batches::created_at.eq(batch.created_at.naive_utc()),
                    dataset_file_batches::cancelled_at
                        .eq(batch.cancelled_at.map(|at| at.naive_utc())),
                ))
                .execute(conn)
                .await
                .map_err(query_error)?
        });
        Ok(())
    }

    async fn batch(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        id: &FileBatchId,
    ) -> Result<Option<FileBatch>, DomainError> {
        type BatchRow = (String, String, NaiveDateTime, Option<NaiveDateTime>);
        let row: Option<BatchRow> = with_connection!(&self.db, conn => {
            one_batch!(organization, dataset, id)
                .select((
                    dataset_file_batches::id,
                    dataset_file_batches::file_ids,
                    dataset_file_batches::created_at,
                    dataset_file_batches::cancelled_at,
                ))
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        let Some((batch, file_ids, created_at, cancelled_at)) = row else {
            return Ok(None);
        };
        let texts: Vec<String> = serde_json::from_str(&file_ids)
            .map_err(|e| corrupt("dataset_file_batches", &batch, e))?;
        let files = texts
            .iter()
            .map(|text| {
                text.parse()
                    .map_err(|e| corrupt("dataset_file_batches", &batch, e))
            })
            .collect::<Result<_, _>>()?;
        Ok(Some(FileBatch {
            id: id.clone(),
            organization: organization.clone(),
            dataset: dataset.clone(),
            files,
            created_at: utc(created_at),
            cancelled_at: cancelled_at.map(utc),
        }))
    }

    async fn cancel_batch(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        id: &FileBatchId,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        with_transaction!(&self.db, conn => {
            let found: Option<Option<NaiveDateTime>> = one_batch!(organization, dataset, id)
                .select(dataset_file_batches::cancelled_at)
                .first(conn)
                .await
                .optional()?;
            if found == Some(None) {
                diesel::update(one_batch!(organization, dataset, id))
                    .set(dataset_file_batches::cancelled_at.eq(Some(at.naive_utc())))
                    .execute(conn)
                    .await?;
            }
            Ok(found.is_some())
        })
    }

    async fn dataset_file(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        file: &FileId,
    ) -> Result<Option<DatasetFile>, DomainError> {
        let row: Option<(FileRow, NaiveDateTime, Option<String>)> = with_connection!(&self.db, conn => {
            dataset_files::table
                .inner_join(files::table)
                .inner_join(datasets::table)
                .filter(datasets::organization_id.eq(organization.as_str()))
                .filter(files::organization_id.eq(organization.as_str()))
                .filter(dataset_files::dataset_id.eq(dataset.as_str()))
                .filter(dataset_files::file_id.eq(file.as_str()))
                .select((
                    FileRow::as_select(),
                    dataset_files::added_at,
                    dataset_files::attributes,
                ))
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(|(file, added_at, attributes)| dataset_file(file, added_at, attributes))
            .transpose()
    }

    async fn files(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        status: Option<FileStatus>,
        page: &PageRequest<FileId>,
    ) -> Result<Vec<DatasetFile>, DomainError> {
        let rows: Vec<(FileRow, NaiveDateTime, Option<String>)> = with_connection!(&self.db, conn => {
            let mut query = dataset_files::table
                .inner_join(files::table)
                .filter(files::organization_id.eq(organization.as_str()))
                .filter(dataset_files::dataset_id.eq(dataset.as_str()))
                .into_boxed();
            if let Some(status) = status {
                query = query.filter(files::status.eq(status.as_str()));
            }
            if let Some(after) = &page.after {
                query = query.filter(files::id.lt(after.as_str().to_owned()));
            }
            query
                .order(files::id.desc())
                .limit(page.limit.overfetch())
                .select((
                    FileRow::as_select(),
                    dataset_files::added_at,
                    dataset_files::attributes,
                ))
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter()
            .map(|(file, added_at, attributes)| dataset_file(file, added_at, attributes))
            .collect()
    }

    async fn snapshot(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<Snapshot, DomainError> {
        let at = at.naive_utc();
        let (version, created_at, frozen): (i64, NaiveDateTime, Vec<(String, String)>) = with_transaction!(&self.db, conn => {
            let version: Option<i64> = one_dataset!(organization, dataset)
                .select(datasets::version)
                .first(conn)
                .await
                .optional()?;
            let Some(version) = version else {
                return Err(Rollback::Fail(DomainError::not_found("dataset", dataset)));
            };
            let existing: Option<NaiveDateTime> = dataset_snapshots::table
                .filter(dataset_snapshots::dataset_id.eq(dataset.as_str()))
                .filter(dataset_snapshots::version.eq(version))
                .select(dataset_snapshots::created_at)
                .first(conn)
                .await
                .optional()?;
            if let Some(created_at) = existing {
                let frozen: Vec<(String, String)> = snapshot_files::table
                    .filter(snapshot_files::dataset_id.eq(dataset.as_str()))
                    .filter(snapshot_files::version.eq(version))
                    .order(snapshot_files::file_id.asc())
                    .select((snapshot_files::file_id, snapshot_files::sha256))
                    .load(conn)
                    .await?;
                return Ok((version, created_at, frozen));
            }
            let frozen: Vec<(String, String)> = dataset_files::table
                .inner_join(files::table)
                .filter(dataset_files::dataset_id.eq(dataset.as_str()))
                .order(files::id.asc())
                .select((files::id, files::sha256))
                .load(conn)
                .await?;
            diesel::insert_into(dataset_snapshots::table)
                .values((
                    dataset_snapshots::dataset_id.eq(dataset.as_str()),
                    dataset_snapshots::version.eq(version),
                    dataset_snapshots::created_at.eq(at),
                ))
                .execute(conn)
                .await?;
            for (file, sha256) in &frozen {
                diesel::insert_into(snapshot_files::table)
                    .values((
                        snapshot_files::dataset_id.eq(dataset.as_str()),
                        snapshot_files::version.eq(version),
                        snapshot_files::file_id.eq(file),
                        snapshot_files::sha256.eq(sha256),
                    ))
                    .execute(conn)
                    .await?;
            }
            record_audit!(conn, audit);
            Ok((version, at, frozen))
        })?;
        snapshot_from(dataset, version, created_at, frozen)
    }

    async fn snapshots(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
    ) -> Result<Vec<Snapshot>, DomainError> {
        let (heads, members): (Vec<(i64, NaiveDateTime)>, Vec<(i64, String, String)>) = with_connection!(&self.db, conn => {
            let heads: Vec<(i64, NaiveDateTime)> = dataset_snapshots::table
                .inner_join(datasets::table)
                .filter(datasets::organization_id.eq(organization.as_str()))
                .filter(dataset_snapshots::dataset_id.eq(dataset.as_str()))
                .order(dataset_snapshots::version.desc())
                .select((dataset_snapshots::version, dataset_snapshots::created_at))
                .load(conn)
                .await
                .map_err(query_error)?;
            let members: Vec<(i64, String, String)> = snapshot_files::table
                .filter(snapshot_files::dataset_id.eq(dataset.as_str()))
                .order((snapshot_files::version.desc(), snapshot_files::file_id.asc()))
                .select((snapshot_files::version, snapshot_files::file_id, snapshot_files::sha256))
                .load(conn)
                .await
                .map_err(query_error)?;
            (heads, members)
        });
        let mut by_version: HashMap<i64, Vec<(String, String)>> = HashMap::new();
        for (version, file, sha256) in members {
            by_version.entry(version).or_default().push((file, sha256));
        }
        heads
            .into_iter()
            .map(|(version, created_at)| {
                let files = by_version.remove(&version).unwrap_or_default();
                snapshot_from(dataset, version, created_at, files)
            })
            .collect()
    }
}
