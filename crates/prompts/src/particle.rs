use chrono::{DateTime, Utc};
use tessera_kernel::OrganizationId;

use crate::{Category, Content, Description, Name, ParticleId, ParticleVersionId, SystemPromptId};

/// Who owns a prompt record: an organization, or the system (read-only templates that
/// every organization can read and compose).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owner {
    Organization(OrganizationId),
    System,
}

impl Owner {
    pub fn organization(&self) -> Option<&OrganizationId> {
        match self {
            Owner::Organization(id) => Some(id),
            Owner::System => None,
        }
    }

    pub fn is_system(&self) -> bool {
        matches!(self, Owner::System)
    }
}

/// One immutable version of a particle's content, numbered from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParticleVersion {
    pub id: ParticleVersionId,
    pub particle_id: ParticleId,
    pub number: u32,
    pub content: String,
    pub token_count: u32,
    pub created_at: DateTime<Utc>,
}

/// A particle with its latest version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Particle {
    pub id: ParticleId,
    pub owner: Owner,
    /// Stable identifier of a system particle; `None` for organizations' particles.
    pub slug: Option<String>,
    pub name: String,
    pub category: Category,
    pub description: String,
    pub latest: ParticleVersion,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What a new particle is made of.
#[derive(Debug, Clone)]
pub struct NewParticle {
    pub name: Name,
    pub category: Category,
    pub content: Content,
    pub description: Description,
}

/// Changes of a particle's name and description (never a new version).
#[derive(Debug, Clone, Default)]
pub struct ParticleChanges {
    pub name: Option<Name>,
    pub description: Option<Description>,
}

impl ParticleChanges {
    pub fn is_empty(&self) -> bool {
        self.name.is_none() && self.description.is_none()
    }
}

/// What a store did when asked to delete a particle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParticleDeletion {
    Deleted,
    NotFound,
    /// Refused: these system prompts place the particle now.
    Referenced(Vec<SystemPromptId>),
}
