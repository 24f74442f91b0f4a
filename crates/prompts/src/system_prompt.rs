use chrono::{DateTime, Utc};

use crate::{
    AssociationId, Category, Description, Name, Owner, ParticleId, ParticleVersion,
    ParticleVersionId, SystemPromptId,
};

/// A particle to place in a system prompt; `pin` keeps it on one version.
#[derive(Debug, Clone)]
pub struct NewAssociation {
    pub particle_id: ParticleId,
    pub order: u32,
    pub pin: Option<ParticleVersionId>,
}

/// A system prompt's own fields; its particles are its `Layout`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt {
    pub id: SystemPromptId,
    pub owner: Owner,
    /// Stable kebab-case identifier of a system profile; `None` for organizations' prompts.
    pub slug: Option<String>,
    pub name: String,
    pub description: String,
    pub enabled: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A pinned particle version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub version_id: ParticleVersionId,
    pub number: u32,
}

/// A particle placed in a system prompt. Unpinned, it follows the particle's latest version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Association {
    pub id: AssociationId,
    pub system_prompt_id: SystemPromptId,
    pub particle_id: ParticleId,
    pub order: u32,
    pub pin: Option<Pin>,
    /// When this placement (with this order and pin) took effect.
    pub valid_from: DateTime<Utc>,
}

/// An association with the particle version it resolves to at the moment asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedAssociation {
    pub association: Association,
    pub particle_name: String,
    pub category: Category,
    pub version: ParticleVersion,
}

/// The particles of a system prompt at one moment, in composition order: by category
/// (role, tone, guardrails, constraints, format), then `order`, then placement id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout(Vec<ResolvedAssociation>);

impl Layout {
    pub fn new(mut entries: Vec<ResolvedAssociation>) -> Self {
        entries.sort_by(|a, b| {
            (a.category, a.association.order, &a.association.id).cmp(&(
                b.category,
                b.association.order,
                &b.association.id,
            ))
        });
        Self(entries)
    }

    pub fn entries(&self) -> &[ResolvedAssociation] {
        &self.0
    }

    pub fn find(&self, id: &AssociationId) -> Option<&ResolvedAssociation> {
        self.0.iter().find(|entry| &entry.association.id == id)
    }

    /// The sum of the particles' token counts.
    pub fn total_token_count(&self) -> u32 {
        self.0
            .iter()
            .map(|entry| entry.version.token_count)
            .fold(0, u32::saturating_add)
    }

    pub fn particle_count(&self) -> u32 {
        u32::try_from(self.0.len()).unwrap_or(u32::MAX)
    }
}

/// A system prompt with its current particles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPromptView {
    pub prompt: SystemPrompt,
    pub layout: Layout,
}

/// What a new system prompt is made of.
#[derive(Debug, Clone)]
pub struct NewSystemPrompt {
    pub name: Name,
    pub description: Description,
    pub enabled: bool,
    pub particles: Vec<NewAssociation>,
}

/// Changes of a system prompt's own fields.
#[derive(Debug, Clone, Default)]
pub struct SystemPromptChanges {
    pub name: Option<Name>,
    pub description: Option<Description>,
    pub enabled: Option<bool>,
}

/// Changes of a placement: a new order, and/or a new pin (`Some(None)` unpins).
#[derive(Debug, Clone, Default)]
pub struct AssociationChanges {
    pub order: Option<u32>,
    pub pin: Option<Option<ParticleVersionId>>,
}
