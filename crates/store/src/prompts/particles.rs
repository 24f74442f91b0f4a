//! `ParticleStore` for `SqlPromptStore`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::{
    dsl,
    prelude::*,
    result::{DatabaseErrorKind, Error as DieselError},
};
use diesel_async::RunQueryDsl;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};
use tessera_prompts::{
    Category, Owner, Particle, ParticleDeletion, ParticleId, ParticleStore, ParticleVersion,
    ParticleVersionId, SystemPromptId,
};

use super::{
    SqlPromptStore,
    locks::{LockMode, LockParticles},
    owned_by,
    rows::{self, ParticleRow, VersionRow, int_column},
    visible_to,
};
use crate::{
    audit::record_audit,
    database::{with_connection, with_transaction},
    error::{Rollback, query_error},
    schema::{particle_versions, particles, system_prompt_particles},
};

type LatestVersion = dsl::And<
    dsl::Eq<particle_versions::particle_id, particles::id>,
    dsl::Eq<particle_versions::number, particles::latest_version>,
>;

/// Joins a particle to its latest version.
fn latest_version() -> dsl::On<particle_versions::table, LatestVersion> {
    particle_versions::table.on(particle_versions::particle_id
        .eq(particles::id)
        .and(particle_versions::number.eq(particles::latest_version)))
}

fn particles_from(rows: Vec<(ParticleRow, VersionRow)>) -> Result<Vec<Particle>, DomainError> {
    rows.into_iter()
        .map(|(row, latest)| rows::particle(row, latest))
        .collect()
}

/// A version number as a column value; `None` when no row can have it.
fn number_column(number: u32) -> Option<i32> {
    i32::try_from(number).ok()
}

#[async_trait]
impl ParticleStore for SqlPromptStore {
    async fn insert(&self, particle: &Particle, audit: &[AuditRecord]) -> Result<(), DomainError> {
        let row = ParticleRow::try_from(particle)?;
        let latest = VersionRow::try_from(&particle.latest)?;
        with_transaction!(&self.db, conn => {
            diesel::insert_into(particles::table).values(&row).execute(conn).await?;
            diesel::insert_into(particle_versions::table).values(&latest).execute(conn).await?;
            for record in audit {
                record_audit!(conn, record);
            }
            Ok(())
        })
    }

    async fn get(
        &self,
        viewer: &OrganizationId,
        id: &ParticleId,
    ) -> Result<Option<Particle>, DomainError> {
        let row: Option<(ParticleRow, VersionRow)> = with_connection!(&self.db, conn => {
            particles::table
                .inner_join(latest_version())
                .filter(particles::id.eq(id.as_str()))
                .filter(particles::deleted_at.is_null())
                .filter(visible_to!(particles::organization_id, viewer))
                .select((ParticleRow::as_select(), VersionRow::as_select()))
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(|(row, latest)| rows::particle(row, latest))
            .transpose()
    }

    async fn get_system(&self, slug: &str) -> Result<Option<Particle>, DomainError> {
        let row: Option<(ParticleRow, VersionRow)> = with_connection!(&self.db, conn => {
            particles::table
                .inner_join(latest_version())
                .filter(particles::organization_id.is_null())
                .filter(particles::slug.eq(slug))
                .filter(particles::deleted_at.is_null())
                .select((ParticleRow::as_select(), VersionRow::as_select()))
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(|(row, latest)| rows::particle(row, latest))
            .transpose()
    }

    async fn list(
        &self,
        owner: &Owner,
        category: Option<Category>,
        page: &PageRequest<ParticleId>,
    ) -> Result<Vec<Particle>, DomainError> {
        let after = page.after.as_ref().map_or("", |id| id.as_str());
        let rows: Vec<(ParticleRow, VersionRow)> = with_connection!(&self.db, conn => {
            let query = particles::table
                .inner_join(latest_version())
                .filter(particles::deleted_at.is_null())
                .filter(particles::id.gt(after))
                .into_boxed();
            let mut query = owned_by!(query, particles::organization_id, owner);
            if let Some(category) = category {
                query = query.filter(particles::category.eq(category.as_str()));
            }
            query
                .order(particles::id.asc())
                .limit(page.limit.overfetch())
                .select((ParticleRow::as_select(), VersionRow::as_select()))
                .load(conn)
                .await
                .map_err(query_error)?
        });
        particles_from(rows)
    }

    async fn count(&self, owner: &Owner, category: Option<Category>) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            let query = particles::table.filter(particles::deleted_at.is_null()).into_boxed();
            let mut query = owned_by!(query, particles::organization_id, owner);
            if let Some(category) = category {
                query = query.filter(particles::category.eq(category.as_str()));
            }
            query.count().get_result(conn).await.map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn add_version(
        &self,
        owner: &Owner,
        version: &ParticleVersion,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        // The latest must be `number - 1`, which no row has when it is out of range.
        let Some(previous) = version.number.checked_sub(1).and_then(number_column) else {
            return Ok(false);
        };
        let number = int_column(version.number, "particle version number")?;
        let row = VersionRow::try_from(version)?;
        with_transaction!(&self.db, conn => {
            // Moving `latest_version` first locks the particle's row: a concurrent writer
            // of the same number waits, then finds the latest moved on and changes nothing.
            let bump = diesel::update(particles::table)
                .set((
                    particles::latest_version.eq(number),
                    particles::updated_at.eq(row.created_at),
                ))
                .filter(particles::id.eq(&row.particle_id))
                .filter(particles::latest_version.eq(previous))
                .filter(particles::deleted_at.is_null())
                .into_boxed();
            let bumped = owned_by!(bump, particles::organization_id, owner)
                .execute(conn)
                .await?;
            if bumped == 0 {
                return Ok(false);
            }
            match diesel::insert_into(particle_versions::table).values(&row).execute(conn).await {
                Ok(_) => {}
                // The number was taken after all: another writer won.
                Err(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => {
                    return Err(Rollback::Return(false));
                }
                Err(other) => return Err(other.into()),
            }            for record in audit {
                record_audit!(conn, record);
            }
            Ok(true)
        })
    }

    async fn update_details(
        &self,
        owner: &Owner,
        id: &ParticleId,
        name: &str,
        description: &str,
        at: DateTime<Utc>,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        let at = at.naive_utc();
        with_transaction!(&self.db, conn => {
            let update = diesel::update(particles::table)
                .set((
                    particles::name.eq(name),
                    particles::description.eq(description),
                    particles::updated_at.eq(at),
                ))
                .filter(particles::id.eq(id.as_str()))
                .filter(particles::deleted_at.is_null())
                .into_boxed();
            let changed = owned_by!(update, particles::organization_id, owner)
                .execute(conn)
                .await?;
            if changed > 0 {
                for record in audit {
                    record_audit!(conn, record);
                }
            }
            Ok(changed > 0)
        })
    }

    async fn delete(
        &self,
        owner: &Owner,
        id: &ParticleId,
        at: DateTime<Utc>,
        audit: &[AuditRecord],
    ) -> Result<ParticleDeletion, DomainError> {
        let at = at.naive_utc();
        let ids = [id.to_string()];
        let organization = owner.organization().map(|org| org.as_str());
        with_transaction!(&self.db, conn => {
            let locked = conn.lock_particles(&ids, LockMode::Update).await?;
            let found = locked.iter().any(|row| {
                row.deleted_at.is_none() && row.organization_id.as_deref() == organization
            });
            if !found {
                return Ok(ParticleDeletion::NotFound);
            }
            let users: Vec<String> = system_prompt_particles::table
                .filter(system_prompt_particles::particle_id.eq(id.as_str()))
                .filter(system_prompt_particles::valid_to.is_null())
                .select(system_prompt_particles::system_prompt_id)
                .distinct()
                .load(conn)
                .await?;
            if !users.is_empty() {
                let mut users = users
                    .iter()
                    .map(|user| user.parse::<SystemPromptId>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| {
                        Rollback::Fail(DomainError::internal(format!(
                            "system_prompt_particles row of particle {id}: {e}"
                        )))
                    })?;
                users.sort();
                users.dedup();
                return Ok(ParticleDeletion::Referenced(users));
            }
            diesel::update(particles::table.find(id.as_str()))
                .set(particles::deleted_at.eq(Some(at)))
                .execute(conn)
                .await?;
            for record in audit {
                record_audit!(conn, record);
            }
            Ok(ParticleDeletion::Deleted)
        })
    }

    async fn versions(
        &self,
        viewer: &OrganizationId,
        id: &ParticleId,
        page: &PageRequest<u32>,
    ) -> Result<Vec<ParticleVersion>, DomainError> {
        let after = match page.after {
            None => 0,
            Some(after) => match number_column(after) {
                Some(after) => after,
                None => return Ok(Vec::new()),
            },
        };
        let rows: Vec<VersionRow> = with_connection!(&self.db, conn => {
            particle_versions::table
                .inner_join(particles::table)
                .filter(particles::id.eq(id.as_str()))
                .filter(particles::deleted_at.is_null())
                .filter(visible_to!(particles::organization_id, viewer))
                .filter(particle_versions::number.gt(after))
                .order(particle_versions::number.asc())
                .limit(page.limit.overfetch())
                .select(VersionRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(ParticleVersion::try_from).collect()
    }

    async fn version(
        &self,
        viewer: &OrganizationId,
        id: &ParticleId,
        number: u32,
    ) -> Result<Option<ParticleVersion>, DomainError> {
        let Some(number) = number_column(number) else {
            return Ok(None);
        };
        let row: Option<VersionRow> = with_connection!(&self.db, conn => {
            particle_versions::table
                .inner_join(particles::table)
                .filter(particles::id.eq(id.as_str()))
                .filter(particles::deleted_at.is_null())
                .filter(visible_to!(particles::organization_id, viewer))
                .filter(particle_versions::number.eq(number))
                .select(VersionRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(ParticleVersion::try_from).transpose()
    }

    async fn version_by_id(
        &self,
        viewer: &OrganizationId,
        id: &ParticleVersionId,
    ) -> Result<Option<ParticleVersion>, DomainError> {
        let row: Option<VersionRow> = with_connection!(&self.db, conn => {
            particle_versions::table
                .inner_join(particles::table)
                .filter(particle_versions::id.eq(id.as_str()))
                .filter(particles::deleted_at.is_null())
                .filter(visible_to!(particles::organization_id, viewer))
                .select(VersionRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(ParticleVersion::try_from).transpose()
    }
}
