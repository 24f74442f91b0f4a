//! The `ParticleStore` and `SystemPromptStore` contract, run against every adapter: SQLite
//! and PostgreSQL, and the in-memory reference (`tessera_prompts::memory`) so that the
//! suite itself is checked against the behaviour it stands for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use tessera_kernel::{DomainError, Limit, OrganizationId, PageRequest};
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_prompts::{
    Association, AssociationId, Category, Owner, Particle, ParticleDeletion, ParticleId,
    ParticleStore, ParticleVersion, ParticleVersionId, Pin, ResolvedAssociation, SystemPrompt,
    SystemPromptId, SystemPromptStore, memory::InMemoryPromptStore,
};
use tessera_store::{Backend, SqlOrganizationStore, SqlPromptStore, testing::TestDatabase};

// ----- fixture -----

/// Where a contract test runs.
enum Target {
    Database(Backend),
    Memory,
}

impl From<Backend> for Target {
    fn from(backend: Backend) -> Self {
        Target::Database(backend)
    }
}

/// Both stores over one empty database (or one in-memory state).
struct Fixture {
    particles: Arc<dyn ParticleStore>,
    prompts: Arc<dyn SystemPromptStore>,
    db: Option<TestDatabase>,
}

impl Fixture {
    async fn new(target: impl Into<Target>) -> Self {
        match target.into() {
            Target::Database(backend) => {
                let db = TestDatabase::of(backend).await;
                let store = Arc::new(SqlPromptStore::new(db.database.clone()));
                Self {
                    particles: store.clone(),
                    prompts: store,
                    db: Some(db),
                }
            }
            Target::Memory => {
                let store = Arc::new(InMemoryPromptStore::new());
                Self {
                    particles: store.clone(),
                    prompts: store,
                    db: None,
                }
            }
        }
    }

    /// A fresh organization (stored first where records refer to it).
    async fn organization(&self, name: &str) -> OrganizationId {
        let org = Organization {
            id: OrganizationId::generate(),
            name: name.to_owned(),
            plan: Plan::Pro,
            created_at: at(0),
            updated_at: at(0),
        };
        if let Some(db) = &self.db {
            SqlOrganizationStore::new(db.database.clone())
                .insert(&org, &[])
                .await
                .unwrap();
        }
        org.id
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

// ----- particles -----

async fn particles_read_back_unchanged(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let mut mine = particle(&org(&acme), "Rôle – Ünïcode ✓ 🚀", Category::Role, at(0));
    mine.description = String::new();
    mine.latest.content =
        "Du bist ein hilfreicher Assistent. 你好 — \"quoted\" 'text'\n\ttabs".into();
    mine.latest.token_count = 4_000_000;
    mine.updated_at = at(1) + micros(1);
    f.particles.insert(&mine, &[]).await.unwrap();
    assert_eq!(
        f.particles.get(&acme, &mine.id).await.unwrap(),
        Some(mine.clone())
    );
    assert_eq!(
        f.particles.version(&acme, &mine.id, 1).await.unwrap(),
        Some(mine.latest.clone())
    );
    assert_eq!(
        f.particles
            .version_by_id(&acme, &mine.latest.id)
            .await
            .unwrap(),
        Some(mine.latest.clone())
    );

    let mut system = particle(&Owner::System, "System tone", Category::Tone, at(2));
    system.slug = Some("system-tone".into());
    f.particles.insert(&system, &[]).await.unwrap();
    assert_eq!(
        f.particles.get_system("system-tone").await.unwrap(),
        Some(system.clone())
    );
    assert_eq!(
        f.particles.get(&acme, &system.id).await.unwrap(),
        Some(system)
    );
    assert_eq!(f.particles.get_system("unknown").await.unwrap(), None);
    assert_eq!(
        f.particles
            .get(&acme, &ParticleId::generate())
            .await
            .unwrap(),
        None
    );
    assert_eq!(f.particles.version(&acme, &mine.id, 2).await.unwrap(), None);
    assert_eq!(
        f.particles
            .version(&acme, &mine.id, u32::MAX)
            .await
            .unwrap(),
        None
    );
}

async fn particles_are_visible_to_their_organization_and_system_ones_to_all(
    target: impl Into<Target>,
) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let theirs = f
        .particle(&org(&acme), "acme role", Category::Role, at(0))
        .await;
    let system = f
        .particle(&Owner::System, "system role", Category::Role, at(1))
        .await;
    let page = PageRequest::first(Limit::DEFAULT);

    assert_eq!(f.particles.get(&globex, &theirs.id).await.unwrap(), None);
    assert!(
        f.particles
            .versions(&globex, &theirs.id, &page)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        f.particles.version(&globex, &theirs.id, 1).await.unwrap(),
        None
    );
    assert_eq!(
        f.particles
            .version_by_id(&globex, &theirs.latest.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        f.particles
            .versions(&acme, &theirs.id, &page)
            .await
            .unwrap(),
        vec![theirs.latest.clone()]
    );

    for viewer in [&acme, &globex] {
        assert_eq!(
            f.particles.get(viewer, &system.id).await.unwrap(),
            Some(system.clone())
        );
        assert_eq!(
            f.particles
                .version_by_id(viewer, &system.latest.id)
                .await
                .unwrap(),
            Some(system.latest.clone())
        );
        assert_eq!(
            f.particles
                .versions(viewer, &system.id, &page)
                .await
                .unwrap(),
            vec![system.latest.clone()]
        );
    }

    // Listings are per owner: an organization's excludes the system's particles.
    assert_eq!(
        f.particles
            .list(&org(&acme), None, &first(10))
            .await
            .unwrap(),
        vec![theirs.clone()]
    );
    assert!(
        f.particles
            .list(&org(&globex), None, &first(10))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        f.particles
            .list(&Owner::System, None, &first(10))
            .await
            .unwrap(),
        vec![system.clone()]
    );
    assert_eq!(f.particles.count(&org(&acme), None).await.unwrap(), 1);
    assert_eq!(f.particles.count(&org(&globex), None).await.unwrap(), 0);
    assert_eq!(f.particles.count(&Owner::System, None).await.unwrap(), 1);
}

async fn particle_lists_are_ordered_paged_and_filtered(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let mut mine = Vec::new();
    for i in 0..6 {
        let category = if i % 2 == 0 {
            Category::Role
        } else {
            Category::Format
        };
        mine.push(
            f.particle(&org(&acme), &format!("p{i}"), category, at(i))
                .await,
        );
        // Interleaved particles of other owners never show up.
        f.particle(&org(&globex), &format!("g{i}"), category, at(i))
            .await;
        f.particle(&Owner::System, &format!("s{i}"), category, at(i))
            .await;
    }
    let owner = org(&acme);
    let limit = Limit::new(2).unwrap();
    assert_eq!(
        f.particles
            .list(&owner, None, &PageRequest::first(limit))
            .await
            .unwrap(),
        mine[..3],
        "a page fetches one extra row to tell whether more exist"
    );
    let after = |i: usize| PageRequest {
        limit,
        after: Some(mine[i].id.clone()),
    };
    assert_eq!(
        f.particles.list(&owner, None, &after(1)).await.unwrap(),
        mine[2..5]
    );
    assert_eq!(
        f.particles.list(&owner, None, &after(4)).await.unwrap(),
        mine[5..]
    );
    assert!(
        f.particles
            .list(&owner, None, &after(5))
            .await
            .unwrap()
            .is_empty()
    );

    let roles: Vec<Particle> = mine.iter().step_by(2).cloned().collect();
    let formats: Vec<Particle> = mine.iter().skip(1).step_by(2).cloned().collect();
    assert_eq!(
        ids(&f
            .particles
            .list(&owner, Some(Category::Role), &first(10))
            .await
            .unwrap()),
        ids(&roles)
    );
    assert_eq!(
        ids(&f
            .particles
            .list(&owner, Some(Category::Format), &after(0))
            .await
            .unwrap()),
        ids(&formats)
    );
    assert!(
        f.particles
            .list(&owner, Some(Category::Tone), &first(10))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.particles.count(&owner, None).await.unwrap(), 6);
    assert_eq!(
        f.particles
            .count(&owner, Some(Category::Role))
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        f.particles
            .count(&owner, Some(Category::Tone))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        f.particles
            .count(&Owner::System, Some(Category::Format))
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        f.particles
            .count(&org(&OrganizationId::generate()), None)
            .await
            .unwrap(),
        0
    );
}

async fn add_version_appends_only_the_next_number(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let mut p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let v1 = p.latest.clone();

    let stale_owner = version(&p.id, 2, "theirs", at(1));
    assert!(
        !f.particles
            .add_version(&org(&globex), &stale_owner, &[])
            .await
            .unwrap()
    );
    assert!(
        !f.particles
            .add_version(&Owner::System, &stale_owner, &[])
            .await
            .unwrap()
    );
    for number in [0, 1, 3, u32::MAX] {
        let wrong = version(&p.id, number, "wrong number", at(1));
        assert!(
            !f.particles.add_version(&owner, &wrong, &[]).await.unwrap(),
            "version {number} is not next"
        );
    }
    let unknown = version(&ParticleId::generate(), 2, "nobody's", at(1));
    assert!(
        !f.particles
            .add_version(&owner, &unknown, &[])
            .await
            .unwrap()
    );
    assert_eq!(
        f.particles.get(&acme, &p.id).await.unwrap(),
        Some(p.clone())
    );

    let v2 = f.next_version(&mut p, "second – ✓", at(2)).await;
    assert_eq!(
        f.particles.get(&acme, &p.id).await.unwrap(),
        Some(p.clone())
    );
    assert_eq!(p.updated_at, at(2));
    let again = version(&p.id, 2, "lost the race", at(3));
    assert!(!f.particles.add_version(&owner, &again, &[]).await.unwrap());
    let v3 = f.next_version(&mut p, "third", at(4)).await;
    assert_eq!(
        f.particles.get(&acme, &p.id).await.unwrap(),
        Some(p.clone())
    );

    let all = PageRequest::first(Limit::DEFAULT);
    assert_eq!(
        f.particles.versions(&acme, &p.id, &all).await.unwrap(),
        vec![v1.clone(), v2.clone(), v3.clone()]
    );
    let limit = Limit::new(1).unwrap();
    assert_eq!(
        f.particles
            .versions(
                &acme,
                &p.id,
                &PageRequest {
                    limit,
                    after: Some(1)
                }
            )
            .await
            .unwrap(),
        vec![v2.clone(), v3.clone()]
    );
    assert!(
        f.particles
            .versions(
                &acme,
                &p.id,
                &PageRequest {
                    limit,
                    after: Some(3)
                }
            )
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        f.particles
            .versions(
                &acme,
                &p.id,
                &PageRequest {
                    limit,
                    after: Some(u32::MAX)
                }
            )
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        f.particles.version(&acme, &p.id, 2).await.unwrap(),
        Some(v2.clone())
    );
    assert_eq!(
        f.particles.version_by_id(&acme, &v3.id).await.unwrap(),
        Some(v3)
    );
    assert_eq!(
        f.particles
            .version_by_id(&acme, &ParticleVersionId::generate())
            .await
            .unwrap(),
        None
    );
}

async fn concurrent_writers_of_one_version_number_have_one_winner(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let owner = org(&acme);
    let p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let store = f.particles.clone();
            let owner = owner.clone();
            let candidate = version(&p.id, 2, &format!("writer {i}"), at(1) + micros(i));
            tokio::spawn(async move {
                let won = store.add_version(&owner, &candidate, &[]).await.unwrap();
                (won, candidate)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for writer in writers {
        let (won, candidate) = writer.await.unwrap();
        if won {
            winners.push(candidate);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one writer adds version 2");
    let stored = f.particles.get(&acme, &p.id).await.unwrap().unwrap();
    assert_eq!(stored.latest, winners[0]);
    assert_eq!(
        f.particles
            .versions(&acme, &p.id, &PageRequest::first(Limit::DEFAULT))
            .await
            .unwrap(),
        vec![p.latest.clone(), winners[0].clone()]
    );
}

async fn update_details_changes_only_the_owners_live_particles(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let mut p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let system = f
        .particle(&Owner::System, "system", Category::Tone, at(0))
        .await;

    assert!(
        !f.particles
            .update_details(&org(&globex), &p.id, "stolen", "", at(1), &[])
            .await
            .unwrap()
    );
    assert!(
        !f.particles
            .update_details(&owner, &system.id, "stolen", "", at(1), &[])
            .await
            .unwrap(),
        "an organization cannot change a system particle"
    );
    assert!(
        !f.particles
            .update_details(&owner, &ParticleId::generate(), "x", "", at(1), &[])
            .await
            .unwrap()
    );
    assert_eq!(
        f.particles.get(&acme, &p.id).await.unwrap(),
        Some(p.clone())
    );

    let later = at(5) + micros(7);
    assert!(
        f.particles
            .update_details(&owner, &p.id, "Renamed ✓", "", later, &[])
            .await
            .unwrap()
    );
    p.name = "Renamed ✓".into();
    p.description = String::new();
    p.updated_at = later;
    assert_eq!(
        f.particles.get(&acme, &p.id).await.unwrap(),
        Some(p.clone())
    );

    assert!(
        f.particles
            .update_details(&Owner::System, &system.id, "System", "changed", later, &[])
            .await
            .unwrap()
    );
    assert_eq!(
        f.particles
            .get(&acme, &system.id)
            .await
            .unwrap()
            .unwrap()
            .description,
        "changed"
    );

    assert_eq!(
        f.particles.delete(&owner, &p.id, at(6), &[]).await.unwrap(),
        ParticleDeletion::Deleted
    );
    assert!(
        !f.particles
            .update_details(&owner, &p.id, "ghost", "", at(7), &[])
            .await
            .unwrap()
    );
}

async fn delete_is_refused_while_a_prompt_places_the_particle(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let (first, placed_in_first) = f
        .prompt(
            &owner,
            "first",
            at(1),
            &[(&p, 0, None), (&p, 1, Some(&p.latest))],
        )
        .await;
    let (second, placed_in_second) = f.prompt(&owner, "second", at(1), &[(&p, 0, None)]).await;

    let mut expected = vec![first.id.clone(), second.id.clone()];
    expected.sort();
    assert_eq!(
        f.particles.delete(&owner, &p.id, at(2), &[]).await.unwrap(),
        ParticleDeletion::Referenced(expected)
    );
    assert_eq!(
        f.particles
            .delete(&org(&globex), &p.id, at(2), &[])
            .await
            .unwrap(),
        ParticleDeletion::NotFound,
        "another organization learns nothing, not even that it is in use"
    );
    assert_eq!(
        f.particles.get(&acme, &p.id).await.unwrap(),
        Some(p.clone())
    );

    for (prompt, placements) in [(&first, &placed_in_first), (&second, &placed_in_second)] {
        for placement in placements {
            assert!(
                f.prompts
                    .remove_association(&owner, &prompt.id, &placement.id, at(3), &[])
                    .await
                    .unwrap()
            );
        }
    }
    assert_eq!(
        f.particles
            .delete(&org(&globex), &p.id, at(4), &[])
            .await
            .unwrap(),
        ParticleDeletion::NotFound
    );
    assert_eq!(
        f.particles
            .delete(&Owner::System, &p.id, at(4), &[])
            .await
            .unwrap(),
        ParticleDeletion::NotFound
    );
    assert_eq!(
        f.particles.delete(&owner, &p.id, at(4), &[]).await.unwrap(),
        ParticleDeletion::Deleted
    );
    assert_eq!(
        f.particles.delete(&owner, &p.id, at(5), &[]).await.unwrap(),
        ParticleDeletion::NotFound,
        "deleted once"
    );
    assert_eq!(
        f.particles
            .delete(&owner, &ParticleId::generate(), at(5), &[])
            .await
            .unwrap(),
        ParticleDeletion::NotFound
    );
}

async fn deleted_particles_are_invisible_but_resolve_past_layouts(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let owner = org(&acme);
    let mut p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let v1 = p.latest.clone();
    let (prompt, placements) = f
        .prompt(
            &owner,
            "prompt",
            at(1),
            &[(&p, 0, None), (&p, 1, Some(&v1))],
        )
        .await;
    let v2 = f.next_version(&mut p, "second", at(2)).await;
    for placement in &placements {
        assert!(
            f.prompts
                .remove_association(&owner, &prompt.id, &placement.id, at(3), &[])
                .await
                .unwrap()
        );
    }
    assert_eq!(
        f.particles.delete(&owner, &p.id, at(4), &[]).await.unwrap(),
        ParticleDeletion::Deleted
    );

    let page = PageRequest::first(Limit::DEFAULT);
    assert_eq!(f.particles.get(&acme, &p.id).await.unwrap(), None);
    assert!(
        f.particles
            .list(&owner, None, &first(10))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.particles.count(&owner, None).await.unwrap(), 0);
    assert!(
        f.particles
            .versions(&acme, &p.id, &page)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.particles.version(&acme, &p.id, 1).await.unwrap(), None);
    assert_eq!(
        f.particles.version_by_id(&acme, &v2.id).await.unwrap(),
        None
    );
    let v3 = version(&p.id, 3, "after deletion", at(5));
    assert!(!f.particles.add_version(&owner, &v3, &[]).await.unwrap());

    assert!(f.layout(&prompt.id, None).await.is_empty());
    assert!(f.layout(&prompt.id, Some(at(4))).await.is_empty());
    let numbers = |layout: Vec<Resolved>| -> Vec<(u32, u32, Option<u32>, String)> {
        layout
            .into_iter()
            .map(|e| (e.order, e.number, e.pinned, e.name))
            .collect()
    };
    assert_eq!(
        numbers(f.layout(&prompt.id, Some(at(1))).await),
        vec![(0, 1, None, "role".into()), (1, 1, Some(1), "role".into())]
    );
    assert_eq!(
        numbers(f.layout(&prompt.id, Some(at(2) + micros(1))).await),
        vec![(0, 2, None, "role".into()), (1, 1, Some(1), "role".into())]
    );
}

// ----- system prompts -----

async fn prompts_read_back_and_are_visible_to_their_organization(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let mut mine = prompt(&owner, "Prompt – Ünïcode ✓", at(0));
    mine.enabled = false;
    mine.description = String::new();
    mine.updated_at = at(1) + micros(3);
    f.prompts.insert(&mine, &[], &[]).await.unwrap();
    let mut system = prompt(&Owner::System, "General", at(0));
    system.slug = Some("general-assistant".into());
    f.prompts.insert(&system, &[], &[]).await.unwrap();

    assert_eq!(
        f.prompts.get(&acme, &mine.id).await.unwrap(),
        Some(mine.clone())
    );
    assert_eq!(f.prompts.get(&globex, &mine.id).await.unwrap(), None);
    for viewer in [&acme, &globex] {
        assert_eq!(
            f.prompts.get(viewer, &system.id).await.unwrap(),
            Some(system.clone())
        );
    }
    assert_eq!(
        f.prompts.get_system("general-assistant").await.unwrap(),
        Some(system.clone())
    );
    assert_eq!(f.prompts.get_system("unknown").await.unwrap(), None);
    assert_eq!(
        f.prompts
            .get(&acme, &SystemPromptId::generate())
            .await
            .unwrap(),
        None
    );
    assert!(f.layout(&mine.id, None).await.is_empty());

    // Listings are per owner, ordered by id, paged with one extra row.
    let mut listed = vec![mine.clone()];
    for i in 0..4 {
        listed.push(f.prompt(&owner, &format!("p{i}"), at(i), &[]).await.0);
        f.prompt(&org(&globex), &format!("g{i}"), at(i), &[]).await;
    }
    let limit = Limit::new(2).unwrap();
    assert_eq!(
        f.prompts
            .list(&owner, &PageRequest::first(limit))
            .await
            .unwrap(),
        listed[..3]
    );
    let after = PageRequest {
        limit,
        after: Some(listed[2].id.clone()),
    };
    assert_eq!(f.prompts.list(&owner, &after).await.unwrap(), listed[3..]);
    assert_eq!(
        f.prompts
            .list(&Owner::System, &PageRequest::first(limit))
            .await
            .unwrap(),
        vec![system]
    );
    assert_eq!(f.prompts.count(&owner).await.unwrap(), 5);
    assert_eq!(f.prompts.count(&org(&globex)).await.unwrap(), 4);
    assert_eq!(f.prompts.count(&Owner::System).await.unwrap(), 1);
    assert_eq!(
        f.prompts
            .count(&org(&OrganizationId::generate()))
            .await
            .unwrap(),
        0
    );
}

async fn layouts_resolve_pins_and_latest_versions_now_and_then(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let owner = org(&acme);
    let mut role = f.particle(&owner, "role", Category::Role, at(0)).await;
    let mut format = f.particle(&owner, "format", Category::Format, at(0)).await;
    let mut system = f
        .particle(&Owner::System, "guardrails", Category::Guardrails, at(0))
        .await;
    let role_v1 = role.latest.clone();
    let (prompt, placements) = f
        .prompt(
            &owner,
            "prompt",
            at(10),
            &[
                (&role, 2, Some(&role_v1)),
                (&format, 1, None),
                (&system, 0, None),
            ],
        )
        .await;
    let (other, _) = f
        .prompt(&owner, "other", at(10), &[(&format, 5, None)])
        .await;
    f.next_version(&mut role, "role two", at(20)).await;
    let format_v2 = f.next_version(&mut format, "format two", at(20)).await;
    f.next_version(&mut format, "format three", at(30)).await;
    f.next_version(&mut system, "guardrails two", at(30)).await;

    let now = f.layout(&prompt.id, None).await;
    assert_eq!(
        now.iter()
            .map(|e| (e.category, e.order, e.number, e.pinned, e.content.as_str()))
            .collect::<Vec<_>>(),
        vec![
            (Category::Role, 2, 1, Some(1), "role v1"),
            (Category::Guardrails, 0, 2, None, "guardrails two"),
            (Category::Format, 1, 3, None, "format three"),
        ]
    );
    for (entry, placement) in now
        .iter()
        .zip([&placements[0], &placements[2], &placements[1]])
    {
        assert_eq!(entry.association, placement.id);
        assert_eq!(entry.particle, placement.particle_id);
        assert_eq!(entry.valid_from, at(10));
    }

    let numbers = |layout: Vec<Resolved>| -> Vec<u32> { layout.iter().map(|e| e.number).collect() };
    assert_eq!(
        numbers(f.layout(&prompt.id, Some(at(10))).await),
        vec![1, 1, 1]
    );
    assert_eq!(
        numbers(f.layout(&prompt.id, Some(at(25))).await),
        vec![1, 1, 2]
    );
    assert_eq!(
        numbers(f.layout(&prompt.id, Some(at(30))).await),
        vec![1, 2, 3]
    );
    assert!(
        f.layout(&prompt.id, Some(at(10) - micros(1)))
            .await
            .is_empty(),
        "nothing was placed before the prompt existed"
    );

    // Several prompts at once; each entry names its prompt; unknown prompts add nothing.
    let both = f
        .prompts
        .layouts(
            &[
                prompt.id.clone(),
                other.id.clone(),
                SystemPromptId::generate(),
            ],
            Some(at(25)),
        )
        .await
        .unwrap();
    assert_eq!(both.len(), 4);
    let of_other: Vec<&ResolvedAssociation> = both
        .iter()
        .filter(|e| e.association.system_prompt_id == other.id)
        .collect();
    assert_eq!(of_other.len(), 1);
    assert_eq!(of_other[0].version, format_v2);
    assert_eq!(of_other[0].particle_name, "format");
    assert_eq!(of_other[0].category, Category::Format);
    assert!(f.prompts.layouts(&[], None).await.unwrap().is_empty());

    // Names and categories are the particle's current ones, also for past moments.
    assert!(
        f.particles
            .update_details(&owner, &format.id, "renamed", "", at(40), &[])
            .await
            .unwrap()
    );
    let past = f.layout(&other.id, Some(at(15))).await;
    assert_eq!(past[0].name, "renamed");
    assert_eq!(past[0].number, 1);
}

async fn layouts_tell_microseconds_apart(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let owner = org(&acme);
    // Instants whose text forms differ in length (whole seconds, milliseconds, a second
    // boundary): the comparisons must still be by time.
    let whole = Utc.with_ymd_and_hms(2026, 5, 6, 7, 8, 9).unwrap();
    let mut p = f
        .particle(&owner, "role", Category::Role, whole - micros(1))
        .await;
    let (prompt, placements) = f.prompt(&owner, "prompt", whole, &[(&p, 0, None)]).await;
    f.next_version(&mut p, "two", whole + micros(1)).await;
    let millis = whole + Duration::milliseconds(100);
    f.next_version(&mut p, "three", millis).await;
    f.next_version(&mut p, "four", millis + micros(1)).await;
    let boundary = whole + Duration::seconds(1);
    f.next_version(&mut p, "five", boundary - micros(1)).await;
    f.next_version(&mut p, "six", boundary).await;

    let number_at = async |t: DateTime<Utc>| -> Option<u32> {
        let layout = f.layout(&prompt.id, Some(t)).await;
        assert!(layout.len() <= 1);
        layout.first().map(|e| e.number)
    };
    assert_eq!(number_at(whole - micros(1)).await, None, "not yet placed");
    assert_eq!(number_at(whole).await, Some(1));
    assert_eq!(number_at(whole + micros(1)).await, Some(2));
    assert_eq!(number_at(millis - micros(1)).await, Some(2));
    assert_eq!(number_at(millis).await, Some(3));
    assert_eq!(number_at(millis + micros(1)).await, Some(4));
    assert_eq!(number_at(boundary - micros(2)).await, Some(4));
    assert_eq!(number_at(boundary - micros(1)).await, Some(5));
    assert_eq!(number_at(boundary).await, Some(6));

    // A placement ends exactly when it is removed.
    let removed = boundary + micros(10);
    assert!(
        f.prompts
            .remove_association(&owner, &prompt.id, &placements[0].id, removed, &[])
            .await
            .unwrap()
    );
    assert_eq!(number_at(removed - micros(1)).await, Some(6));
    assert_eq!(number_at(removed).await, None);
}

async fn placement_changes_keep_their_history(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let mut p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let v1 = p.latest.clone();
    let (mut prompt, placements) = f.prompt(&owner, "prompt", at(1), &[(&p, 3, None)]).await;
    let placement = &placements[0];
    f.next_version(&mut p, "two", at(2)).await;

    // Refused: another owner, an unknown placement, or one of another prompt.
    let (other, _) = f.prompt(&owner, "other", at(1), &[]).await;
    for (who, prompt_id, id) in [
        (org(&globex), &prompt.id, &placement.id),
        (Owner::System, &prompt.id, &placement.id),
        (owner.clone(), &prompt.id, &AssociationId::generate()),
        (owner.clone(), &other.id, &placement.id),
        (owner.clone(), &SystemPromptId::generate(), &placement.id),
    ] {
        assert!(
            !f.prompts
                .update_association(&who, prompt_id, id, 9, Some(pin_of(&v1)), at(3), &[])
                .await
                .unwrap()
        );
        assert!(
            !f.prompts
                .remove_association(&who, prompt_id, id, at(3), &[])
                .await
                .unwrap()
        );
    }
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone()),
        "refused changes do not touch the prompt"
    );
    assert_eq!(
        f.prompts.get(&acme, &other.id).await.unwrap(),
        Some(other.clone())
    );

    // Move and pin at t4: the current layout shows it, the past one does not.
    assert!(
        f.prompts
            .update_association(
                &owner,
                &prompt.id,
                &placement.id,
                7,
                Some(pin_of(&v1)),
                at(4),
                &[],
            )
            .await
            .unwrap()
    );
    prompt.updated_at = at(4);
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone())
    );
    let summary = |layout: Vec<Resolved>| -> Vec<Summary> {
        layout
            .into_iter()
            .map(|e| (e.association, e.order, e.number, e.pinned, e.valid_from))
            .collect()
    };
    let id = placement.id.clone();
    assert_eq!(
        summary(f.layout(&prompt.id, None).await),
        vec![(id.clone(), 7, 1, Some(1), at(4))]
    );
    assert_eq!(
        summary(f.layout(&prompt.id, Some(at(4))).await),
        vec![(id.clone(), 7, 1, Some(1), at(4))]
    );
    assert_eq!(
        summary(f.layout(&prompt.id, Some(at(4) - micros(1))).await),
        vec![(id.clone(), 3, 2, None, at(1))]
    );
    assert_eq!(
        summary(f.layout(&prompt.id, Some(at(1))).await),
        vec![(id.clone(), 3, 1, None, at(1))]
    );

    // Unpinned again at t5, then changed twice within one instant: the last change holds.
    assert!(
        f.prompts
            .update_association(&owner, &prompt.id, &id, 7, None, at(5), &[])
            .await
            .unwrap()
    );
    assert!(
        f.prompts
            .update_association(&owner, &prompt.id, &id, 8, Some(pin_of(&v1)), at(6), &[])
            .await
            .unwrap()
    );
    assert!(
        f.prompts
            .update_association(&owner, &prompt.id, &id, 0, None, at(6), &[])
            .await
            .unwrap()
    );
    assert_eq!(
        summary(f.layout(&prompt.id, None).await),
        vec![(id.clone(), 0, 2, None, at(6))]
    );
    assert_eq!(
        summary(f.layout(&prompt.id, Some(at(5))).await),
        vec![(id.clone(), 7, 2, None, at(5))]
    );
    assert_eq!(
        summary(f.layout(&prompt.id, Some(at(4) + micros(1))).await),
        vec![(id.clone(), 7, 1, Some(1), at(4))]
    );

    // Removal ends the placement for good.
    assert!(
        f.prompts
            .remove_association(&owner, &prompt.id, &id, at(7), &[])
            .await
            .unwrap()
    );
    prompt.updated_at = at(7);
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone())
    );
    assert!(f.layout(&prompt.id, None).await.is_empty());
    assert_eq!(
        summary(f.layout(&prompt.id, Some(at(7) - micros(1))).await),
        vec![(id.clone(), 0, 2, None, at(6))]
    );
    assert!(
        !f.prompts
            .remove_association(&owner, &prompt.id, &id, at(8), &[])
            .await
            .unwrap()
    );
    assert!(
        !f.prompts
            .update_association(&owner, &prompt.id, &id, 1, None, at(8), &[])
            .await
            .unwrap()
    );
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt)
    );
}

async fn placements_are_added_to_the_owners_prompts_only(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let system_particle = f
        .particle(&Owner::System, "tone", Category::Tone, at(0))
        .await;
    let (mut prompt, _) = f.prompt(&owner, "prompt", at(1), &[]).await;
    let (system_prompt, _) = f.prompt(&Owner::System, "profile", at(1), &[]).await;

    let refused = association(&prompt, &p, 0, None, at(2));
    assert!(
        !f.prompts
            .add_association(&org(&globex), &refused, &[])
            .await
            .unwrap()
    );
    assert!(
        !f.prompts
            .add_association(&Owner::System, &refused, &[])
            .await
            .unwrap()
    );
    let into_system = association(&system_prompt, &system_particle, 0, None, at(2));
    assert!(
        !f.prompts
            .add_association(&owner, &into_system, &[])
            .await
            .unwrap()
    );
    assert!(f.layout(&prompt.id, None).await.is_empty());
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone())
    );

    let mine = association(&prompt, &p, 1, Some(&p.latest), at(3));
    assert!(f.prompts.add_association(&owner, &mine, &[]).await.unwrap());
    let theirs = association(&prompt, &system_particle, 0, None, at(3) + micros(1));
    assert!(
        f.prompts
            .add_association(&owner, &theirs, &[])
            .await
            .unwrap()
    );
    prompt.updated_at = at(3) + micros(1);
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone())
    );
    assert!(
        f.prompts
            .add_association(&Owner::System, &into_system, &[])
            .await
            .unwrap()
    );

    let layout = f
        .prompts
        .layouts(std::slice::from_ref(&prompt.id), None)
        .await
        .unwrap();
    let mut associations: Vec<Association> = layout.into_iter().map(|e| e.association).collect();
    associations.sort_by_key(|a| a.valid_from);
    assert_eq!(associations, vec![mine, theirs]);
    assert_eq!(f.layout(&system_prompt.id, None).await.len(), 1);
}

async fn prompts_are_updated_and_deleted_by_their_owner(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let (prompt, _) = f
        .prompt(
            &owner,
            "prompt",
            at(1),
            &[(&p, 0, None), (&p, 1, Some(&p.latest))],
        )
        .await;

    let mut changed = prompt.clone();
    changed.name = "Renamed ✓".into();
    changed.description = "new".into();
    changed.enabled = false;
    changed.updated_at = at(2) + micros(9);
    assert!(
        !f.prompts
            .update(&org(&globex), &changed, &[])
            .await
            .unwrap()
    );
    assert!(
        !f.prompts
            .update(&Owner::System, &changed, &[])
            .await
            .unwrap()
    );
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone())
    );
    // Only name, description, enabled and updated_at are saved.
    let mut attempt = changed.clone();
    attempt.slug = Some("sneaky".into());
    attempt.created_at = at(99);
    assert!(f.prompts.update(&owner, &attempt, &[]).await.unwrap());
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(changed)
    );
    let mut unknown = prompt.clone();
    unknown.id = SystemPromptId::generate();
    assert!(!f.prompts.update(&owner, &unknown, &[]).await.unwrap());

    assert!(
        !f.prompts
            .delete(&org(&globex), &prompt.id, &[])
            .await
            .unwrap()
    );
    assert!(
        !f.prompts
            .delete(&Owner::System, &prompt.id, &[])
            .await
            .unwrap()
    );
    assert_eq!(f.layout(&prompt.id, None).await.len(), 2);
    assert!(f.prompts.delete(&owner, &prompt.id, &[]).await.unwrap());
    assert_eq!(f.prompts.get(&acme, &prompt.id).await.unwrap(), None);
    assert!(f.layout(&prompt.id, None).await.is_empty());
    assert!(f.layout(&prompt.id, Some(at(1))).await.is_empty());
    assert_eq!(f.prompts.count(&owner).await.unwrap(), 0);
    assert!(!f.prompts.delete(&owner, &prompt.id, &[]).await.unwrap());
    // Its placements went with it, so the particle is free to go.
    assert_eq!(
        f.particles.delete(&owner, &p.id, at(3), &[]).await.unwrap(),
        ParticleDeletion::Deleted
    );
}

async fn slugs_and_ids_are_unique(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let mut tone = particle(&Owner::System, "tone", Category::Tone, at(0));
    tone.slug = Some("friendly-tone".into());
    f.particles.insert(&tone, &[]).await.unwrap();
    let mut again = particle(&Owner::System, "tone again", Category::Tone, at(1));
    again.slug = Some("friendly-tone".into());
    assert!(is_conflict(f.particles.insert(&again, &[]).await));
    assert_eq!(
        f.particles.get_system("friendly-tone").await.unwrap(),
        Some(tone.clone())
    );
    assert_eq!(f.particles.count(&Owner::System, None).await.unwrap(), 1);
    // Organizations' particles have no slug and never collide.
    f.particle(&org(&acme), "a", Category::Role, at(0)).await;
    f.particle(&org(&acme), "b", Category::Role, at(0)).await;

    let mut profile = prompt(&Owner::System, "profile", at(0));
    profile.slug = Some("general-assistant".into());
    f.prompts.insert(&profile, &[], &[]).await.unwrap();
    let mut twin = prompt(&Owner::System, "twin", at(1));
    twin.slug = Some("general-assistant".into());
    assert!(is_conflict(f.prompts.insert(&twin, &[], &[]).await));
    assert_eq!(
        f.prompts.get_system("general-assistant").await.unwrap(),
        Some(profile)
    );
    assert_eq!(f.prompts.count(&Owner::System).await.unwrap(), 1);
    f.prompt(&org(&acme), "a", at(0), &[]).await;
    f.prompt(&org(&acme), "b", at(0), &[]).await;
}

// ----- database only -----
// Integrity the databases enforce beyond the in-memory reference.

async fn duplicate_ids_conflict_and_change_nothing(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let owner = org(&acme);
    let p = f.particle(&owner, "role", Category::Role, at(0)).await;
    assert!(is_conflict(f.particles.insert(&p, &[]).await));
    let (prompt, _) = f.prompt(&owner, "prompt", at(0), &[]).await;
    assert!(is_conflict(f.prompts.insert(&prompt, &[], &[]).await));

    // A prompt whose placements cannot be stored is not stored either.
    let fresh = self::prompt(&owner, "fresh", at(1));
    let placement = association(&fresh, &p, 0, None, at(1));
    assert!(is_conflict(
        f.prompts
            .insert(&fresh, &[placement.clone(), placement], &[])
            .await
    ));
    assert_eq!(f.prompts.get(&acme, &fresh.id).await.unwrap(), None);

    // A particle whose first version cannot be stored is not stored either.
    let mut broken = particle(&owner, "broken", Category::Role, at(1));
    broken.latest.id = p.latest.id.clone();
    assert!(is_conflict(f.particles.insert(&broken, &[]).await));
    assert_eq!(f.particles.get(&acme, &broken.id).await.unwrap(), None);
}

async fn deleted_and_foreign_particles_cannot_be_placed(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let gone = f.particle(&owner, "gone", Category::Role, at(0)).await;
    assert_eq!(
        f.particles
            .delete(&owner, &gone.id, at(1), &[])
            .await
            .unwrap(),
        ParticleDeletion::Deleted
    );
    let foreign = f
        .particle(&org(&globex), "foreign", Category::Role, at(0))
        .await;
    let own = f.particle(&owner, "own", Category::Role, at(0)).await;
    let (mut prompt, _) = f.prompt(&owner, "prompt", at(2), &[]).await;

    for particle in [&gone, &foreign] {
        let placement = association(&prompt, particle, 0, None, at(3));
        assert!(is_conflict(
            f.prompts
                .add_association(&owner, &placement, &[])
                .await
                .map(drop)
        ));
        let fresh = self::prompt(&owner, "fresh", at(3));
        let placement = association(&fresh, particle, 0, None, at(3));
        assert!(is_conflict(
            f.prompts.insert(&fresh, &[placement], &[]).await
        ));
        assert_eq!(f.prompts.get(&acme, &fresh.id).await.unwrap(), None);
    }
    // A system prompt places system particles only.
    let profile = self::prompt(&Owner::System, "profile", at(3));
    let placement = association(&profile, &own, 0, None, at(3));
    assert!(is_conflict(
        f.prompts.insert(&profile, &[placement], &[]).await
    ));
    // A pin names a version of the placed particle.
    let placement = association(&prompt, &own, 0, Some(&foreign.latest), at(3));
    assert!(
        f.prompts
            .add_association(&owner, &placement, &[])
            .await
            .is_err()
    );

    assert!(f.layout(&prompt.id, None).await.is_empty());
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone())
    );
    let placement = association(&prompt, &own, 0, Some(&own.latest), at(4));
    assert!(
        f.prompts
            .add_association(&owner, &placement, &[])
            .await
            .unwrap()
    );
    prompt.updated_at = at(4);
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt)
    );
}

async fn deletion_and_placement_race_safely(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let owner = org(&acme);
    let (prompt, _) = f.prompt(&owner, "prompt", at(0), &[]).await;
    for round in 0..10 {
        let p = f
            .particle(&owner, &format!("p{round}"), Category::Role, at(1))
            .await;
        let placement = association(&prompt, &p, round, None, at(2) + micros(round.into()));
        let (placed, deleted) = tokio::join!(
            tokio::spawn({
                let prompts = f.prompts.clone();
                let owner = owner.clone();
                async move { prompts.add_association(&owner, &placement, &[]).await }
            }),
            tokio::spawn({
                let particles = f.particles.clone();
                let (owner, id) = (owner.clone(), p.id.clone());
                async move { particles.delete(&owner, &id, at(3), &[]).await.unwrap() }
            }),
        );
        let placed = matches!(placed.unwrap(), Ok(true));
        let deleted = deleted.unwrap() == ParticleDeletion::Deleted;
        assert!(
            placed != deleted,
            "round {round}: placed {placed}, deleted {deleted}"
        );
        let current = f
            .layout(&prompt.id, None)
            .await
            .into_iter()
            .any(|e| e.particle == p.id);
        assert_eq!(current, placed);
    }
}

tessera_store::on_both_databases!(
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

/// The same contract on the in-memory reference store (without the database-only tests).
mod memory {
    macro_rules! on_memory {
        ($($test:ident),* $(,)?) => {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() { super::$test(super::Target::Memory).await }
            )*
        };
    }

    on_memory!(
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
    );
}
