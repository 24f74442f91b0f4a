//! `ParticleStore` and `SystemPromptStore` on PostgreSQL or SQLite.
//!
//! Reads on behalf of an organization see its rows and the system's (`organization_id` IS
//! NULL); writes and owner listings match the owner exactly. Particles are deleted softly
//! (`deleted_at`) so their versions keep resolving past layouts; placements are a history
//! of rows valid from `valid_from` until `valid_to` (NULL while current).

mod locks;
mod particles;
mod rows;
mod system_prompts;

use tessera_kernel::DomainError;
use tessera_prompts::Owner;

use crate::{Database, error::Rollback};
use rows::ParticleLock;

/// Both prompt stores over one database.
#[derive(Clone)]
pub struct SqlPromptStore {
    db: Database,
}

impl SqlPromptStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

/// Restricts a boxed query or statement to the rows of `$owner` in `$column`
/// (`organization_id`): equal to the organization's id, or NULL for the system.
macro_rules! owned_by {
    ($query:expr, $column:expr, $owner:expr) => {
        match $owner.organization() {
            Some(organization) => $query.filter($column.eq(organization.as_str())),
            None => $query.filter($column.is_null()),
        }
    };
}
use owned_by;

/// The rows an organization may read in a table with an `organization_id` column:
/// its own and the system's.
macro_rules! visible_to {
    ($column:expr, $viewer:expr) => {
        $column.eq($viewer.as_str()).or($column.is_null())
    };
}
use visible_to;

/// Checks, inside a transaction, that particles may be placed in a system prompt of
/// `owner`: each of `wanted` exists, is not deleted and is the owner's or the system's
/// (a system prompt places system particles only). `locked` are the rows read for them.
fn check_placeable<T>(
    owner: &Owner,
    wanted: &[String],
    locked: &[ParticleLock],
) -> Result<(), Rollback<T>> {
    let organization = owner.organization().map(|id| id.as_str());
    for id in wanted {
        let placeable = locked.iter().any(|row| {
            &row.id == id
                && row.deleted_at.is_none()
                && (row.organization_id.is_none() || row.organization_id.as_deref() == organization)
        });
        if !placeable {
            return Err(Rollback::Fail(DomainError::Conflict {
                code: "missing_reference",
                message: format!("particle {id} does not exist or cannot be placed here"),
            }));
        }
    }
    Ok(())
}
