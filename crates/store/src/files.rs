//! `FileStore` on PostgreSQL or SQLite: file records, their chunks, and the processing
//! queue (`file_jobs`). Workers claim a job in one `UPDATE … RETURNING` statement; on
//! PostgreSQL its subquery locks the job row with `FOR UPDATE SKIP LOCKED`, so concurrent
//! workers never take the same job nor wait for each other; SQLite serializes writers.

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::{
    prelude::*,
    sql_types::{Integer, Text, Timestamp},
};
use diesel_async::RunQueryDsl;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};
use tessera_knowledge::{
    ChunkLocation, ChunkingSettings, ClaimedJob, DatasetId, FileDeletion, FileFailed, FileFilter,
    FileFormat, FileId, FilePurpose, FileReady, FileReference, FileStatus, FileStore, Rechunking,
    StoredChunk, StoredFile,
};
use tessera_webhooks::Event;

use crate::time::utc;
use crate::{
    Backend, Database,
    audit::record_audit,
    database::{with_connection, with_transaction},
    error::query_error,
    schema::{dataset_files, datasets, file_chunks, file_jobs, files, snapshot_files},
    webhooks::record_event,
};

/// `FileStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlFileStore {
    pub(crate) db: Database,
}

impl SqlFileStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = files, treat_none_as_default_value = false)]
pub(crate) struct FileRow {
    id: String,
    organization_id: String,
    created_by: String,
    name: String,
    format: String,
    size: i64,
    sha256: String,
    status: String,
    progress: i32,
    error: Option<String>,
    chunk_count: i32,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
    purpose: Option<String>,
    chunk_max_tokens: Option<i32>,
    chunk_overlap_tokens: Option<i32>,
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = file_chunks, treat_none_as_default_value = false)]
struct ChunkRow {
    file_id: String,
    ordinal: i32,
    text: String,
    token_count: i32,
    page: Option<i32>,
    section: Option<String>,
    char_start: i64,
    char_end: i64,
}

fn to_i32(value: u32) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl From<&StoredFile> for FileRow {
    fn from(file: &StoredFile) -> Self {
        Self {
            id: file.id.to_string(),
            organization_id: file.organization.as_str().to_owned(),
            created_by: file.created_by.clone(),
            name: file.name.clone(),
            format: file.format.as_str().to_owned(),
            size: to_i64(file.size),
            sha256: file.sha256.clone(),
            status: file.status.as_str().to_owned(),
            progress: i32::from(file.progress),
            error: file.error.clone(),
            chunk_count: to_i32(file.chunk_count),
            created_at: file.created_at.naive_utc(),
            updated_at: file.updated_at.naive_utc(),
            purpose: file.purpose.map(|purpose| purpose.as_str().to_owned()),
            chunk_max_tokens: file
                .chunking
                .map(|chunking| to_i32_usize(chunking.max_tokens)),
            chunk_overlap_tokens: file
                .chunking
                .map(|chunking| to_i32_usize(chunking.overlap_tokens)),
        }
    }
}

fn to_i32_usize(value: usize) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

/// The sizes of the chunking columns (both set, or neither).
fn chunking_of(
    max_tokens: Option<i32>,
    overlap_tokens: Option<i32>,
) -> Result<Option<ChunkingSettings>, String> {
    match (max_tokens, overlap_tokens) {
        (None, None) => Ok(None),
        (Some(max_tokens), Some(overlap_tokens)) => Ok(Some(ChunkingSettings {
            max_tokens: usize::try_from(max_tokens)
                .map_err(|e| format!("chunk_max_tokens: {e}"))?,
            overlap_tokens: usize::try_from(overlap_tokens)
                .map_err(|e| format!("chunk_overlap_tokens: {e}"))?,
        })),
        _ => Err("chunk_max_tokens and chunk_overlap_tokens go together".into()),
    }
}

impl TryFrom<FileRow> for StoredFile {
    type Error = DomainError;

    fn try_from(row: FileRow) -> Result<Self, Self::Error> {
        let corrupt = |what: String| DomainError::internal(format!("files row {}: {what}", row.id));
        Ok(StoredFile {
            id: row.id.parse().map_err(|e| corrupt(format!("{e}")))?,
            organization: row
                .organization_id
                .parse()
                .map_err(|e| corrupt(format!("{e}")))?,
            format: FileFormat::parse(&row.format)
                .ok_or_else(|| corrupt(format!("format {}", row.format)))?,
            status: FileStatus::parse(&row.status)
                .ok_or_else(|| corrupt(format!("status {}", row.status)))?,
            size: u64::try_from(row.size).map_err(|e| corrupt(format!("size: {e}")))?,
            progress: u8::try_from(row.progress).map_err(|e| corrupt(format!("progress: {e}")))?,
            chunk_count: u32::try_from(row.chunk_count)
                .map_err(|e| corrupt(format!("chunk_count: {e}")))?,
            purpose: row
                .purpose
                .as_deref()
                .map(|text| {
                    FilePurpose::parse(text).ok_or_else(|| corrupt(format!("purpose {text}")))
                })
                .transpose()?,
            chunking: chunking_of(row.chunk_max_tokens, row.chunk_overlap_tokens)
                .map_err(corrupt)?,
            created_by: row.created_by,
            name: row.name,
            sha256: row.sha256,
            error: row.error,
            created_at: utc(row.created_at),
            updated_at: utc(row.updated_at),
        })
    }
}

impl ChunkRow {
    fn new(file: &FileId, chunk: &StoredChunk) -> Self {
        Self {
            file_id: file.to_string(),
            ordinal: to_i32(chunk.ordinal),
            text: chunk.text.clone(),
            token_count: to_i32(chunk.token_count),
            page: chunk.location.page.map(to_i32),
            section: chunk.location.section.clone(),
            char_start: to_i64(chunk.location.char_start),
            char_end: to_i64(chunk.location.char_end),
        }
    }
}

impl From<ChunkRow> for StoredChunk {
    fn from(row: ChunkRow) -> Self {
        StoredChunk {
            ordinal: u32::try_from(row.ordinal).unwrap_or_default(),
            text: row.text,
            token_count: u32::try_from(row.token_count).unwrap_or_default(),
            location: ChunkLocation {
                page: row.page.and_then(|page| u32::try_from(page).ok()),
                section: row.section,
                char_start: u64::try_from(row.char_start).unwrap_or_default(),
                char_end: u64::try_from(row.char_end).unwrap_or_default(),
            },
        }
    }
}

/// The job a claim took.
#[derive(QueryableByName)]
struct ClaimedRow {
    #[diesel(sql_type = Text)]
    file_id: String,
    #[diesel(sql_type = Integer)]
    attempts: i32,
}

const CLAIM_POSTGRES: &str = "UPDATE file_jobs SET attempts = attempts + 1, leased_by = $1, \
     leased_until = $3 WHERE file_id = (SELECT file_id FROM file_jobs WHERE run_after <= $2 \
     AND (leased_until IS NULL OR leased_until <= $2) ORDER BY run_after, file_id LIMIT 1 \
     FOR UPDATE SKIP LOCKED) RETURNING file_id, attempts";

/// SQLite numbers `$N` parameters by first appearance, so this one uses `?N`.
const CLAIM_SQLITE: &str = "UPDATE file_jobs SET attempts = attempts + 1, leased_by = ?1, \
     leased_until = ?3 WHERE file_id = (SELECT file_id FROM file_jobs WHERE run_after <= ?2 \
     AND (leased_until IS NULL OR leased_until <= ?2) ORDER BY run_after, file_id LIMIT 1) \
     RETURNING file_id, attempts";

/// The job of `id` while `worker` holds a live lease on it.
macro_rules! held_job {
    ($id:expr, $worker:expr) => {
        file_jobs::table
            .filter(file_jobs::file_id.eq($id.as_str()))
            .filter(file_jobs::leased_by.eq($worker))
    };
}

/// Narrows a boxed `files` query to the files of `$purpose` (`FilePurpose::includes`: those
/// without one count as `assistants`).
macro_rules! of_purpose {
    ($query:expr, $purpose:expr) => {{
        let purpose: FilePurpose = $purpose;
        if purpose == FilePurpose::Assistants {
            $query.filter(
                files::purpose
                    .eq(purpose.as_str())
                    .or(files::purpose.is_null()),
            )
        } else {
            $query.filter(files::purpose.eq(purpose.as_str()))
        }
    }};
}

/// The ready files with chunks (their vectors are in the index).
macro_rules! holding_vectors {
    () => {
        files::table
            .filter(files::status.eq(::tessera_knowledge::FileStatus::Ready.as_str()))
            .filter(files::chunk_count.gt(0))
    };
}
pub(crate) use holding_vectors;

/// The webhook event of a file the knowledge domain announced ready.
fn ready_event(ready: &FileReady) -> Event {
    Event::file_ready(
        &ready.organization,
        ready.file.as_str(),
        &ready.name,
        ready.chunk_count,
        ready.at,
    )
}

pub(crate) fn load_file_rows(rows: Vec<FileRow>) -> Result<Vec<StoredFile>, DomainError> {
    rows.into_iter().map(StoredFile::try_from).collect()
}

#[async_trait]
impl FileStore for SqlFileStore {
    async fn insert(
        &self,
        file: &StoredFile,
        queue_job: bool,
        ready: Option<FileReady>,
        audit: &AuditRecord,
    ) -> Result<(), DomainError> {
        if let Some(ready) = &ready {
            ready.must_name(file)?;
        }
        let row = FileRow::from(file);
        let run_after = file.created_at.naive_utc();
        let ready = ready.as_ref().map(ready_event);
        with_transaction!(&self.db, conn => {
            diesel::insert_into(files::table).values(&row).execute(conn).await?;
            if let Some(event) = &ready {
                record_event!(conn, event);
            }
            if queue_job {
                diesel::insert_into(file_jobs::table)
                    .values((
                        file_jobs::file_id.eq(&row.id),
                        file_jobs::attempts.eq(0),
                        file_jobs::run_after.eq(run_after),
                        file_jobs::created_at.eq(run_after),
                    ))
                    .execute(conn)
                    .await?;
            }
            record_audit!(conn, audit);
            Ok(())
        })
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &FileId,
    ) -> Result<Option<StoredFile>, DomainError> {
        let row: Option<FileRow> = with_connection!(&self.db, conn => {
            files::table
                .filter(files::organization_id.eq(organization.as_str()))
                .filter(files::id.eq(id.as_str()))
                .select(FileRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(StoredFile::try_from).transpose()
    }

    async fn list(
        &self,
        filter: &FileFilter,
        page: &PageRequest<FileId>,
    ) -> Result<Vec<StoredFile>, DomainError> {
        let rows: Vec<FileRow> = with_connection!(&self.db, conn => {
            let mut query = files::table
                .filter(files::organization_id.eq(filter.organization.as_str()))
                .into_boxed();
            if let Some(status) = filter.status {
                query = query.filter(files::status.eq(status.as_str()));
            }
            if let Some(purpose) = filter.purpose {
                query = of_purpose!(query, purpose);
            }
            if let Some(after) = &page.after {
                query = query.filter(files::id.lt(after.as_str().to_owned()));
            }
            query
                .order(files::id.desc())
                .limit(page.limit.overfetch())
                .select(FileRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        load_file_rows(rows)
    }

    async fn count(&self, filter: &FileFilter) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            let mut query = files::table
                .filter(files::organization_id.eq(filter.organization.as_str()))
                .into_boxed();
            if let Some(status) = filter.status {
                query = query.filter(files::status.eq(status.as_str()));
            }
            if let Some(purpose) = filter.purpose {
                query = of_purpose!(query, purpose);
            }
            query.count().get_result(conn).await.map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn set_purpose(
        &self,
        organization: &OrganizationId,
        id: &FileId,
        purpose: FilePurpose,
    ) -> Result<bool, DomainError> {
        with_transaction!(&self.db, conn => {
            let of_organization = files::table
                .filter(files::organization_id.eq(organization.as_str()))
                .filter(files::id.eq(id.as_str()));
            let changed = diesel::update(of_organization)
                .set(files::purpose.eq(purpose.as_str()))
                .execute(conn)
                .await?;
            if changed > 0 && !purpose.is_processed() {
                diesel::delete(file_jobs::table.filter(file_jobs::file_id.eq(id.as_str())))
                    .execute(conn)
                    .await?;
                diesel::update(
                    of_organization.filter(files::status.eq(FileStatus::Processing.as_str())),
                )
                .set((
                    files::status.eq(FileStatus::Ready.as_str()),
                    files::progress.eq(100),
                ))
                .execute(conn)
                .await?;
            }
            Ok(changed > 0)
        })
    }

    async fn set_chunking(
        &self,
        organization: &OrganizationId,
        id: &FileId,
        dataset: &DatasetId,
        chunking: ChunkingSettings,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<Option<Rechunking>, DomainError> {
        let at = at.naive_utc();
        let decided: Option<Result<Rechunking, DomainError>> = with_transaction!(&self.db, conn => {
            let of_organization = files::table
                .filter(files::organization_id.eq(organization.as_str()))
                .filter(files::id.eq(id.as_str()));
            let row: Option<FileRow> = of_organization
                .select(FileRow::as_select())
                .first(conn)
                .await
                .optional()?;
            let Some(row) = row else {
                return Ok(None);
            };
            let file = match StoredFile::try_from(row) {
                Ok(file) => file,
                Err(error) => return Ok(Some(Err(error))),
            };
            let elsewhere: i64 = dataset_files::table
                .inner_join(datasets::table)
                .filter(datasets::organization_id.eq(organization.as_str()))
                .filter(dataset_files::file_id.eq(id.as_str()))
                .filter(dataset_files::dataset_id.ne(dataset.as_str()))
                .count()
                .get_result(conn)
                .await?;
            let decided = Rechunking::decide(&file, chunking, elsewhere > 0);
            if !decided.changes() {
                return Ok(Some(Ok(decided)));
            }
            diesel::update(of_organization)
                .set((
                    files::chunk_max_tokens.eq(to_i32_usize(chunking.max_tokens)),
                    files::chunk_overlap_tokens.eq(to_i32_usize(chunking.overlap_tokens)),
                ))
                .execute(conn)
                .await?;
            if decided == Rechunking::Requeued {
                diesel::update(of_organization)
                    .set((
                        files::status.eq(FileStatus::Processing.as_str()),
                        files::progress.eq(0),
                        files::updated_at.eq(at),
                    ))
                    .execute(conn)
                    .await?;
                diesel::insert_into(file_jobs::table)
                    .values((
                        file_jobs::file_id.eq(id.as_str()),
                        file_jobs::attempts.eq(0),
                        file_jobs::run_after.eq(at),
                        file_jobs::created_at.eq(at),
                    ))
                    .execute(conn)
                    .await?;
            } else {
                // A worker cutting it now loses its lease; the job runs again once that lease
                // would have ended, when the worker has stopped writing.
                let leased: Option<(NaiveDateTime, Option<NaiveDateTime>)> = file_jobs::table
                    .filter(file_jobs::file_id.eq(id.as_str()))
                    .filter(file_jobs::leased_by.is_not_null())
                    .select((file_jobs::run_after, file_jobs::leased_until))
                    .first(conn)
                    .await
                    .optional()?;
                if let Some((run_after, leased_until)) = leased {
                    diesel::update(file_jobs::table.filter(file_jobs::file_id.eq(id.as_str())))
                        .set((
                            file_jobs::run_after.eq(leased_until.map_or(run_after, |until| until.max(run_after))),
                            file_jobs::leased_by.eq(None::<String>),
                            file_jobs::leased_until.eq(None::<NaiveDateTime>),
                        ))
                        .execute(conn)
                        .await?;
                }
            }
            record_audit!(conn, audit);
            Ok(Some(Ok(decided)))
        })?;
        decided.transpose()
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &FileId,
        audit: &AuditRecord,
    ) -> Result<FileDeletion, DomainError> {
        let outcome: Result<FileDeletion, String> = with_transaction!(&self.db, conn => {
            let sha256: Option<String> = files::table
                .filter(files::organization_id.eq(organization.as_str()))
                .filter(files::id.eq(id.as_str()))
                .select(files::sha256)
                .first(conn)
                .await
                .optional()?;
            let Some(sha256) = sha256 else {
                return Ok(Ok(FileDeletion::NotFound));
            };
            let current: Vec<(String, String)> = dataset_files::table
                .inner_join(datasets::table)
                .filter(dataset_files::file_id.eq(id.as_str()))
                .order(datasets::id.asc())
                .select((datasets::id, datasets::name))
                .load(conn)
                .await?;
            let frozen: Vec<(String, String, i64)> = snapshot_files::table
                .inner_join(datasets::table.on(datasets::id.eq(snapshot_files::dataset_id)))
                .filter(snapshot_files::file_id.eq(id.as_str()))
                .order((datasets::id.asc(), snapshot_files::version.asc()))
                .select((datasets::id, datasets::name, snapshot_files::version))
                .load(conn)
                .await?;
            if !current.is_empty() || !frozen.is_empty() {
                let mut references = Vec::new();
                for (dataset, name, version) in current
                    .into_iter()
                    .map(|(d, n)| (d, n, None))
                    .chain(frozen.into_iter().map(|(d, n, v)| (d, n, Some(v))))
                {
                    let dataset_id: DatasetId = match dataset.parse() {
                        Ok(dataset_id) => dataset_id,
                        Err(error) => return Ok(Err(format!("datasets row {dataset}: {error}"))),
                    };
                    references.push(FileReference {
                        dataset_id,
                        dataset_name: name,
                        snapshot_version: version.and_then(|v| u64::try_from(v).ok()),
                    });
                }
                return Ok(Ok(FileDeletion::InUse(references)));
            }
            diesel::delete(files::table.filter(files::id.eq(id.as_str())))
                .execute(conn)
                .await?;
            let sharing: i64 = files::table
                .filter(files::sha256.eq(&sha256))
                .count()
                .get_result(conn)
                .await?;
            record_audit!(conn, audit);
            Ok(Ok(FileDeletion::Deleted {
                orphaned_blob: (sharing == 0).then_some(sha256),
            }))
        })?;
        outcome.map_err(DomainError::internal)
    }

    async fn datasets_of(
        &self,
        organization: &OrganizationId,
        id: &FileId,
    ) -> Result<Vec<DatasetId>, DomainError> {
        let ids: Vec<String> = with_connection!(&self.db, conn => {
            dataset_files::table
                .inner_join(datasets::table)
                .filter(datasets::organization_id.eq(organization.as_str()))
                .filter(dataset_files::file_id.eq(id.as_str()))
                .order(datasets::id.asc())
                .select(datasets::id)
                .load(conn)
                .await
                .map_err(query_error)?
        });
        ids.iter()
            .map(|id| {
                id.parse()
                    .map_err(|e| DomainError::internal(format!("datasets row {id}: {e}")))
            })
            .collect()
    }

    async fn chunks(
        &self,
        organization: &OrganizationId,
        id: &FileId,
    ) -> Result<Vec<StoredChunk>, DomainError> {
        let rows: Vec<ChunkRow> = with_connection!(&self.db, conn => {
            file_chunks::table
                .inner_join(files::table)
                .filter(files::organization_id.eq(organization.as_str()))
                .filter(file_chunks::file_id.eq(id.as_str()))
                .order(file_chunks::ordinal.asc())
                .select(ChunkRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        Ok(rows.into_iter().map(StoredChunk::from).collect())
    }

    async fn claim_job(
        &self,
        worker: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<ClaimedJob>, DomainError> {
        let sql = match self.db.backend() {
            Backend::Postgres => CLAIM_POSTGRES,
            Backend::Sqlite => CLAIM_SQLITE,
        };
        let (now, lease_until) = (now.naive_utc(), lease_until.naive_utc());
        let claimed: Option<(ClaimedRow, FileRow)> = with_connection!(&self.db, conn => {
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
                Some(claimed) => {
                    let file = files::table
                        .filter(files::id.eq(&claimed.file_id))
                        .select(FileRow::as_select())
                        .first(conn)
                        .await
                        .map_err(query_error)?;
                    Some((claimed, file))
                }
            }
        });
        claimed
            .map(|(claimed, file)| {
                Ok(ClaimedJob {
                    file: StoredFile::try_from(file)?,
                    attempt: u32::try_from(claimed.attempts).unwrap_or(1),
                })
            })
            .transpose()
    }

    async fn report_progress(
        &self,
        id: &FileId,
        worker: &str,
        progress: u8,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        let (now, lease_until) = (now.naive_utc(), lease_until.naive_utc());
        with_transaction!(&self.db, conn => {
            let held = diesel::update(held_job!(id, worker))
                .set(file_jobs::leased_until.eq(lease_until))
                .execute(conn)
                .await?;
            if held == 0 {
                return Ok(false);
            }
            diesel::update(files::table.filter(files::id.eq(id.as_str())))
                .set((
                    files::progress.eq(i32::from(progress.min(100))),
                    files::updated_at.eq(now),
                ))
                .execute(conn)
                .await?;
            Ok(true)
        })
    }

    async fn complete_job(
        &self,
        worker: &str,
        chunks: &[StoredChunk],
        embedding_model: &str,
        generation: u32,
        ready: &FileReady,
    ) -> Result<bool, DomainError> {
        let id = &ready.file;
        let event = ready_event(ready);
        let rows: Vec<ChunkRow> = chunks
            .iter()
            .map(|chunk| ChunkRow::new(id, chunk))
            .collect();
        let count = i32::try_from(rows.len()).unwrap_or(i32::MAX);
        let now = ready.at.naive_utc();
        with_transaction!(&self.db, conn => {
            let held = diesel::delete(held_job!(id, worker)).execute(conn).await?;
            if held == 0 {
                return Ok(false);
            }
            // A retried job may have stored nothing before, but never leaves stale rows.
            diesel::delete(file_chunks::table.filter(file_chunks::file_id.eq(id.as_str())))
                .execute(conn)
                .await?;
            for row in &rows {
                diesel::insert_into(file_chunks::table)
                    .values(row)
                    .execute(conn)
                    .await?;
            }
            diesel::update(files::table.filter(files::id.eq(id.as_str())))
                .set((
                    files::status.eq(FileStatus::Ready.as_str()),
                    files::progress.eq(100),
                    files::error.eq(None::<String>),
                    files::chunk_count.eq(count),
                    files::updated_at.eq(now),
                    files::embedding_model.eq(embedding_model),
                    files::index_generation.eq(i32::try_from(generation).unwrap_or(i32::MAX)),
                ))
                .execute(conn)
                .await?;
            record_event!(conn, &event);
            Ok(true)
        })
    }

    async fn embedding_models(&self) -> Result<Vec<(Option<String>, u64)>, DomainError> {
        let rows: Vec<(Option<String>, i64)> = with_connection!(&self.db, conn => {
            holding_vectors!()
                .group_by(files::embedding_model)
                .select((files::embedding_model, diesel::dsl::count_star()))
                .order_by(files::embedding_model)
                .load(conn)
                .await
                .map_err(query_error)?
        });
        Ok(rows
            .into_iter()
            .map(|(model, count)| (model, u64::try_from(count).unwrap_or(0)))
            .collect())
    }

    async fn adopt_embedding_model(&self, model: &str) -> Result<u64, DomainError> {
        let adopted: usize = with_connection!(&self.db, conn => {
            diesel::update(holding_vectors!().filter(files::embedding_model.is_null()))
                .set(files::embedding_model.eq(model))
                .execute(conn)
                .await
                .map_err(query_error)?
        });
        Ok(adopted as u64)
    }

    async fn retry_job(
        &self,
        id: &FileId,
        worker: &str,
        error: &str,
        run_after: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        let run_after = run_after.naive_utc();
        let changed: usize = with_connection!(&self.db, conn => {
            diesel::update(held_job!(id, worker))
                .set((
                    file_jobs::run_after.eq(run_after),
                    file_jobs::leased_by.eq(None::<String>),
                    file_jobs::leased_until.eq(None::<NaiveDateTime>),
                    file_jobs::last_error.eq(error),
                ))
                .execute(conn)
                .await
                .map_err(query_error)?
        });
        Ok(changed > 0)
    }

    async fn fail_job(&self, worker: &str, failed: &FileFailed) -> Result<bool, DomainError> {
        let (id, error) = (&failed.file, failed.error.as_str());
        let event = Event::file_failed(
            &failed.organization,
            id.as_str(),
            &failed.name,
            error,
            failed.at,
        );
        let now = failed.at.naive_utc();
        with_transaction!(&self.db, conn => {
            let held = diesel::delete(held_job!(id, worker)).execute(conn).await?;
            if held == 0 {
                return Ok(false);
            }
            diesel::delete(file_chunks::table.filter(file_chunks::file_id.eq(id.as_str())))
                .execute(conn)
                .await?;
            diesel::update(files::table.filter(files::id.eq(id.as_str())))
                .set((
                    files::status.eq(FileStatus::Failed.as_str()),
                    files::progress.eq(100),
                    files::error.eq(error),
                    files::chunk_count.eq(0),
                    files::updated_at.eq(now),
                ))
                .execute(conn)
                .await?;
            record_event!(conn, &event);
            Ok(true)
        })
    }
}
