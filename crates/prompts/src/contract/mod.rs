//! The `ParticleStore` and `SystemPromptStore` contract, for anyone implementing the ports:
//! each function checks promises of the traits against fresh, empty stores (a
//! [`PromptStores`]), and [`prompt_store_contract!`](crate::prompt_store_contract) turns
//! them into tests. Tessera runs it against the in-memory reference and both SQL stores.
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod integrity;
mod particles;
mod system_prompts;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, TimeZone, Utc};
use tessera_kernel::{DomainError, Limit, OrganizationId, PageRequest};

pub use self::{integrity::*, particles::*, system_prompts::*};
use crate::{
    Association, AssociationId, Category, Owner, Particle, ParticleDeletion, ParticleId,
    ParticleStore, ParticleVersion, ParticleVersionId, Pin, ResolvedAssociation, SystemPrompt,
    SystemPromptId, SystemPromptStore,
};

/// Runs every check of the contract as a `#[tokio::test]` of the calling crate, each on its
/// own stores made by `$factory`: an expression that, called with no argument, gives a
/// future of `(stores, guard)`, `stores` a [`PromptStores`](crate::contract::PromptStores)
/// (the guard, e.g. a throwaway database, lives until the test ends).
#[macro_export]
macro_rules! prompt_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            particles_read_back_unchanged,
            particles_are_visible_to_their_organization_and_system_ones_to_all,
            particle_lists_are_ordered_paged_and_filtered,
            add_version_appends_only_the_next_number,
            concurrent_writers_of_one_version_number_have_one_winner,
            update_details_changes_only_the_owners_live_particles,
            delete_is_refused_while_a_prompt_places_the_particle,
            deleted_particles_are_invisible_but_resolve_past_layouts,
            prompts_read_back_and_are_visible_to_their_organization,
            layouts_resolve_pins_and_latest_versions_now_and_then,
            layouts_tell_microseconds_apart,
            placement_changes_keep_their_history,
            placements_are_added_to_the_owners_prompts_only,
            prompts_are_updated_and_deleted_by_their_owner,
            slugs_and_ids_are_unique,
            duplicate_ids_conflict_and_change_nothing,
            deleted_and_foreign_particles_cannot_be_placed,
            deletion_and_placement_race_safely,
        );
    };
}

/// What the checks run on: both stores over one empty state, and a way to make an
/// organization exist before records refer to it (where foreign keys need it).
#[async_trait]
pub trait PromptStores: Send + Sync {
    fn particles(&self) -> Arc<dyn ParticleStore>;

    fn prompts(&self) -> Arc<dyn SystemPromptStore>;

    /// Makes the organization `id` (named `name`) exist, e.g. stores it where records refer
    /// to it; nothing for stores that keep no organizations. Panics if it cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);
}

/// The in-memory reference: both ports on one state, no organizations to store.
#[cfg(feature = "memory")]
#[async_trait]
impl PromptStores for Arc<crate::memory::InMemoryPromptStore> {
    fn particles(&self) -> Arc<dyn ParticleStore> {
        self.clone()
    }

    fn prompts(&self) -> Arc<dyn SystemPromptStore> {
        self.clone()
    }

    async fn organization_exists(&self, _id: &OrganizationId, _name: &str) {}
}

// ----- fixture -----

/// Both stores of one check, and the helpers that fill them.
struct Fixture<'a> {
    stores: &'a dyn PromptStores,
    particles: Arc<dyn ParticleStore>,
    prompts: Arc<dyn SystemPromptStore>,
}

impl<'a> Fixture<'a> {
    fn new(stores: &'a impl PromptStores) -> Self {
        Self {
            stores,
            particles: stores.particles(),
            prompts: stores.prompts(),
        }
    }

    /// A fresh organization (made to exist first, where records refer to it).
    async fn organization(&self, name: &str) -> OrganizationId {
        let id = OrganizationId::generate();
        self.stores.organization_exists(&id, name).await;
        id
    }

    /// Stores a particle with its first version, created at `at`.
    async fn particle(
        &self,
        owner: &Owner,
        name: &str,
        category: Category,
        created: DateTime<Utc>,
    ) -> Particle {
        let particle = particle(owner, name, category, created);
        self.particles.insert(&particle, &[]).await.unwrap();
        particle
    }

    /// Appends the next version of `particle`, created at `created`, and returns it.
    async fn next_version(
        &self,
        particle: &mut Particle,
        content: &str,
        created: DateTime<Utc>,
    ) -> ParticleVersion {
        let version = version(&particle.id, particle.latest.number + 1, content, created);
        assert!(
            self.particles
                .add_version(&particle.owner, &version, &[])
                .await
                .unwrap()
        );
        particle.latest = version.clone();
        particle.updated_at = created;
        version
    }

    async fn prompt(
        &self,
        owner: &Owner,
        name: &str,
        created: DateTime<Utc>,
        placements: &[(&Particle, u32, Option<&ParticleVersion>)],
    ) -> (SystemPrompt, Vec<Association>) {
        let prompt = prompt(owner, name, created);
        let associations: Vec<Association> = placements
            .iter()
            .map(|(particle, order, pin)| association(&prompt, particle, *order, *pin, created))
            .collect();
        self.prompts
            .insert(&prompt, &associations, &[])
            .await
            .unwrap();
        (prompt, associations)
    }

    /// The layout of one prompt, sorted as the domain sorts it.
    async fn layout(&self, id: &SystemPromptId, at: Option<DateTime<Utc>>) -> Vec<Resolved> {
        let mut entries: Vec<Resolved> = self
            .prompts
            .layouts(std::slice::from_ref(id), at)
            .await
            .unwrap()
            .into_iter()
            .map(Resolved::from)
            .collect();
        entries.sort();
        entries
    }
}

/// The comparable essentials of a resolved placement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Resolved {
    category: Category,
    order: u32,
    association: AssociationId,
    particle: ParticleId,
    name: String,
    number: u32,
    content: String,
    pinned: Option<u32>,
    valid_from: DateTime<Utc>,
}

impl From<ResolvedAssociation> for Resolved {
    fn from(entry: ResolvedAssociation) -> Self {
        assert_eq!(entry.version.particle_id, entry.association.particle_id);
        if let Some(pin) = &entry.association.pin {
            assert_eq!(
                pin.version_id, entry.version.id,
                "a pin resolves to its version"
            );
        }
        Self {
            category: entry.category,
            order: entry.association.order,
            association: entry.association.id,
            particle: entry.association.particle_id,
            name: entry.particle_name,
            number: entry.version.number,
            content: entry.version.content,
            pinned: entry.association.pin.map(|pin| pin.number),
            valid_from: entry.association.valid_from,
        }
    }
}

/// A placement as of one moment: id, order, version number, pinned number, valid from.
type Summary = (AssociationId, u32, u32, Option<u32>, DateTime<Utc>);

// ----- records -----

/// Microsecond precision, as the domain's clock produces; `at(s)` is `s` seconds later.
fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap()
        + Duration::microseconds(123_456)
        + Duration::seconds(seconds)
}

fn micros(n: i64) -> Duration {
    Duration::microseconds(n)
}

fn version(
    particle: &ParticleId,
    number: u32,
    content: &str,
    created: DateTime<Utc>,
) -> ParticleVersion {
    ParticleVersion {
        id: ParticleVersionId::generate(),
        particle_id: particle.clone(),
        number,
        content: content.to_owned(),
        token_count: u32::try_from(content.split_whitespace().count()).unwrap(),
        created_at: created,
    }
}

fn particle(owner: &Owner, name: &str, category: Category, created: DateTime<Utc>) -> Particle {
    let id = ParticleId::generate();
    Particle {
        latest: version(&id, 1, &format!("{name} v1"), created),
        id,
        owner: owner.clone(),
        slug: None,
        name: name.to_owned(),
        category,
        description: format!("about {name}"),
        created_at: created,
        updated_at: created,
    }
}

fn prompt(owner: &Owner, name: &str, created: DateTime<Utc>) -> SystemPrompt {
    SystemPrompt {
        id: SystemPromptId::generate(),
        owner: owner.clone(),
        slug: None,
        name: name.to_owned(),
        description: format!("about {name}"),
        enabled: true,
        created_at: created,
        updated_at: created,
    }
}

fn association(
    prompt: &SystemPrompt,
    particle: &Particle,
    order: u32,
    pin: Option<&ParticleVersion>,
    valid_from: DateTime<Utc>,
) -> Association {
    Association {
        id: AssociationId::generate(),
        system_prompt_id: prompt.id.clone(),
        particle_id: particle.id.clone(),
        order,
        pin: pin.map(pin_of),
        valid_from,
    }
}

fn pin_of(version: &ParticleVersion) -> Pin {
    Pin {
        version_id: version.id.clone(),
        number: version.number,
    }
}

fn org(id: &OrganizationId) -> Owner {
    Owner::Organization(id.clone())
}

fn first(limit: i64) -> PageRequest<ParticleId> {
    PageRequest::first(Limit::new(limit).unwrap())
}

fn ids(particles: &[Particle]) -> Vec<ParticleId> {
    particles.iter().map(|p| p.id.clone()).collect()
}

fn is_conflict(result: Result<(), DomainError>) -> bool {
    matches!(result, Err(DomainError::Conflict { .. }))
}
