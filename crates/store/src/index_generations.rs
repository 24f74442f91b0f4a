//! `GenerationStore` on PostgreSQL or SQLite, over the files' own tables: the generations
//! in `index_generations`, and the generation each ready file's vectors reached in
//! `files.index_generation`, so that a file completed, deleted or re-embedded changes it in
//! the same transaction. Activation re-counts the files behind inside its transaction.

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use tessera_kernel::DomainError;
use tessera_knowledge::{
    FileId, GenerationProgress, GenerationState, GenerationStore, IndexGeneration, StoredFile,
};

use crate::time::utc;
use crate::{
    SqlFileStore,
    database::{with_connection, with_transaction},
    error::{Rollback, query_error},
    files::{FileRow, holding_vectors},
    schema::{files, index_generations},
};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = index_generations, treat_none_as_default_value = false)]
struct GenerationRow {
    generation: i32,
    embedding_model: String,
    state: String,
    leased_by: Option<String>,
    leased_until: Option<NaiveDateTime>,
    created_at: NaiveDateTime,
    activated_at: Option<NaiveDateTime>,
}

fn column(value: u32) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

impl TryFrom<GenerationRow> for IndexGeneration {
    type Error = DomainError;

    fn try_from(row: GenerationRow) -> Result<Self, Self::Error> {
        let state = GenerationState::parse(&row.state).ok_or_else(|| {
            DomainError::internal(format!(
                "index_generations row {}: state {:?}",
                row.generation, row.state
            ))
        })?;
        Ok(IndexGeneration {
            number: u32::try_from(row.generation).unwrap_or(0),
            embedding_model: row.embedding_model,
            state,
            created_at: utc(row.created_at),
            activated_at: row.activated_at.map(utc),
        })
    }
}

fn conflict<T>(message: String) -> Rollback<T> {
    Rollback::Fail(DomainError::Conflict {
        code: "generation_conflict",
        message,
    })
}

/// The ready files with chunks whose vectors have not reached generation `$number`.
macro_rules! behind {
    ($number:expr) => {
        holding_vectors!().filter(files::index_generation.lt($number))
    };
}

#[async_trait]
impl GenerationStore for SqlFileStore {
    async fn generations(&self) -> Result<Vec<IndexGeneration>, DomainError> {
        let rows: Vec<GenerationRow> = with_connection!(&self.db, conn => {
            index_generations::table
                .order_by(index_generations::generation)
                .select(GenerationRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(IndexGeneration::try_from).collect()
    }

    async fn begin(
        &self,
        model: &str,
        in_use: &str,
        at: DateTime<Utc>,
    ) -> Result<IndexGeneration, DomainError> {
        let now = at.naive_utc();
        let row = with_transaction!(&self.db, conn => {
            let mut rows: Vec<GenerationRow> = index_generations::table
                .order_by(index_generations::generation)
                .select(GenerationRow::as_select())
                .load(conn)
                .await?;
            if rows.is_empty() {
                let first = GenerationRow {
                    generation: 0,
                    embedding_model: in_use.to_owned(),
                    state: GenerationState::Active.as_str().to_owned(),
                    leased_by: None,
                    leased_until: None,
                    created_at: now,
                    activated_at: Some(now),
                };
                diesel::insert_into(index_generations::table)
                    .values(&first)
                    .execute(conn)
                    .await?;
                rows.push(first);
            }
            // The one building decides first: it is what stands in the way.
            let mut ordered: Vec<&GenerationRow> = rows.iter().collect();
            ordered.sort_by_key(|row| row.state != GenerationState::Building.as_str());
            for row in ordered {
                let same = row.embedding_model == model;
                match GenerationState::parse(&row.state) {
                    Some(GenerationState::Building) if same => {
                        return Ok(row.clone());
                    }
                    Some(GenerationState::Building) => {
                        return Err(conflict(format!(
                            "generation {} of {} is being built",
                            row.generation, row.embedding_model
                        )));
                    }
                    Some(GenerationState::Active) if same => {
                        return Err(conflict(format!(
                            "{model} made the vectors in use (generation {})",
                            row.generation
                        )));
                    }
                    _ => {}
                }
            }
            let next = GenerationRow {
                generation: rows.last().map_or(0, |last| last.generation + 1),
                embedding_model: model.to_owned(),
                state: GenerationState::Building.as_str().to_owned(),
                leased_by: None,
                leased_until: None,
                created_at: now,
                activated_at: None,
            };
            diesel::insert_into(index_generations::table)
                .values(&next)
                .execute(conn)
                .await?;
            Ok(next)
        })?;
        IndexGeneration::try_from(row)
    }

    async fn claim(
        &self,
        number: u32,
        worker: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        let (now, lease_until) = (now.naive_utc(), lease_until.naive_utc());
        let claimed: usize = with_connection!(&self.db, conn => {
            diesel::update(
                index_generations::table
                    .filter(index_generations::generation.eq(column(number)))
                    .filter(
                        index_generations::leased_until
                            .is_null()
                            .or(index_generations::leased_until.le(now))
                            .or(index_generations::leased_by.eq(worker)),
                    ),
            )
            .set((
                index_generations::leased_by.eq(worker),
                index_generations::leased_until.eq(lease_until),
            ))
            .execute(conn)
            .await
            .map_err(query_error)?
        });
        Ok(claimed > 0)
    }

    async fn files_behind(
        &self,
        number: u32,
        limit: usize,
    ) -> Result<Vec<StoredFile>, DomainError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows: Vec<FileRow> = with_connection!(&self.db, conn => {
            behind!(column(number))
                .order_by(files::id)
                .limit(limit)
                .select(FileRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(StoredFile::try_from).collect()
    }

    async fn mark_indexed(&self, file: &FileId, number: u32) -> Result<bool, DomainError> {
        let marked: usize = with_connection!(&self.db, conn => {
            diesel::update(
                holding_vectors!()
                    .filter(files::id.eq(file.as_str()))
                    .filter(files::index_generation.lt(column(number))),
            )
            .set(files::index_generation.eq(column(number)))
            .execute(conn)
            .await
            .map_err(query_error)?
        });
        if marked > 0 {
            return Ok(true);
        }
        // Marked before (a repeated mark) still counts as in it, if the file is there.
        let there: i64 = with_connection!(&self.db, conn => {
            holding_vectors!()
                .filter(files::id.eq(file.as_str()))
                .count()
                .get_result(conn)
                .await
                .map_err(query_error)?
        });
        Ok(there > 0)
    }

    async fn progress(&self, number: u32) -> Result<GenerationProgress, DomainError> {
        let (total, behind): (i64, i64) = with_connection!(&self.db, conn => {
            let total: i64 = holding_vectors!()
                .count()
                .get_result(conn)
                .await
                .map_err(query_error)?;
            let behind: i64 = behind!(column(number))
                .count()
                .get_result(conn)
                .await
                .map_err(query_error)?;
            (total, behind)
        });
        let total = u64::try_from(total).unwrap_or(0);
        let behind = u64::try_from(behind).unwrap_or(0);
        Ok(GenerationProgress {
            done: total.saturating_sub(behind),
            total,
        })
    }

    async fn activate(&self, number: u32, at: DateTime<Utc>) -> Result<bool, DomainError> {
        let now = at.naive_utc();
        let number = column(number);
        with_transaction!(&self.db, conn => {
            let building: Option<String> = index_generations::table
                .filter(index_generations::generation.eq(number))
                .filter(index_generations::state.eq(GenerationState::Building.as_str()))
                .select(index_generations::embedding_model)
                .first(conn)
                .await
                .optional()?;
            let Some(model) = building else {
                return Err(conflict(format!("generation {number} is not being built")));
            };
            let behind: i64 = behind!(number).count().get_result(conn).await?;
            if behind > 0 {
                return Ok(false);
            }
            diesel::update(
                index_generations::table
                    .filter(index_generations::state.eq(GenerationState::Active.as_str())),
            )
            .set(index_generations::state.eq(GenerationState::Retired.as_str()))
            .execute(conn)
            .await?;
            diesel::update(index_generations::table.filter(index_generations::generation.eq(number)))
                .set((
                    index_generations::state.eq(GenerationState::Active.as_str()),
                    index_generations::activated_at.eq(Some(now)),
                ))
                .execute(conn)
                .await?;
            diesel::update(holding_vectors!())
                .set(files::embedding_model.eq(model))
                .execute(conn)
                .await?;
            Ok(true)
        })
    }
}
