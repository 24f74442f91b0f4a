use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{
    Association, AssociationId, Category, Owner, Particle, ParticleDeletion, ParticleId,
    ParticleVersion, ParticleVersionId, Pin, ResolvedAssociation, SystemPrompt, SystemPromptId,
};

/// Counts the tokens of a text in one encoding (o200k_base by default; a model's own
/// tokenizer can stand in).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait TokenCounter: Send + Sync {
    /// The encoding's name, e.g. `o200k_base`.
    fn encoding(&self) -> &str;

    fn count(&self, text: &str) -> u32;
}

/// Persistence of particles and their versions. Every change comes with the audit records
/// of it (none for the system's own records), written in the same transaction, and not at
/// all when nothing changed.
///
/// Reads on behalf of an organization (`viewer`) see its own particles and system ones;
/// writes take the `Owner` and touch only that owner's records. Deleted particles are
/// invisible to reads but their versions stay, so past compositions remain exact.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ParticleStore: Send + Sync {
    /// Stores a new particle with its first version.
    async fn insert(&self, particle: &Particle, audit: &[AuditRecord]) -> Result<(), DomainError>;

    async fn get(
        &self,
        viewer: &OrganizationId,
        id: &ParticleId,
    ) -> Result<Option<Particle>, DomainError>;

    async fn get_system(&self, slug: &str) -> Result<Option<Particle>, DomainError>;

    /// The owner's particles ordered by id, at most `page.limit.overfetch()`.
    async fn list(
        &self,
        owner: &Owner,
        category: Option<Category>,
        page: &PageRequest<ParticleId>,
    ) -> Result<Vec<Particle>, DomainError>;

    async fn count(&self, owner: &Owner, category: Option<Category>) -> Result<u64, DomainError>;

    /// Appends `version` as the particle's latest, provided the latest is still
    /// `version.number - 1` (false otherwise, or when the particle is not the owner's).
    async fn add_version(
        &self,
        owner: &Owner,
        version: &ParticleVersion,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError>;

    /// Sets name and description; false when the particle is not the owner's.
    async fn update_details(
        &self,
        owner: &Owner,
        id: &ParticleId,
        name: &str,
        description: &str,
        at: DateTime<Utc>,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError>;

    /// Deletes the particle unless a system prompt places it now (checked atomically).
    async fn delete(
        &self,
        owner: &Owner,
        id: &ParticleId,
        at: DateTime<Utc>,
        audit: &[AuditRecord],
    ) -> Result<ParticleDeletion, DomainError>;

    /// Versions of a visible particle, ascending by number, at most `page.limit.overfetch()`.
    async fn versions(
        &self,
        viewer: &OrganizationId,
        id: &ParticleId,
        page: &PageRequest<u32>,
    ) -> Result<Vec<ParticleVersion>, DomainError>;

    async fn version(
        &self,
        viewer: &OrganizationId,
        id: &ParticleId,
        number: u32,
    ) -> Result<Option<ParticleVersion>, DomainError>;

    async fn version_by_id(
        &self,
        viewer: &OrganizationId,
        id: &ParticleVersionId,
    ) -> Result<Option<ParticleVersion>, DomainError>;
}

/// Persistence of system prompts and of their particle placements.
///
/// Placements are kept as a history: changing or removing one closes its current row and
/// (for a change) opens a new one, so the layout of any past moment can be read back.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait SystemPromptStore: Send + Sync {
    /// Stores a new system prompt with its first placements, in one transaction. A placed
    /// particle that is missing, deleted, or neither the owner's nor the system's (a system
    /// prompt places system particles only) fails the whole insert with
    /// `Conflict { code: "missing_reference" }`.
    async fn insert(
        &self,
        prompt: &SystemPrompt,
        associations: &[Association],
        audit: &[AuditRecord],
    ) -> Result<(), DomainError>;

    async fn get(
        &self,
        viewer: &OrganizationId,
        id: &SystemPromptId,
    ) -> Result<Option<SystemPrompt>, DomainError>;

    async fn get_system(&self, slug: &str) -> Result<Option<SystemPrompt>, DomainError>;

    /// The owner's system prompts ordered by id, at most `page.limit.overfetch()`.
    async fn list(
        &self,
        owner: &Owner,
        page: &PageRequest<SystemPromptId>,
    ) -> Result<Vec<SystemPrompt>, DomainError>;

    async fn count(&self, owner: &Owner) -> Result<u64, DomainError>;

    /// Saves name, description and enabled; false when the prompt is not the owner's.
    async fn update(
        &self,
        owner: &Owner,
        prompt: &SystemPrompt,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError>;

    /// Deletes the prompt and its placements; false when it is not the owner's.
    async fn delete(
        &self,
        owner: &Owner,
        id: &SystemPromptId,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError>;

    /// The placements of each prompt with their particle versions: the current ones when
    /// `at` is `None`, else those in effect at `at`, unpinned ones resolved to the latest
    /// version created at or before `at`. The caller has checked that the prompts are visible.
    async fn layouts(
        &self,
        ids: &[SystemPromptId],
        at: Option<DateTime<Utc>>,
    ) -> Result<Vec<ResolvedAssociation>, DomainError>;

    /// Adds a placement to one of the owner's prompts; false when the prompt is not the
    /// owner's; `Conflict { code: "missing_reference" }` when the particle cannot be placed
    /// there (as for `insert`).
    async fn add_association(
        &self,
        owner: &Owner,
        association: &Association,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError>;

    /// Replaces the current row of a placement with one of the new order and pin, effective
    /// `at`; false when no such current placement of the owner's prompt exists.
    #[allow(clippy::too_many_arguments)] // the placement's fields, one by one, and its record
    async fn update_association(
        &self,
        owner: &Owner,
        prompt: &SystemPromptId,
        id: &AssociationId,
        order: u32,
        pin: Option<Pin>,
        at: DateTime<Utc>,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError>;

    /// Ends a placement at `at`; false when no such current placement exists.
    async fn remove_association(
        &self,
        owner: &Owner,
        prompt: &SystemPromptId,
        id: &AssociationId,
        at: DateTime<Utc>,
        audit: &[AuditRecord],
    ) -> Result<bool, DomainError>;
}
