//! `SystemPromptStore` for `SqlPromptStore`.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};
use tessera_prompts::{
    Association, AssociationId, Owner, ParticleVersion, Pin, ResolvedAssociation, SystemPrompt,
    SystemPromptId, SystemPromptStore,
};

use super::{
    SqlPromptStore, check_placeable,
    locks::{LockMode, LockParticles},
    owned_by,
    rows::{self, PlacementRow, PromptRow, VersionRow, int_column, pin_columns},
    visible_to,
};
use crate::{
    audit::record_audit,
    database::{with_connection, with_transaction},
    error::{Rollback, query_error},
    schema::{particle_versions, particles, system_prompt_particles, system_prompts},
};

/// Sets the `updated_at` of one of the owner's prompts, inside a transaction; evaluates to
/// whether the prompt was found. On PostgreSQL this also locks the prompt's row, so changes
/// of one prompt's placements run one after another.
macro_rules! touch_prompt {
    ($conn:expr, $owner:expr, $prompt:expr, $at:expr) => {{
        let touch = diesel::update(system_prompts::table)
            .set(system_prompts::updated_at.eq($at))
            .filter(system_prompts::id.eq($prompt))
            .into_boxed();
        owned_by!(touch, system_prompts::organization_id, $owner)
            .execute($conn)
            .await?
            > 0
    }};
}

/// A placement in effect, with its particle's current name and category.
type PlacementWithParticle = (PlacementRow, String, String);

#[async_trait]
impl SystemPromptStore for SqlPromptStore {
    async fn insert(
        &self,
        prompt: &SystemPrompt,
        associations: &[Association],
        audit: &[AuditRecord],
    ) -> Result<(), DomainError> {
        let row = PromptRow::from(prompt);
        let placements = associations
            .iter()
            .map(PlacementRow::try_from)
            .collect::<Result<Vec<_>, _>>()?;
        let mut particle_ids: Vec<String> =
            placements.iter().map(|p| p.particle_id.clone()).collect();
        particle_ids.sort();
        particle_ids.dedup();
        with_transaction!(&self.db, conn => {
            diesel::insert_into(system_prompts::table).values(&row).execute(conn).await?;
            if !placements.is_empty() {
                let locked = conn.lock_particles(&particle_ids, LockMode::Share).await?;
                check_placeable(&prompt.owner, &particle_ids, &locked)?;
                // One statement per row: diesel-async's SQLite connection has no batch insert.
                for placement in &placements {
                    diesel::insert_into(system_prompt_particles::table)
                        .values(placement)
                        .execute(conn)
                        .await?;
                }
            }
            for record in audit {
                record_audit!(conn, record);
            }
            Ok(())
        })
    }

    async fn get(
        &self,
        viewer: &OrganizationId,
        id: &SystemPromptId,
    ) -> Result<Option<SystemPrompt>, DomainError> {
        let row: Option<PromptRow> = with_connection!(&self.db, conn => {
            system_prompts::table
                .filter(system_prompts::id.eq(id.as_str()))
                .filter(visible_to!(system_prompts::organization_id, viewer))
                .select(PromptRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(SystemPrompt::try_from).transpose()
    }

    async fn get_system(&self, slug: &str) -> Result<Option<SystemPrompt>, DomainError> {
        let row: Option<PromptRow> = with_connection!(&self.db, conn => {
            system_prompts::table
                .filter(system_prompts::organization_id.is_null())
                .filter(system_prompts::slug.eq(slug))
                .select(PromptRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(SystemPrompt::try_from).transpose()
    }

    async fn list(
        &self,
        owner: &Owner,
        page: &PageRequest<SystemPromptId>,
    ) -> Result<Vec<SystemPrompt>, DomainError> {
        let after = page.after.as_ref().map_or("", |id| id.as_str());
        let rows: Vec<PromptRow> = with_connection!(&self.db, conn => {
            let query = system_prompts::table
                .filter(system_prompts::id.gt(after))
                .into_boxed();
            owned_by!(query, system_prompts::organization_id, owner)
                .order(system_prompts::id.asc())
                .limit(page.limit.overfetch())
                .select(PromptRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(SystemPrompt::try_from).collect()
    }

    async fn count(&self, owner: &Owner) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            let query = system_prompts::table.into_boxed();
            owned_by!(query, system_prompts::organization_id, owner)
                .count()
                .get_result(conn)
                .await
                .map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn update(
        &self,
        owner: &Owner,
        prompt: &SystemPrompt,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        let updated_at = prompt.updated_at.naive_utc();
        with_transaction!(&self.db, conn => {
            let update = diesel::update(system_prompts::table)
                .set((
                    system_prompts::name.eq(&prompt.name),
                    system_prompts::description.eq(&prompt.description),
                    system_prompts::enabled.eq(prompt.enabled),
                    system_prompts::updated_at.eq(updated_at),
                ))
                .filter(system_prompts::id.eq(prompt.id.as_str()))
                .into_boxed();
            let changed = owned_by!(update, system_prompts::organization_id, owner)
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
        id: &SystemPromptId,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        // Placements go with the prompt (ON DELETE CASCADE).
        with_transaction!(&self.db, conn => {
            let delete = diesel::delete(system_prompts::table)
                .filter(system_prompts::id.eq(id.as_str()))
                .into_boxed();
            let deleted = owned_by!(delete, system_prompts::organization_id, owner)
                .execute(conn)
                .await?;
            if deleted > 0 {
                for record in audit {
                    record_audit!(conn, record);
                }
            }
            Ok(deleted > 0)
        })
    }

    async fn layouts(
        &self,
        ids: &[SystemPromptId],
        at: Option<DateTime<Utc>>,
    ) -> Result<Vec<ResolvedAssociation>, DomainError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = ids.iter().map(SystemPromptId::as_str).collect();
        let at = at.map(|at| at.naive_utc());
        let placements = placements_in_effect(self, &ids, at).await?;
        let pinned: Vec<&str> = placements
            .iter()
            .filter_map(|(row, ..)| row.pinned_version_id.as_deref())
            .collect();
        let mut unpinned: Vec<&str> = placements
            .iter()
            .filter(|(row, ..)| row.pinned_version_id.is_none())
            .map(|(row, ..)| row.particle_id.as_str())
            .collect();
        unpinned.sort_unstable();
        unpinned.dedup();
        let pinned = pinned_versions(self, &pinned).await?;
        let followed = followed_versions(self, &unpinned, at).await?;

        let mut resolved = Vec::with_capacity(placements.len());
        for (row, particle_name, category) in placements {
            let version = match &row.pinned_version_id {
                Some(version_id) => pinned.get(version_id),
                None => followed.get(&row.particle_id),
            };
            // A placement without a version at `at` (none created yet) is left out.
            let Some(version) = version.cloned() else {
                continue;
            };
            let category = rows::category("particles", &row.particle_id, &category)?;
            resolved.push(ResolvedAssociation {
                association: Association::try_from(row)?,
                particle_name,
                category,
                version,
            });
        }
        Ok(resolved)
    }

    async fn add_association(
        &self,
        owner: &Owner,
        association: &Association,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        let row = PlacementRow::try_from(association)?;
        let particle = [row.particle_id.clone()];
        with_transaction!(&self.db, conn => {
            if !touch_prompt!(conn, owner, &row.system_prompt_id, row.valid_from) {
                return Ok(false);
            }
            let locked = conn.lock_particles(&particle, LockMode::Share).await?;
            check_placeable(owner, &particle, &locked)?;
            diesel::insert_into(system_prompt_particles::table)
                .values(&row)
                .execute(conn)
                .await?;
            for record in audit {
                record_audit!(conn, record);
            }
            Ok(true)
        })
    }

    async fn update_association(
        &self,
        owner: &Owner,
        prompt: &SystemPromptId,
        id: &AssociationId,
        order: u32,
        pin: Option<Pin>,
        at: DateTime<Utc>,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        let order = int_column(order, "placement order")?;
        let (pinned_version_id, pinned_number) = pin_columns(pin.as_ref())?;
        let at = at.naive_utc();
        with_transaction!(&self.db, conn => {
            if !touch_prompt!(conn, owner, prompt.as_str(), at) {
                return Ok(false);
            }
            let current: Option<PlacementRow> = system_prompt_particles::table
                .filter(system_prompt_particles::association_id.eq(id.as_str()))
                .filter(system_prompt_particles::system_prompt_id.eq(prompt.as_str()))
                .filter(system_prompt_particles::valid_to.is_null())
                .select(PlacementRow::as_select())
                .first(conn)
                .await
                .optional()?;
            let Some(current) = current else {
                return Err(Rollback::Return(false));
            };
            let current_row = system_prompt_particles::table
                .filter(system_prompt_particles::association_id.eq(id.as_str()))
                .filter(system_prompt_particles::valid_from.eq(current.valid_from))
                .filter(system_prompt_particles::valid_to.is_null());
            let changed = if current.valid_from == at {
                // Changed again in the same instant: the current row never took effect,
                // so it takes the new order and pin (the history reads the same).
                diesel::update(current_row)
                    .set((
                        system_prompt_particles::sort_order.eq(order),
                        system_prompt_particles::pinned_version_id.eq(&pinned_version_id),
                        system_prompt_particles::pinned_number.eq(pinned_number),
                    ))
                    .execute(conn)
                    .await?
            } else {
                let closed = diesel::update(current_row)
                    .set(system_prompt_particles::valid_to.eq(Some(at)))
                    .execute(conn)
                    .await?;
                if closed > 0 {
                    let next = PlacementRow {
                        sort_order: order,
                        pinned_version_id: pinned_version_id.clone(),
                        pinned_number,
                        valid_from: at,
                        valid_to: None,
                        ..current
                    };
                    diesel::insert_into(system_prompt_particles::table)
                        .values(&next)
                        .execute(conn)
                        .await?;
                }
                closed
            };
            if changed == 0 {
                return Err(Rollback::Return(false));
            }
            for record in audit {
                record_audit!(conn, record);
            }
            Ok(true)
        })
    }

    async fn remove_association(
        &self,
        owner: &Owner,
        prompt: &SystemPromptId,
        id: &AssociationId,
        at: DateTime<Utc>,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        let at = at.naive_utc();
        with_transaction!(&self.db, conn => {
            if !touch_prompt!(conn, owner, prompt.as_str(), at) {
                return Ok(false);
            }
            let closed = diesel::update(system_prompt_particles::table)
                .set(system_prompt_particles::valid_to.eq(Some(at)))
                .filter(system_prompt_particles::association_id.eq(id.as_str()))
                .filter(system_prompt_particles::system_prompt_id.eq(prompt.as_str()))
                .filter(system_prompt_particles::valid_to.is_null())
                .execute(conn)
                .await?;
            if closed == 0 {
                return Err(Rollback::Return(false));
            }
            for record in audit {
                record_audit!(conn, record);
            }
            Ok(true)
        })
    }
}

/// The placements of the prompts in effect at `at` (now when `None`), with their particles'
/// current name and category. Deleted particles are included: their
/// past placements still resolve.
async fn placements_in_effect(
    store: &SqlPromptStore,
    ids: &[&str],
    at: Option<NaiveDateTime>,
) -> Result<Vec<PlacementWithParticle>, DomainError> {
    let rows = with_connection!(&store.db, conn => {
        let mut query = system_prompt_particles::table
            .inner_join(particles::table)
            .filter(system_prompt_particles::system_prompt_id.eq_any(ids))
            .into_boxed();
        query = match at {
            None => query.filter(system_prompt_particles::valid_to.is_null()),
            Some(at) => query
                .filter(system_prompt_particles::valid_from.le(at))
                .filter(
                    system_prompt_particles::valid_to
                        .is_null()
                        .or(system_prompt_particles::valid_to.gt(at)),
                ),
        };
        query
            .select((
                PlacementRow::as_select(),
                particles::name,
                particles::category,
            ))
            .load(conn)
            .await
            .map_err(query_error)?
    });
    Ok(rows)
}

/// Versions by id.
async fn pinned_versions(
    store: &SqlPromptStore,
    ids: &[&str],
) -> Result<HashMap<String, ParticleVersion>, DomainError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<VersionRow> = with_connection!(&store.db, conn => {
        particle_versions::table
            .filter(particle_versions::id.eq_any(ids))
            .select(VersionRow::as_select())
            .load(conn)
            .await
            .map_err(query_error)?
    });
    rows.into_iter()
        .map(|row| Ok((row.id.clone(), ParticleVersion::try_from(row)?)))
        .collect()
}

/// The version each particle's unpinned placements resolve to, by particle id: the latest
/// (`at` is `None`), or the highest-numbered one created at or before `at`.
async fn followed_versions(
    store: &SqlPromptStore,
    particle_ids: &[&str],
    at: Option<NaiveDateTime>,
) -> Result<HashMap<String, ParticleVersion>, DomainError> {
    if particle_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<VersionRow> = match at {
        None => with_connection!(&store.db, conn => {
            particle_versions::table
                .inner_join(
                    particles::table.on(particles::id
                        .eq(particle_versions::particle_id)
                        .and(particles::latest_version.eq(particle_versions::number))),
                )
                .filter(particle_versions::particle_id.eq_any(particle_ids))
                .select(VersionRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        }),
        Some(at) => {
            // Versions created by `at` with no higher-numbered version also created by `at`.
            let newer = diesel::alias!(particle_versions as newer);
            with_connection!(&store.db, conn => {
                particle_versions::table
                    .left_join(
                        newer.on(newer
                            .field(particle_versions::particle_id)
                            .eq(particle_versions::particle_id)
                            .and(newer.field(particle_versions::number).gt(particle_versions::number))
                            .and(newer.field(particle_versions::created_at).le(at))),
                    )
                    .filter(particle_versions::particle_id.eq_any(particle_ids))
                    .filter(particle_versions::created_at.le(at))
                    .filter(newer.field(particle_versions::id).nullable().is_null())
                    .select(VersionRow::as_select())
                    .load(conn)
                    .await
                    .map_err(query_error)?
            })
        }
    };
    rows.into_iter()
        .map(|row| Ok((row.particle_id.clone(), ParticleVersion::try_from(row)?)))
        .collect()
}
