use std::{collections::HashMap, sync::Arc};

use chrono::{DateTime, Utc};
use tessera_kernel::{
    Actor, AuditRecord, Clock, CursorCodec, DomainError, FieldError, Limit, LocSegment,
    OrganizationId, Page, PageRequest,
};

use crate::{
    Association, AssociationChanges, AssociationId, Category, Composition, Content, NewParticle,
    NewSystemPrompt, Owner, Particle, ParticleChanges, ParticleDeletion, ParticleId, ParticleStore,
    ParticleVersion, ParticleVersionId, Pin, PromptError, ResolvedAssociation, SystemPrompt,
    SystemPromptChanges, SystemPromptId, SystemPromptStore, SystemPromptView, TokenCounter,
    compose,
    system_prompt::{Layout, NewAssociation},
};

const PARTICLE_LIST: &str = "particles";
const VERSION_LIST: &str = "particle-versions";
const SYSTEM_PROMPT_LIST: &str = "system-prompts";

/// How many times a content update is retried when another update wins the race.
const VERSION_ATTEMPTS: usize = 3;

/// Particles, system prompts and composition for organizations; system profiles are
/// readable by all and changed only by `seed_system_profiles`.
#[derive(Clone)]
pub struct PromptService {
    particles: Arc<dyn ParticleStore>,
    prompts: Arc<dyn SystemPromptStore>,
    counter: Arc<dyn TokenCounter>,
    clock: Arc<dyn Clock>,
    cursors: CursorCodec,
    /// Who the audit records of changes name (`acting_as`); the service itself by default.
    actor: Actor,
}

impl PromptService {
    pub fn new(
        particles: Arc<dyn ParticleStore>,
        prompts: Arc<dyn SystemPromptStore>,
        counter: Arc<dyn TokenCounter>,
        clock: Arc<dyn Clock>,
        cursors: CursorCodec,
    ) -> Self {
        Self {
            particles,
            prompts,
            counter,
            clock,
            cursors,
            actor: Actor::System,
        }
    }

    /// The same service, recording its changes in the audit log as made by `actor` (the
    /// API's handlers pass the caller). Cheap: the ports are shared.
    pub fn acting_as(&self, actor: Actor) -> Self {
        Self {
            actor,
            ..self.clone()
        }
    }

    /// The audit record of `action` on a resource of `organization`, by the acting actor.
    fn audit(
        &self,
        organization: &OrganizationId,
        action: &str,
        resource_type: &str,
        resource_id: &str,
        at: DateTime<Utc>,
    ) -> [AuditRecord; 1] {
        [self
            .actor
            .record(organization, action, resource_type, resource_id, at)]
    }

    pub fn counter(&self) -> &dyn TokenCounter {
        self.counter.as_ref()
    }

    // ----- particles -----

    pub async fn create_particle(
        &self,
        organization: &OrganizationId,
        new: NewParticle,
    ) -> Result<Particle, PromptError> {
        let particle = self.new_particle(Owner::Organization(organization.clone()), None, new);
        let audit = self.audit(
            organization,
            "particle.create",
            "particle",
            particle.id.as_str(),
            particle.created_at,
        );
        self.particles.insert(&particle, &audit).await?;
        Ok(particle)
    }

    pub(crate) fn new_particle(
        &self,
        owner: Owner,
        slug: Option<String>,
        new: NewParticle,
    ) -> Particle {
        let now = self.clock.now();
        let id = ParticleId::generate();
        Particle {
            latest: self.version(&id, 1, new.content, now),
            id,
            owner,
            slug,
            name: new.name.into_inner(),
            category: new.category,
            description: new.description.into_inner(),
            created_at: now,
            updated_at: now,
        }
    }

    fn version(
        &self,
        particle: &ParticleId,
        number: u32,
        content: Content,
        at: DateTime<Utc>,
    ) -> ParticleVersion {
        ParticleVersion {
            id: ParticleVersionId::generate(),
            particle_id: particle.clone(),
            number,
            token_count: self.counter.count(content.as_str()),
            content: content.into_inner(),
            created_at: at,
        }
    }

    pub async fn get_particle(
        &self,
        organization: &OrganizationId,
        id: &ParticleId,
    ) -> Result<Particle, PromptError> {
        self.particles
            .get(organization, id)
            .await?
            .ok_or_else(|| PromptError::ParticleNotFound(id.clone()))
    }

    /// The organization's particles, or the system's when `system` is set.
    pub async fn list_particles(
        &self,
        organization: &OrganizationId,
        system: bool,
        category: Option<Category>,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<Particle>, PromptError> {
        let owner = listed_owner(organization, system);
        let cursor_owner = list_cursor_owner(organization, system);
        let after = self.decode(PARTICLE_LIST, &cursor_owner, cursor)?;
        let rows = self
            .particles
            .list(&owner, category, &PageRequest { limit, after })
            .await?;
        let total = self.particles.count(&owner, category).await?;
        Ok(Page::from_overfetch(rows, limit, Some(total), |last| {
            self.cursors.encode(PARTICLE_LIST, &cursor_owner, &last.id)
        }))
    }

    /// Sets a particle's content. A change creates the next version (unpinned placements
    /// follow it); identical content creates none. Returns the particle and whether a
    /// version was created.
    pub async fn update_content(
        &self,
        organization: &OrganizationId,
        id: &ParticleId,
        content: Content,
    ) -> Result<(Particle, bool), PromptError> {
        for _ in 0..VERSION_ATTEMPTS {
            let mut particle = self.owned_particle(organization, id).await?;
            if particle.latest.content == content.as_str() {
                return Ok((particle, false));
            }
            let now = self.clock.now();
            let number = particle.latest.number.saturating_add(1);
            let version = self.version(id, number, content.clone(), now);
            let audit = self.audit(
                organization,
                "particle.update",
                "particle",
                id.as_str(),
                now,
            );
            if self
                .particles
                .add_version(&particle.owner, &version, &audit)
                .await?
            {
                particle.latest = version;
                particle.updated_at = now;
                return Ok((particle, true));
            }
        }
        Err(PromptError::ConcurrentChange(id.clone()))
    }

    /// Replaces a particle: its content (a change creates the next version, identical
    /// content none) and, when `changes` names any, its name and description.
    pub async fn replace_particle(
        &self,
        organization: &OrganizationId,
        id: &ParticleId,
        content: Content,
        changes: ParticleChanges,
    ) -> Result<Particle, PromptError> {
        let (particle, _) = self.update_content(organization, id, content).await?;
        if changes.is_empty() {
            return Ok(particle);
        }
        self.update_particle(organization, id, changes).await
    }

    /// Renames or re-describes a particle; never creates a version.
    pub async fn update_particle(
        &self,
        organization: &OrganizationId,
        id: &ParticleId,
        changes: ParticleChanges,
    ) -> Result<Particle, PromptError> {
        let particle = self.owned_particle(organization, id).await?;
        if changes.is_empty() {
            return Ok(particle);
        }
        let now = self.clock.now();
        let audit = self.audit(
            organization,
            "particle.update",
            "particle",
            id.as_str(),
            now,
        );
        let updated = self
            .particles
            .update_details(
                &particle.owner,
                id,
                changes.name.as_ref().map_or(&particle.name, |n| n.as_str()),
                changes
                    .description
                    .as_ref()
                    .map_or(&particle.description, |d| d.as_str()),
                now,
                &audit,
            )
            .await?;
        if !updated {
            return Err(PromptError::ParticleNotFound(id.clone()));
        }
        self.get_particle(organization, id).await
    }

    /// Deletes a particle; refused while a system prompt places it.
    pub async fn delete_particle(
        &self,
        organization: &OrganizationId,
        id: &ParticleId,
    ) -> Result<(), PromptError> {
        let particle = self.owned_particle(organization, id).await?;
        let now = self.clock.now();
        let audit = self.audit(
            organization,
            "particle.delete",
            "particle",
            id.as_str(),
            now,
        );
        match self
            .particles
            .delete(&particle.owner, id, now, &audit)
            .await?
        {
            ParticleDeletion::Deleted => Ok(()),
            ParticleDeletion::NotFound => Err(PromptError::ParticleNotFound(id.clone())),
            ParticleDeletion::Referenced(prompts) => Err(PromptError::ParticleInUse {
                particle: id.clone(),
                prompts,
            }),
        }
    }

    pub async fn list_versions(
        &self,
        organization: &OrganizationId,
        id: &ParticleId,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<ParticleVersion>, PromptError> {
        let particle = self.get_particle(organization, id).await?;
        let cursor_owner = CursorCodec::owner(organization.as_str(), id.as_str());
        let after = self.decode(VERSION_LIST, &cursor_owner, cursor)?;
        let rows = self
            .particles
            .versions(organization, id, &PageRequest { limit, after })
            .await?;
        let total = u64::from(particle.latest.number);
        Ok(Page::from_overfetch(rows, limit, Some(total), |last| {
            self.cursors
                .encode(VERSION_LIST, &cursor_owner, &last.number)
        }))
    }

    pub async fn get_version(
        &self,
        organization: &OrganizationId,
        id: &ParticleId,
        number: u32,
    ) -> Result<ParticleVersion, PromptError> {
        self.particles
            .version(organization, id, number)
            .await?
            .ok_or_else(|| PromptError::VersionNotFound {
                particle: id.clone(),
                number,
            })
    }

    /// A visible particle the organization may change (not a system one).
    async fn owned_particle(
        &self,
        organization: &OrganizationId,
        id: &ParticleId,
    ) -> Result<Particle, PromptError> {
        let particle = self.get_particle(organization, id).await?;
        if particle.owner.is_system() {
            return Err(PromptError::SystemManaged(format!("particle {id}")));
        }
        Ok(particle)
    }

    // ----- system prompts -----

    /// Creates a system prompt with its initial particles (all validated before anything
    /// is stored; errors point at `body.particles[i]`).
    pub async fn create_system_prompt(
        &self,
        organization: &OrganizationId,
        new: NewSystemPrompt,
    ) -> Result<SystemPromptView, PromptError> {
        let now = self.clock.now();
        let prompt = SystemPrompt {
            id: SystemPromptId::generate(),
            owner: Owner::Organization(organization.clone()),
            slug: None,
            name: new.name.into_inner(),
            description: new.description.into_inner(),
            enabled: new.enabled,
            created_at: now,
            updated_at: now,
        };
        let mut associations = Vec::with_capacity(new.particles.len());
        let mut invalid = Vec::new();
        for (index, placement) in new.particles.iter().enumerate() {
            let loc = vec!["body".into(), "particles".into(), index.into()];
            match self.check_placement(organization, placement, &loc).await {
                Ok(pin) => associations.push(Association {
                    id: AssociationId::generate(),
                    system_prompt_id: prompt.id.clone(),
                    particle_id: placement.particle_id.clone(),
                    order: placement.order,
                    pin,
                    valid_from: now,
                }),
                Err(PromptError::Invalid(errors)) => invalid.extend(errors),
                Err(other) => return Err(other),
            }
        }
        if !invalid.is_empty() {
            return Err(PromptError::Invalid(invalid));
        }
        let audit = self.audit(
            organization,
            "system_prompt.create",
            "system_prompt",
            prompt.id.as_str(),
            now,
        );
        self.prompts.insert(&prompt, &associations, &audit).await?;
        self.view(prompt).await
    }

    pub async fn get_system_prompt(
        &self,
        organization: &OrganizationId,
        id: &SystemPromptId,
    ) -> Result<SystemPromptView, PromptError> {
        let prompt = self.visible_prompt(organization, id).await?;
        self.view(prompt).await
    }

    /// The organization's system prompts, or the system profiles when `system` is set.
    pub async fn list_system_prompts(
        &self,
        organization: &OrganizationId,
        system: bool,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<SystemPromptView>, PromptError> {
        let owner = listed_owner(organization, system);
        let cursor_owner = list_cursor_owner(organization, system);
        let after = self.decode(SYSTEM_PROMPT_LIST, &cursor_owner, cursor)?;
        let rows = self
            .prompts
            .list(&owner, &PageRequest { limit, after })
            .await?;
        let total = self.prompts.count(&owner).await?;
        let page = Page::from_overfetch(rows, limit, Some(total), |last| {
            self.cursors
                .encode(SYSTEM_PROMPT_LIST, &cursor_owner, &last.id)
        });
        let ids: Vec<SystemPromptId> = page.items.iter().map(|p| p.id.clone()).collect();
        let mut by_prompt: HashMap<SystemPromptId, Vec<ResolvedAssociation>> = HashMap::new();
        for entry in self.prompts.layouts(&ids, None).await? {
            by_prompt
                .entry(entry.association.system_prompt_id.clone())
                .or_default()
                .push(entry);
        }
        Ok(page.map(|prompt| SystemPromptView {
            layout: Layout::new(by_prompt.remove(&prompt.id).unwrap_or_default()),
            prompt,
        }))
    }

    pub async fn update_system_prompt(
        &self,
        organization: &OrganizationId,
        id: &SystemPromptId,
        changes: SystemPromptChanges,
    ) -> Result<SystemPromptView, PromptError> {
        let mut prompt = self.owned_prompt(organization, id).await?;
        if let Some(name) = changes.name {
            prompt.name = name.into_inner();
        }
        if let Some(description) = changes.description {
            prompt.description = description.into_inner();
        }
        if let Some(enabled) = changes.enabled {
            prompt.enabled = enabled;
        }
        prompt.updated_at = self.clock.now();
        let audit = self.audit(
            organization,
            "system_prompt.update",
            "system_prompt",
            id.as_str(),
            prompt.updated_at,
        );
        if !self.prompts.update(&prompt.owner, &prompt, &audit).await? {
            return Err(PromptError::SystemPromptNotFound(id.clone()));
        }
        self.view(prompt).await
    }

    pub async fn delete_system_prompt(
        &self,
        organization: &OrganizationId,
        id: &SystemPromptId,
    ) -> Result<(), PromptError> {
        let prompt = self.owned_prompt(organization, id).await?;
        let audit = self.audit(
            organization,
            "system_prompt.delete",
            "system_prompt",
            id.as_str(),
            self.clock.now(),
        );
        if self.prompts.delete(&prompt.owner, id, &audit).await? {
            Ok(())
        } else {
            Err(PromptError::SystemPromptNotFound(id.clone()))
        }
    }

    /// Places a particle in a system prompt (errors point at `body.particleId` and
    /// `body.particleVersionId`).
    pub async fn add_particle(
        &self,
        organization: &OrganizationId,
        prompt_id: &SystemPromptId,
        placement: NewAssociation,
    ) -> Result<ResolvedAssociation, PromptError> {
        let prompt = self.owned_prompt(organization, prompt_id).await?;
        let pin = self
            .check_placement(organization, &placement, &["body".into()])
            .await?;
        let association = Association {
            id: AssociationId::generate(),
            system_prompt_id: prompt_id.clone(),
            particle_id: placement.particle_id,
            order: placement.order,
            pin,
            valid_from: self.clock.now(),
        };
        let audit = self.audit(
            organization,
            "system_prompt_particle.add",
            "system_prompt_particle",
            association.id.as_str(),
            association.valid_from,
        );
        if !self
            .prompts
            .add_association(&prompt.owner, &association, &audit)
            .await?
        {
            return Err(PromptError::SystemPromptNotFound(prompt_id.clone()));
        }
        self.current_association(prompt_id, &association.id).await
    }

    /// Moves a placement (`order`) and/or pins or unpins it.
    pub async fn update_association(
        &self,
        organization: &OrganizationId,
        prompt_id: &SystemPromptId,
        id: &AssociationId,
        changes: AssociationChanges,
    ) -> Result<ResolvedAssociation, PromptError> {
        let prompt = self.owned_prompt(organization, prompt_id).await?;
        let current = self.current_association(prompt_id, id).await?.association;
        let order = changes.order.unwrap_or(current.order);
        let pin = match changes.pin {
            None => current.pin,
            Some(None) => None,
            Some(Some(version_id)) => Some(
                self.check_pin(
                    organization,
                    &current.particle_id,
                    &version_id,
                    &["body".into()],
                )
                .await?,
            ),
        };
        let now = self.clock.now();
        let audit = self.audit(
            organization,
            "system_prompt_particle.update",
            "system_prompt_particle",
            id.as_str(),
            now,
        );
        if !self
            .prompts
            .update_association(&prompt.owner, prompt_id, id, order, pin, now, &audit)
            .await?
        {
            return Err(PromptError::AssociationNotFound(id.clone()));
        }
        self.current_association(prompt_id, id).await
    }

    pub async fn remove_association(
        &self,
        organization: &OrganizationId,
        prompt_id: &SystemPromptId,
        id: &AssociationId,
    ) -> Result<(), PromptError> {
        let prompt = self.owned_prompt(organization, prompt_id).await?;
        let now = self.clock.now();
        let audit = self.audit(
            organization,
            "system_prompt_particle.remove",
            "system_prompt_particle",
            id.as_str(),
            now,
        );
        if self
            .prompts
            .remove_association(&prompt.owner, prompt_id, id, now, &audit)
            .await?
        {
            Ok(())
        } else {
            Err(PromptError::AssociationNotFound(id.clone()))
        }
    }

    /// Composes a visible system prompt as it is now, or as it was at `at` (exact: versions
    /// are immutable and placements keep their history). `at` in the future is refused.
    pub async fn compose(
        &self,
        organization: &OrganizationId,
        id: &SystemPromptId,
        at: Option<DateTime<Utc>>,
    ) -> Result<Composition, PromptError> {
        if let Some(at) = at
            && at > self.clock.now()
        {
            return Err(PromptError::Invalid(vec![FieldError::new(
                ["query".into(), "at".into()],
                "must not be in the future",
                "value_error",
            )]));
        }
        self.visible_prompt(organization, id).await?;
        let layout = Layout::new(self.prompts.layouts(std::slice::from_ref(id), at).await?);
        Ok(compose(&layout, self.counter.as_ref()))
    }

    async fn view(&self, prompt: SystemPrompt) -> Result<SystemPromptView, PromptError> {
        let layout = Layout::new(
            self.prompts
                .layouts(std::slice::from_ref(&prompt.id), None)
                .await?,
        );
        Ok(SystemPromptView { prompt, layout })
    }

    async fn current_association(
        &self,
        prompt: &SystemPromptId,
        id: &AssociationId,
    ) -> Result<ResolvedAssociation, PromptError> {
        self.prompts
            .layouts(std::slice::from_ref(prompt), None)
            .await?
            .into_iter()
            .find(|entry| &entry.association.id == id)
            .ok_or_else(|| PromptError::AssociationNotFound(id.clone()))
    }

    async fn visible_prompt(
        &self,
        organization: &OrganizationId,
        id: &SystemPromptId,
    ) -> Result<SystemPrompt, PromptError> {
        self.prompts
            .get(organization, id)
            .await?
            .ok_or_else(|| PromptError::SystemPromptNotFound(id.clone()))
    }

    async fn owned_prompt(
        &self,
        organization: &OrganizationId,
        id: &SystemPromptId,
    ) -> Result<SystemPrompt, PromptError> {
        let prompt = self.visible_prompt(organization, id).await?;
        if prompt.owner.is_system() {
            return Err(PromptError::SystemManaged(format!("system prompt {id}")));
        }
        Ok(prompt)
    }

    /// Checks that the particle (and pinned version) of a placement exist for the
    /// organization; an unknown or foreign one is invalid input at `loc`.
    async fn check_placement(
        &self,
        organization: &OrganizationId,
        placement: &NewAssociation,
        loc: &[LocSegment],
    ) -> Result<Option<Pin>, PromptError> {
        if self
            .particles
            .get(organization, &placement.particle_id)
            .await?
            .is_none()
        {
            return Err(invalid_at(
                loc,
                "particleId",
                format!("particle {} was not found", placement.particle_id),
                "not_found",
            ));
        }
        match &placement.pin {
            None => Ok(None),
            Some(version_id) => self
                .check_pin(organization, &placement.particle_id, version_id, loc)
                .await
                .map(Some),
        }
    }

    async fn check_pin(
        &self,
        organization: &OrganizationId,
        particle: &ParticleId,
        version_id: &ParticleVersionId,
        loc: &[LocSegment],
    ) -> Result<Pin, PromptError> {
        match self
            .particles
            .version_by_id(organization, version_id)
            .await?
        {
            Some(version) if &version.particle_id == particle => Ok(Pin {
                version_id: version.id,
                number: version.number,
            }),
            _ => Err(invalid_at(
                loc,
                "particleVersionId",
                format!("particle {particle} has no version {version_id}"),
                "not_found",
            )),
        }
    }

    fn decode<K: serde::de::DeserializeOwned>(
        &self,
        list: &str,
        owner: &str,
        cursor: Option<&str>,
    ) -> Result<Option<K>, PromptError> {
        cursor
            .map(|c| self.cursors.decode::<K>(list, owner, c))
            .transpose()
            .map_err(|e| PromptError::Domain(DomainError::from(e)))
    }

    pub(crate) fn particles(&self) -> &dyn ParticleStore {
        self.particles.as_ref()
    }

    pub(crate) fn prompts(&self) -> &dyn SystemPromptStore {
        self.prompts.as_ref()
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    pub(crate) fn next_version(&self, particle: &Particle, content: Content) -> ParticleVersion {
        self.version(
            &particle.id,
            particle.latest.number.saturating_add(1),
            content,
            self.clock.now(),
        )
    }
}

/// Whose list a cursor pages: the organization's own records, or the system's as that
/// organization sees them (a cursor of one is refused on the other).
fn list_cursor_owner(organization: &OrganizationId, system: bool) -> String {
    if system {
        CursorCodec::owner(organization.as_str(), "system")
    } else {
        organization.as_str().to_owned()
    }
}

fn listed_owner(organization: &OrganizationId, system: bool) -> Owner {
    if system {
        Owner::System
    } else {
        Owner::Organization(organization.clone())
    }
}

fn invalid_at(loc: &[LocSegment], field: &str, msg: String, kind: &str) -> PromptError {
    let mut loc = loc.to_vec();
    loc.push(field.into());
    PromptError::Invalid(vec![FieldError::new(loc, msg, kind)])
}
