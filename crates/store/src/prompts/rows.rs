//! Rows of the prompt tables and their conversions to and from the domain's types.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use tessera_kernel::DomainError;
use tessera_prompts::{Association, Category, Owner, Particle, ParticleVersion, Pin, SystemPrompt};

use crate::schema::{particle_versions, particles, system_prompt_particles, system_prompts};
use crate::time::utc;

/// A particle's own columns (its latest version is a `VersionRow`; `deleted_at` is only
/// ever written by `delete` and filtered on).
#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = particles, treat_none_as_default_value = false)]
pub(super) struct ParticleRow {
    pub id: String,
    pub organization_id: Option<String>,
    pub slug: Option<String>,
    pub name: String,
    pub category: String,
    pub description: String,
    pub latest_version: i32,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = particle_versions)]
pub(super) struct VersionRow {
    pub id: String,
    pub particle_id: String,
    pub number: i32,
    pub content: String,
    pub token_count: i32,
    pub created_at: NaiveDateTime,
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = system_prompts, treat_none_as_default_value = false)]
pub(super) struct PromptRow {
    pub id: String,
    pub organization_id: Option<String>,
    pub slug: Option<String>,
    pub name: String,
    pub description: String,
    pub enabled: bool,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
}

/// One period of a placement (`valid_to` is `None` while it is current).
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = system_prompt_particles, treat_none_as_default_value = false)]
pub(super) struct PlacementRow {
    pub association_id: String,
    pub system_prompt_id: String,
    pub particle_id: String,
    pub sort_order: i32,
    pub pinned_version_id: Option<String>,
    pub pinned_number: Option<i32>,
    pub valid_from: NaiveDateTime,
    pub valid_to: Option<NaiveDateTime>,
}

/// What a write transaction needs to know of a particle it locks.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = particles)]
pub(super) struct ParticleLock {
    pub id: String,
    pub organization_id: Option<String>,
    pub deleted_at: Option<NaiveDateTime>,
}

/// The column value of a count or number; values beyond the column's range are refused
/// (an internal error: the domain never produces them in practice).
pub(super) fn int_column(value: u32, what: &str) -> Result<i32, DomainError> {
    i32::try_from(value)
        .map_err(|_| DomainError::internal(format!("{what} {value} exceeds the column's range")))
}

/// The `organization_id` column of an owner (NULL for the system).
pub(super) fn owner_column(owner: &Owner) -> Option<String> {
    owner.organization().map(|id| id.as_str().to_owned())
}

/// Builds the error for a row that does not read back as a domain value.
fn corrupt(table: &str, id: &str, what: impl std::fmt::Display) -> DomainError {
    DomainError::internal(format!("{table} row {id}: {what}"))
}

fn owner_of(table: &str, id: &str, column: Option<String>) -> Result<Owner, DomainError> {
    column
        .map(|org| {
            org.parse()
                .map(Owner::Organization)
                .map_err(|e| corrupt(table, id, e))
        })
        .transpose()
        .map(|owner| owner.unwrap_or(Owner::System))
}

fn unsigned(table: &str, id: &str, column: &str, value: i32) -> Result<u32, DomainError> {
    u32::try_from(value).map_err(|e| corrupt(table, id, format!("{column} {value}: {e}")))
}

impl TryFrom<&Particle> for ParticleRow {
    type Error = DomainError;

    fn try_from(particle: &Particle) -> Result<Self, Self::Error> {
        Ok(Self {
            id: particle.id.to_string(),
            organization_id: owner_column(&particle.owner),
            slug: particle.slug.clone(),
            name: particle.name.clone(),
            category: particle.category.as_str().to_owned(),
            description: particle.description.clone(),
            latest_version: int_column(particle.latest.number, "particle version number")?,
            created_at: particle.created_at.naive_utc(),
            updated_at: particle.updated_at.naive_utc(),
        })
    }
}

impl TryFrom<&ParticleVersion> for VersionRow {
    type Error = DomainError;

    fn try_from(version: &ParticleVersion) -> Result<Self, Self::Error> {
        Ok(Self {
            id: version.id.to_string(),
            particle_id: version.particle_id.to_string(),
            number: int_column(version.number, "particle version number")?,
            content: version.content.clone(),
            token_count: int_column(version.token_count, "token count")?,
            created_at: version.created_at.naive_utc(),
        })
    }
}

impl TryFrom<VersionRow> for ParticleVersion {
    type Error = DomainError;

    fn try_from(row: VersionRow) -> Result<Self, Self::Error> {
        const TABLE: &str = "particle_versions";
        Ok(ParticleVersion {
            id: row.id.parse().map_err(|e| corrupt(TABLE, &row.id, e))?,
            particle_id: row
                .particle_id
                .parse()
                .map_err(|e| corrupt(TABLE, &row.id, e))?,
            number: unsigned(TABLE, &row.id, "number", row.number)?,
            token_count: unsigned(TABLE, &row.id, "token_count", row.token_count)?,
            content: row.content,
            created_at: utc(row.created_at),
        })
    }
}

pub(super) fn category(table: &str, id: &str, text: &str) -> Result<Category, DomainError> {
    text.parse().map_err(|e| corrupt(table, id, e))
}

/// A particle from its row and the row of its latest version.
pub(super) fn particle(row: ParticleRow, latest: VersionRow) -> Result<Particle, DomainError> {
    const TABLE: &str = "particles";
    let latest = ParticleVersion::try_from(latest)?;
    if latest.number != unsigned(TABLE, &row.id, "latest_version", row.latest_version)? {
        return Err(corrupt(TABLE, &row.id, "latest version row mismatch"));
    }
    Ok(Particle {
        id: row.id.parse().map_err(|e| corrupt(TABLE, &row.id, e))?,
        owner: owner_of(TABLE, &row.id, row.organization_id)?,
        category: category(TABLE, &row.id, &row.category)?,
        slug: row.slug,
        name: row.name,
        description: row.description,
        latest,
        created_at: utc(row.created_at),
        updated_at: utc(row.updated_at),
    })
}

impl From<&SystemPrompt> for PromptRow {
    fn from(prompt: &SystemPrompt) -> Self {
        Self {
            id: prompt.id.to_string(),
            organization_id: owner_column(&prompt.owner),
            slug: prompt.slug.clone(),
            name: prompt.name.clone(),
            description: prompt.description.clone(),
            enabled: prompt.enabled,
            created_at: prompt.created_at.naive_utc(),
            updated_at: prompt.updated_at.naive_utc(),
        }
    }
}

impl TryFrom<PromptRow> for SystemPrompt {
    type Error = DomainError;

    fn try_from(row: PromptRow) -> Result<Self, Self::Error> {
        const TABLE: &str = "system_prompts";
        Ok(SystemPrompt {
            id: row.id.parse().map_err(|e| corrupt(TABLE, &row.id, e))?,
            owner: owner_of(TABLE, &row.id, row.organization_id)?,
            slug: row.slug,
            name: row.name,
            description: row.description,
            enabled: row.enabled,
            created_at: utc(row.created_at),
            updated_at: utc(row.updated_at),
        })
    }
}

/// The pin columns (`pinned_version_id`, `pinned_number`) of a pin.
pub(super) fn pin_columns(pin: Option<&Pin>) -> Result<(Option<String>, Option<i32>), DomainError> {
    Ok(match pin {
        Some(pin) => (
            Some(pin.version_id.to_string()),
            Some(int_column(pin.number, "pinned version number")?),
        ),
        None => (None, None),
    })
}

impl TryFrom<&Association> for PlacementRow {
    type Error = DomainError;

    /// The current row of a new placement.
    fn try_from(association: &Association) -> Result<Self, Self::Error> {
        let (pinned_version_id, pinned_number) = pin_columns(association.pin.as_ref())?;
        Ok(Self {
            association_id: association.id.to_string(),
            system_prompt_id: association.system_prompt_id.to_string(),
            particle_id: association.particle_id.to_string(),
            sort_order: int_column(association.order, "placement order")?,
            pinned_version_id,
            pinned_number,
            valid_from: association.valid_from.naive_utc(),
            valid_to: None,
        })
    }
}

impl TryFrom<PlacementRow> for Association {
    type Error = DomainError;

    fn try_from(row: PlacementRow) -> Result<Self, Self::Error> {
        const TABLE: &str = "system_prompt_particles";
        let id = row.association_id.as_str();
        let pin = match (row.pinned_version_id, row.pinned_number) {
            (Some(version_id), Some(number)) => Some(Pin {
                version_id: version_id.parse().map_err(|e| corrupt(TABLE, id, e))?,
                number: unsigned(TABLE, id, "pinned_number", number)?,
            }),
            (None, None) => None,
            _ => return Err(corrupt(TABLE, id, "half a pin")),
        };
        Ok(Association {
            id: id.parse().map_err(|e| corrupt(TABLE, id, e))?,
            system_prompt_id: row
                .system_prompt_id
                .parse()
                .map_err(|e| corrupt(TABLE, id, e))?,
            particle_id: row.particle_id.parse().map_err(|e| corrupt(TABLE, id, e))?,
            order: unsigned(TABLE, id, "sort_order", row.sort_order)?,
            pin,
            valid_from: utc(row.valid_from),
        })
    }
}
