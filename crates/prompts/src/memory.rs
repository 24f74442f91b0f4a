//! In-memory `ParticleStore` and `SystemPromptStore`: the executable reference of the ports'
//! contracts, for unit tests and benchmarks (no persistence).

use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{
    Association, AssociationId, Category, Owner, Particle, ParticleDeletion, ParticleId,
    ParticleStore, ParticleVersion, ParticleVersionId, Pin, ResolvedAssociation, SystemPrompt,
    SystemPromptId, SystemPromptStore,
};

/// One row of placement history.
#[derive(Debug, Clone)]
struct PlacementRow {
    association: Association,
    valid_to: Option<DateTime<Utc>>,
}

#[derive(Debug, Default)]
struct State {
    /// Particles with their latest version; deleted ones keep `deleted_at`.
    particles: Vec<(Particle, Option<DateTime<Utc>>)>,
    versions: Vec<ParticleVersion>,
    prompts: Vec<SystemPrompt>,
    placements: Vec<PlacementRow>,
}

/// Both prompt stores over one in-memory state.
#[derive(Debug, Default)]
pub struct InMemoryPromptStore {
    state: Mutex<State>,
}

impl InMemoryPromptStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> Result<MutexGuard<'_, State>, DomainError> {
        self.state
            .lock()
            .map_err(|_| DomainError::internal("in-memory prompt store poisoned"))
    }
}

fn visible_to(owner: &Owner, viewer: &OrganizationId) -> bool {
    match owner {
        Owner::System => true,
        Owner::Organization(id) => id == viewer,
    }
}

impl State {
    fn live_particle(&self, id: &ParticleId) -> Option<&Particle> {
        self.particles
            .iter()
            .find(|(p, deleted)| &p.id == id && deleted.is_none())
            .map(|(p, _)| p)
    }

    fn visible_particle(&self, viewer: &OrganizationId, id: &ParticleId) -> Option<&Particle> {
        self.live_particle(id)
            .filter(|p| visible_to(&p.owner, viewer))
    }

    /// Refuses placing a particle that is missing, deleted, or not placeable by `owner`.
    fn check_placeable(&self, owner: &Owner, particle: &ParticleId) -> Result<(), DomainError> {
        let placeable = self
            .live_particle(particle)
            .is_some_and(|p| p.owner.is_system() || &p.owner == owner);
        if placeable {
            Ok(())
        } else {
            Err(DomainError::Conflict {
                code: "missing_reference",
                message: format!("particle {particle} does not exist or cannot be placed here"),
            })
        }
    }

    /// Refuses a pin that names no version of the placed particle (the databases' foreign
    /// key from a placement's pin to the particle's versions).
    fn check_pin(&self, particle: &ParticleId, pin: Option<&Pin>) -> Result<(), DomainError> {
        let Some(pin) = pin else {
            return Ok(());
        };
        let exists = self.versions.iter().any(|v| {
            v.id == pin.version_id && &v.particle_id == particle && v.number == pin.number
        });
        if exists {
            Ok(())
        } else {
            Err(DomainError::Conflict {
                code: "missing_reference",
                message: format!(
                    "version {} of particle {particle} does not exist",
                    pin.version_id
                ),
            })
        }
    }

    /// Refuses placements that cannot be stored for a prompt of `owner`: an unplaceable
    /// particle, a pin to no version of it, or a history row (id, valid from) that exists
    /// already, here or earlier in `placements`.
    fn check_placements(
        &self,
        owner: &Owner,
        placements: &[Association],
    ) -> Result<(), DomainError> {
        for (index, association) in placements.iter().enumerate() {
            self.check_placeable(owner, &association.particle_id)?;
            self.check_pin(&association.particle_id, association.pin.as_ref())?;
            let same_row = |other: &Association| {
                other.id == association.id && other.valid_from == association.valid_from
            };
            let taken = self.placements.iter().any(|row| same_row(&row.association))
                || placements[..index].iter().any(same_row);
            if taken {
                return Err(already_exists(format!("placement {}", association.id)));
            }
        }
        Ok(())
    }

    fn owned_prompt(&self, owner: &Owner, id: &SystemPromptId) -> Option<usize> {
        self.prompts
            .iter()
            .position(|p| &p.id == id && &p.owner == owner)
    }

    fn touch_prompt(&mut self, id: &SystemPromptId, at: DateTime<Utc>) {
        if let Some(prompt) = self.prompts.iter_mut().find(|p| &p.id == id) {
            prompt.updated_at = at;
        }
    }

    fn current_placement(
        &mut self,
        prompt: &SystemPromptId,
        id: &AssociationId,
    ) -> Option<&mut PlacementRow> {
        self.placements.iter_mut().find(|row| {
            &row.association.id == id
                && &row.association.system_prompt_id == prompt
                && row.valid_to.is_none()
        })
    }
}

/// The conflict of storing a record whose key (id or slug) is taken, as the databases'
/// unique constraints report it.
fn already_exists(what: impl std::fmt::Display) -> DomainError {
    DomainError::Conflict {
        code: "already_exists",
        message: format!("{what} already exists"),
    }
}

#[async_trait]
impl ParticleStore for InMemoryPromptStore {
    async fn insert(&self, particle: &Particle, _audit: &[AuditRecord]) -> Result<(), DomainError> {
        let mut state = self.state()?;
        // Deleted particles keep their id and slug.
        if state.particles.iter().any(|(p, _)| p.id == particle.id) {
            return Err(already_exists(format!("particle {}", particle.id)));
        }
        let slug_taken =
            particle.slug.is_some() && state.particles.iter().any(|(p, _)| p.slug == particle.slug);
        if slug_taken {
            return Err(already_exists("slug"));
        }
        if state.versions.iter().any(|v| v.id == particle.latest.id) {
            return Err(already_exists(format!("version {}", particle.latest.id)));
        }
        state.versions.push(particle.latest.clone());
        state.particles.push((particle.clone(), None));
        Ok(())
    }

    async fn get(
        &self,
        viewer: &OrganizationId,
        id: &ParticleId,
    ) -> Result<Option<Particle>, DomainError> {
        Ok(self.state()?.visible_particle(viewer, id).cloned())
    }

    async fn get_system(&self, slug: &str) -> Result<Option<Particle>, DomainError> {
        Ok(self
            .state()?
            .particles
            .iter()
            .find(|(p, deleted)| {
                p.owner.is_system() && p.slug.as_deref() == Some(slug) && deleted.is_none()
            })
            .map(|(p, _)| p.clone()))
    }

    async fn list(
        &self,
        owner: &Owner,
        category: Option<Category>,
        page: &PageRequest<ParticleId>,
    ) -> Result<Vec<Particle>, DomainError> {
        let state = self.state()?;
        let mut rows: Vec<Particle> = state
            .particles
            .iter()
            .filter(|(p, deleted)| {
                deleted.is_none()
                    && &p.owner == owner
                    && category.is_none_or(|c| p.category == c)
                    && page.after.as_ref().is_none_or(|after| &p.id > after)
            })
            .map(|(p, _)| p.clone())
            .collect();
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        rows.truncate(usize::try_from(page.limit.overfetch()).unwrap_or(usize::MAX));
        Ok(rows)
    }

    async fn count(&self, owner: &Owner, category: Option<Category>) -> Result<u64, DomainError> {
        let state = self.state()?;
        let count = state
            .particles
            .iter()
            .filter(|(p, deleted)| {
                deleted.is_none() && &p.owner == owner && category.is_none_or(|c| p.category == c)
            })
            .count();
        Ok(count as u64)
    }

    async fn add_version(
        &self,
        owner: &Owner,
        version: &ParticleVersion,
        _audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        let mut state = self.state()?;
        // A taken version id is lost like a taken number: nothing changes.
        if state.versions.iter().any(|v| v.id == version.id) {
            return Ok(false);
        }
        let Some((particle, _)) = state.particles.iter_mut().find(|(p, deleted)| {
            p.id == version.particle_id && &p.owner == owner && deleted.is_none()
        }) else {
            return Ok(false);
        };
        if particle.latest.number.checked_add(1) != Some(version.number) {
            return Ok(false);
        }
        particle.latest = version.clone();
        particle.updated_at = version.created_at;
        state.versions.push(version.clone());
        Ok(true)
    }

    async fn update_details(
        &self,
        owner: &Owner,
        id: &ParticleId,
        name: &str,
        description: &str,
        at: DateTime<Utc>,
        _audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        let mut state = self.state()?;
        let Some((particle, _)) = state
            .particles
            .iter_mut()
            .find(|(p, deleted)| &p.id == id && &p.owner == owner && deleted.is_none())
        else {
            return Ok(false);
        };
        particle.name = name.to_owned();
        particle.description = description.to_owned();
        particle.updated_at = at;
        Ok(true)
    }

    async fn delete(
        &self,
        owner: &Owner,
        id: &ParticleId,
        at: DateTime<Utc>,
        _audit: &[AuditRecord],
    ) -> Result<ParticleDeletion, DomainError> {
        let mut state = self.state()?;
        let mut users: Vec<SystemPromptId> = state
            .placements
            .iter()
            .filter(|row| &row.association.particle_id == id && row.valid_to.is_none())
            .map(|row| row.association.system_prompt_id.clone())
            .collect();
        let Some((_, deleted)) = state
            .particles
            .iter_mut()
            .find(|(p, deleted)| &p.id == id && &p.owner == owner && deleted.is_none())
        else {
            return Ok(ParticleDeletion::NotFound);
        };
        if !users.is_empty() {
            users.sort();
            users.dedup();
            return Ok(ParticleDeletion::Referenced(users));
        }
        *deleted = Some(at);
        Ok(ParticleDeletion::Deleted)
    }

    async fn versions(
        &self,
        viewer: &OrganizationId,
        id: &ParticleId,
        page: &PageRequest<u32>,
    ) -> Result<Vec<ParticleVersion>, DomainError> {
        let state = self.state()?;
        if state.visible_particle(viewer, id).is_none() {
            return Ok(Vec::new());
        }
        let mut rows: Vec<ParticleVersion> = state
            .versions
            .iter()
            .filter(|v| &v.particle_id == id && page.after.is_none_or(|after| v.number > after))
            .cloned()
            .collect();
        rows.sort_by_key(|v| v.number);
        rows.truncate(usize::try_from(page.limit.overfetch()).unwrap_or(usize::MAX));
        Ok(rows)
    }

    async fn version(
        &self,
        viewer: &OrganizationId,
        id: &ParticleId,
        number: u32,
    ) -> Result<Option<ParticleVersion>, DomainError> {
        let state = self.state()?;
        if state.visible_particle(viewer, id).is_none() {
            return Ok(None);
        }
        Ok(state
            .versions
            .iter()
            .find(|v| &v.particle_id == id && v.number == number)
            .cloned())
    }

    async fn version_by_id(
        &self,
        viewer: &OrganizationId,
        id: &ParticleVersionId,
    ) -> Result<Option<ParticleVersion>, DomainError> {
        let state = self.state()?;
        Ok(state
            .versions
            .iter()
            .find(|v| &v.id == id && state.visible_particle(viewer, &v.particle_id).is_some())
            .cloned())
    }
}

#[async_trait]
impl SystemPromptStore for InMemoryPromptStore {
    async fn insert(
        &self,
        prompt: &SystemPrompt,
        associations: &[Association],
        _audit: &[AuditRecord],
    ) -> Result<(), DomainError> {
        let mut state = self.state()?;
        if state.prompts.iter().any(|p| p.id == prompt.id) {
            return Err(already_exists(format!("system prompt {}", prompt.id)));
        }
        let slug_taken =
            prompt.slug.is_some() && state.prompts.iter().any(|p| p.slug == prompt.slug);
        if slug_taken {
            return Err(already_exists("slug"));
        }
        state.check_placements(&prompt.owner, associations)?;
        state.prompts.push(prompt.clone());
        state
            .placements
            .extend(associations.iter().map(|association| PlacementRow {
                association: association.clone(),
                valid_to: None,
            }));
        Ok(())
    }

    async fn get(
        &self,
        viewer: &OrganizationId,
        id: &SystemPromptId,
    ) -> Result<Option<SystemPrompt>, DomainError> {
        Ok(self
            .state()?
            .prompts
            .iter()
            .find(|p| &p.id == id && visible_to(&p.owner, viewer))
            .cloned())
    }

    async fn get_system(&self, slug: &str) -> Result<Option<SystemPrompt>, DomainError> {
        Ok(self
            .state()?
            .prompts
            .iter()
            .find(|p| p.owner.is_system() && p.slug.as_deref() == Some(slug))
            .cloned())
    }

    async fn list(
        &self,
        owner: &Owner,
        page: &PageRequest<SystemPromptId>,
    ) -> Result<Vec<SystemPrompt>, DomainError> {
        let state = self.state()?;
        let mut rows: Vec<SystemPrompt> = state
            .prompts
            .iter()
            .filter(|p| &p.owner == owner && page.after.as_ref().is_none_or(|a| &p.id > a))
            .cloned()
            .collect();
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        rows.truncate(usize::try_from(page.limit.overfetch()).unwrap_or(usize::MAX));
        Ok(rows)
    }

    async fn count(&self, owner: &Owner) -> Result<u64, DomainError> {
        Ok(self
            .state()?
            .prompts
            .iter()
            .filter(|p| &p.owner == owner)
            .count() as u64)
    }

    async fn update(
        &self,
        owner: &Owner,
        prompt: &SystemPrompt,
        _audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        let mut state = self.state()?;
        let Some(index) = state.owned_prompt(owner, &prompt.id) else {
            return Ok(false);
        };
        let stored = &mut state.prompts[index];
        stored.name = prompt.name.clone();
        stored.description = prompt.description.clone();
        stored.enabled = prompt.enabled;
        stored.updated_at = prompt.updated_at;
        Ok(true)
    }

    async fn delete(
        &self,
        owner: &Owner,
        id: &SystemPromptId,
        _audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        let mut state = self.state()?;
        let Some(index) = state.owned_prompt(owner, id) else {
            return Ok(false);
        };
        state.prompts.remove(index);
        state
            .placements
            .retain(|row| &row.association.system_prompt_id != id);
        Ok(true)
    }

    async fn layouts(
        &self,
        ids: &[SystemPromptId],
        at: Option<DateTime<Utc>>,
    ) -> Result<Vec<ResolvedAssociation>, DomainError> {
        let state = self.state()?;
        let mut resolved = Vec::new();
        for row in &state.placements {
            let association = &row.association;
            let in_effect = match at {
                None => row.valid_to.is_none(),
                Some(at) => association.valid_from <= at && row.valid_to.is_none_or(|to| to > at),
            };
            if !in_effect || !ids.contains(&association.system_prompt_id) {
                continue;
            }
            let Some((particle, _)) = state
                .particles
                .iter()
                .find(|(p, _)| p.id == association.particle_id)
            else {
                continue;
            };
            let version = match (&association.pin, at) {
                (Some(pin), _) => state.versions.iter().find(|v| v.id == pin.version_id),
                (None, None) => Some(&particle.latest),
                (None, Some(at)) => state
                    .versions
                    .iter()
                    .filter(|v| v.particle_id == particle.id && v.created_at <= at)
                    .max_by_key(|v| v.number),
            };
            if let Some(version) = version {
                resolved.push(ResolvedAssociation {
                    association: association.clone(),
                    particle_name: particle.name.clone(),
                    category: particle.category,
                    version: version.clone(),
                });
            }
        }
        Ok(resolved)
    }

    async fn add_association(
        &self,
        owner: &Owner,
        association: &Association,
        _audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        let mut state = self.state()?;
        if state
            .owned_prompt(owner, &association.system_prompt_id)
            .is_none()
        {
            return Ok(false);
        }
        state.check_placements(owner, std::slice::from_ref(association))?;
        state.placements.push(PlacementRow {
            association: association.clone(),
            valid_to: None,
        });
        state.touch_prompt(&association.system_prompt_id, association.valid_from);
        Ok(true)
    }

    async fn update_association(
        &self,
        owner: &Owner,
        prompt: &SystemPromptId,
        id: &AssociationId,
        order: u32,
        pin: Option<Pin>,
        at: DateTime<Utc>,
        _audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        let mut state = self.state()?;
        if state.owned_prompt(owner, prompt).is_none() {
            return Ok(false);
        }
        let Some(particle) = state
            .current_placement(prompt, id)
            .map(|row| row.association.particle_id.clone())
        else {
            return Ok(false);
        };
        state.check_pin(&particle, pin.as_ref())?;
        let Some(current) = state.current_placement(prompt, id) else {
            return Ok(false);
        };
        current.valid_to = Some(at);
        let mut association = current.association.clone();
        association.order = order;
        association.pin = pin;
        association.valid_from = at;
        state.placements.push(PlacementRow {
            association,
            valid_to: None,
        });
        state.touch_prompt(prompt, at);
        Ok(true)
    }

    async fn remove_association(
        &self,
        owner: &Owner,
        prompt: &SystemPromptId,
        id: &AssociationId,
        at: DateTime<Utc>,
        _audit: &[AuditRecord],
    ) -> Result<bool, DomainError> {
        let mut state = self.state()?;
        if state.owned_prompt(owner, prompt).is_none() {
            return Ok(false);
        }
        let Some(current) = state.current_placement(prompt, id) else {
            return Ok(false);
        };
        current.valid_to = Some(at);
        state.touch_prompt(prompt, at);
        Ok(true)
    }
}
