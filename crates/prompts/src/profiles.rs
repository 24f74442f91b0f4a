//! System profiles: read-only system prompts every organization can read and compose,
//! seeded from `profiles.toml` at start-up. Seeding is idempotent and converges: a changed
//! content becomes a new version, a changed layout is reconciled, nothing is duplicated.

use serde::Deserialize;

use crate::{
    Association, AssociationId, Category, Content, Description, Name, NewParticle, Owner, Particle,
    PromptError, PromptService, SystemPrompt, SystemPromptId, system_prompt::Layout,
};

/// The profiles shipped with Tessera.
const BUILTIN: &str = include_str!("../profiles.toml");

/// One particle of a profile.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileParticle {
    pub slug: String,
    pub name: String,
    pub category: Category,
    #[serde(default)]
    pub description: String,
    pub content: String,
}

/// One system profile: a system prompt made of its particles, in file order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemProfile {
    pub slug: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub particles: Vec<ProfileParticle>,
}

/// A set of profiles, validated.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemProfiles {
    pub profiles: Vec<SystemProfile>,
}

/// Why a profiles file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("system profiles: {0}")]
pub struct ProfilesError(String);

fn is_kebab_case(slug: &str) -> bool {
    !slug.is_empty()
        && !slug.starts_with('-')
        && !slug.ends_with('-')
        && !slug.contains("--")
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

impl SystemProfiles {
    /// The profiles in the repository's `crates/prompts/profiles.toml`.
    pub fn builtin() -> Result<Self, ProfilesError> {
        Self::parse(BUILTIN)
    }

    pub fn parse(text: &str) -> Result<Self, ProfilesError> {
        let profiles: SystemProfiles =
            toml::from_str(text).map_err(|e| ProfilesError(e.to_string()))?;
        let mut slugs = std::collections::HashSet::new();
        for profile in &profiles.profiles {
            let problem =
                |what: String| ProfilesError(format!("profile `{}`: {what}", profile.slug));
            if !is_kebab_case(&profile.slug) {
                return Err(problem("slug must be kebab-case".into()));
            }
            if !slugs.insert(format!("profile:{}", profile.slug)) {
                return Err(problem("slug is used twice".into()));
            }
            Name::parse(&profile.name).map_err(|e| problem(format!("name {e}")))?;
            Description::parse(&profile.description)
                .map_err(|e| problem(format!("description {e}")))?;
            for particle in &profile.particles {
                let problem =
                    |what: String| problem(format!("particle `{}`: {what}", particle.slug));
                if !is_kebab_case(&particle.slug) {
                    return Err(problem("slug must be kebab-case".into()));
                }
                if !slugs.insert(format!("particle:{}", particle.slug)) {
                    return Err(problem("slug is used twice".into()));
                }
                particle_fields(particle).map_err(|e| problem(e.to_string()))?;
            }
        }
        Ok(profiles)
    }
}

fn particle_fields(particle: &ProfileParticle) -> Result<NewParticle, crate::TextError> {
    Ok(NewParticle {
        name: Name::parse(&particle.name)?,
        category: particle.category,
        content: Content::parse(&particle.content)?,
        description: Description::parse(&particle.description)?,
    })
}

/// Treats "another replica inserted it first" as success while seeding.
fn tolerate_conflict(result: Result<(), tessera_kernel::DomainError>) -> Result<(), PromptError> {
    match result {
        Ok(()) | Err(tessera_kernel::DomainError::Conflict { .. }) => Ok(()),
        Err(other) => Err(other.into()),
    }
}

impl PromptService {
    /// Creates or updates the system profiles and their particles to match `profiles`.
    pub async fn seed_system_profiles(&self, profiles: &SystemProfiles) -> Result<(), PromptError> {
        for profile in &profiles.profiles {
            let mut particles = Vec::with_capacity(profile.particles.len());
            for seed in &profile.particles {
                particles.push(self.seed_particle(seed).await?);
            }
            self.seed_profile(profile, &particles).await?;
        }
        Ok(())
    }

    async fn seed_particle(&self, seed: &ProfileParticle) -> Result<Particle, PromptError> {
        let fields = particle_fields(seed)
            .map_err(|e| PromptError::Domain(tessera_kernel::DomainError::internal(e)))?;
        let Some(existing) = self.particles().get_system(&seed.slug).await? else {
            let particle = self.new_particle(Owner::System, Some(seed.slug.clone()), fields);
            tolerate_conflict(self.particles().insert(&particle, &[]).await)?;
            return self.system_particle(&seed.slug).await;
        };
        if existing.latest.content != seed.content {
            let version = self.next_version(&existing, fields.content);
            self.particles()
                .add_version(&Owner::System, &version, &[])
                .await?;
        }
        if existing.name != seed.name || existing.description != seed.description {
            self.particles()
                .update_details(
                    &Owner::System,
                    &existing.id,
                    &seed.name,
                    &seed.description,
                    self.now(),
                    &[],
                )
                .await?;
        }
        self.system_particle(&seed.slug).await
    }

    async fn system_particle(&self, slug: &str) -> Result<Particle, PromptError> {
        self.particles().get_system(slug).await?.ok_or_else(|| {
            tessera_kernel::DomainError::internal(format!("system particle {slug} vanished")).into()
        })
    }

    async fn seed_profile(
        &self,
        profile: &SystemProfile,
        particles: &[Particle],
    ) -> Result<(), PromptError> {
        let now = self.now();
        let Some(mut prompt) = self.prompts().get_system(&profile.slug).await? else {
            let prompt = SystemPrompt {
                id: SystemPromptId::generate(),
                owner: Owner::System,
                slug: Some(profile.slug.clone()),
                name: profile.name.clone(),
                description: profile.description.clone(),
                enabled: true,
                created_at: now,
                updated_at: now,
            };
            let associations: Vec<Association> = particles
                .iter()
                .zip(0u32..)
                .map(|(particle, order)| Association {
                    id: AssociationId::generate(),
                    system_prompt_id: prompt.id.clone(),
                    particle_id: particle.id.clone(),
                    order,
                    pin: None,
                    valid_from: now,
                })
                .collect();
            return tolerate_conflict(self.prompts().insert(&prompt, &associations, &[]).await);
        };
        if prompt.name != profile.name || prompt.description != profile.description {
            prompt.name = profile.name.clone();
            prompt.description = profile.description.clone();
            prompt.updated_at = now;
            self.prompts().update(&Owner::System, &prompt, &[]).await?;
        }
        let layout = Layout::new(
            self.prompts()
                .layouts(std::slice::from_ref(&prompt.id), None)
                .await?,
        );
        for entry in layout.entries() {
            let wanted = particles
                .iter()
                .zip(0u32..)
                .find(|(particle, _)| particle.id == entry.association.particle_id);
            match wanted {
                None => {
                    self.prompts()
                        .remove_association(
                            &Owner::System,
                            &prompt.id,
                            &entry.association.id,
                            now,
                            &[],
                        )
                        .await?;
                }
                Some((_, order)) if order != entry.association.order => {
                    self.prompts()
                        .update_association(
                            &Owner::System,
                            &prompt.id,
                            &entry.association.id,
                            order,
                            None,
                            now,
                            &[],
                        )
                        .await?;
                }
                Some(_) => {}
            }
        }
        for (particle, order) in particles.iter().zip(0u32..) {
            let placed = layout
                .entries()
                .iter()
                .any(|entry| entry.association.particle_id == particle.id);
            if !placed {
                let association = Association {
                    id: AssociationId::generate(),
                    system_prompt_id: prompt.id.clone(),
                    particle_id: particle.id.clone(),
                    order,
                    pin: None,
                    valid_from: now,
                };
                self.prompts()
                    .add_association(&Owner::System, &association, &[])
                    .await?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_profiles_are_valid() {
        let profiles = SystemProfiles::builtin().unwrap();
        assert!(profiles.profiles.len() >= 3);
        for profile in &profiles.profiles {
            let mut categories: Vec<Category> =
                profile.particles.iter().map(|p| p.category).collect();
            categories.sort();
            assert_eq!(
                categories,
                Category::ALL,
                "{} has one particle per category",
                profile.slug
            );
        }
    }

    #[test]
    fn slugs_must_be_kebab_case_and_unique() {
        assert!(is_kebab_case("customer-support-2"));
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a b"] {
            assert!(!is_kebab_case(bad), "{bad}");
        }
        let twice = r#"
            [[profiles]]
            slug = "a"
            name = "A"
            particles = []
            [[profiles]]
            slug = "a"
            name = "A again"
            particles = []
        "#;
        assert!(SystemProfiles::parse(twice).is_err());
    }

    #[test]
    fn invalid_particles_are_refused() {
        let blank = r#"
            [[profiles]]
            slug = "a"
            name = "A"
            [[profiles.particles]]
            slug = "a-role"
            name = "Role"
            category = "role"
            content = "   "
        "#;
        let error = SystemProfiles::parse(blank).unwrap_err();
        assert!(error.to_string().contains("a-role"), "{error}");
    }
}
