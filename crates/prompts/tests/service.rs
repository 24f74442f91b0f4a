//! The prompt service's rules (versioning, placement, composition, profiles) over the
//! in-memory reference stores, with a manual clock and a whitespace token counter.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use chrono::{Duration, TimeZone, Utc};
use tessera_kernel::{
    Clock, CursorCodec, DomainError, Limit, LocSegment, ManualClock, OrganizationId,
};
use tessera_prompts::{
    AssociationChanges, Category, Content, Description, Name, NewAssociation, NewParticle,
    NewSystemPrompt, Particle, ParticleChanges, PromptError, PromptService, SystemProfiles,
    TokenCounter, memory::InMemoryPromptStore,
};

/// Counts whitespace-separated words: easy to reason about in assertions.
struct WordCounter;

impl TokenCounter for WordCounter {
    fn encoding(&self) -> &str {
        "words"
    }

    fn count(&self, text: &str) -> u32 {
        text.split_whitespace().count() as u32
    }
}

struct Fixture {
    service: PromptService,
    clock: Arc<ManualClock>,
    acme: OrganizationId,
    globex: OrganizationId,
}

fn fixture() -> Fixture {
    let store = Arc::new(InMemoryPromptStore::new());
    let clock = Arc::new(ManualClock::new(
        Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap(),
    ));
    let service = PromptService::new(
        store.clone(),
        store,
        Arc::new(WordCounter),
        clock.clone(),
        CursorCodec::new([7; 32]),
    );
    Fixture {
        service,
        clock,
        acme: OrganizationId::generate(),
        globex: OrganizationId::generate(),
    }
}

fn new_particle(name: &str, category: Category, content: &str) -> NewParticle {
    NewParticle {
        name: Name::parse(name).unwrap(),
        category,
        content: Content::parse(content).unwrap(),
        description: Description::parse("").unwrap(),
    }
}

fn new_prompt(particles: Vec<NewAssociation>) -> NewSystemPrompt {
    NewSystemPrompt {
        name: Name::parse("Support").unwrap(),
        description: Description::parse("").unwrap(),
        enabled: true,
        particles,
    }
}

fn place(particle: &Particle, order: u32) -> NewAssociation {
    NewAssociation {
        particle_id: particle.id.clone(),
        order,
        pin: None,
    }
}

impl Fixture {
    async fn particle(&self, category: Category, content: &str) -> Particle {
        self.service
            .create_particle(&self.acme, new_particle(content, category, content))
            .await
            .unwrap()
    }

    fn tick(&self) {
        self.clock.advance(Duration::seconds(1));
    }
}

fn invalid_locs(error: PromptError) -> Vec<Vec<LocSegment>> {
    match DomainError::from(error) {
        DomainError::Validation(errors) => errors.into_iter().map(|e| e.loc).collect(),
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[tokio::test]
async fn content_changes_create_versions_and_identical_content_does_not() {
    let f = fixture();
    let role = f.particle(Category::Role, "You are terse.").await;
    assert_eq!(role.latest.number, 1);
    assert_eq!(role.latest.token_count, 3);

    f.tick();
    let (same, created) = f
        .service
        .update_content(&f.acme, &role.id, Content::parse("You are terse.").unwrap())
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(same.latest, role.latest);

    let (changed, created) = f
        .service
        .update_content(
            &f.acme,
            &role.id,
            Content::parse("You are very terse.").unwrap(),
        )
        .await
        .unwrap();
    assert!(created);
    assert_eq!(changed.latest.number, 2);
    assert_eq!(changed.latest.token_count, 4);
    let versions = f
        .service
        .list_versions(&f.acme, &role.id, Limit::default(), None)
        .await
        .unwrap();
    let numbers: Vec<u32> = versions.items.iter().map(|v| v.number).collect();
    assert_eq!(numbers, [1, 2]);
    assert_eq!(
        f.service
            .get_version(&f.acme, &role.id, 1)
            .await
            .unwrap()
            .content,
        "You are terse."
    );
    assert!(f.service.get_version(&f.acme, &role.id, 3).await.is_err());
}

#[tokio::test]
async fn renaming_never_creates_a_version() {
    let f = fixture();
    let tone = f.particle(Category::Tone, "Be kind.").await;
    f.tick();
    let renamed = f
        .service
        .update_particle(
            &f.acme,
            &tone.id,
            ParticleChanges {
                name: Some(Name::parse("Kindness").unwrap()),
                description: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(renamed.name, "Kindness");
    assert_eq!(renamed.latest.number, 1);
    assert!(renamed.updated_at > tone.updated_at);
}

#[tokio::test]
async fn replacing_sets_content_and_details_together() {
    let f = fixture();
    let tone = f.particle(Category::Tone, "Be kind.").await;
    f.tick();
    let same = f
        .service
        .replace_particle(
            &f.acme,
            &tone.id,
            Content::parse("Be kind.").unwrap(),
            ParticleChanges::default(),
        )
        .await
        .unwrap();
    assert_eq!(same.latest, tone.latest, "identical content, no version");
    assert_eq!(same.name, tone.name);

    let replaced = f
        .service
        .replace_particle(
            &f.acme,
            &tone.id,
            Content::parse("Be very kind.").unwrap(),
            ParticleChanges {
                name: Some(Name::parse("Kindness").unwrap()),
                description: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(replaced.latest.number, 2);
    assert_eq!(replaced.latest.content, "Be very kind.");
    assert_eq!(replaced.name, "Kindness");
    assert_eq!(replaced.description, tone.description);

    let missing = f
        .service
        .replace_particle(
            &f.globex,
            &tone.id,
            Content::parse("Mine now.").unwrap(),
            ParticleChanges::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(missing, PromptError::ParticleNotFound(_)),
        "{missing:?}"
    );
}

#[tokio::test]
async fn pinned_placements_stay_and_unpinned_ones_follow_the_latest_version() {
    let f = fixture();
    let role = f.particle(Category::Role, "Role one.").await;
    let tone = f.particle(Category::Tone, "Tone one.").await;
    let prompt = f
        .service
        .create_system_prompt(
            &f.acme,
            new_prompt(vec![
                NewAssociation {
                    pin: Some(role.latest.id.clone()),
                    ..place(&role, 0)
                },
                place(&tone, 0),
            ]),
        )
        .await
        .unwrap();
    f.tick();
    for particle in [&role, &tone] {
        f.service
            .update_content(
                &f.acme,
                &particle.id,
                Content::parse("Changed text.").unwrap(),
            )
            .await
            .unwrap();
    }
    let composition = f
        .service
        .compose(&f.acme, &prompt.prompt.id, None)
        .await
        .unwrap();
    assert_eq!(composition.text, "Role one.\n\nChanged text.");
    let versions: Vec<u32> = composition.particles.iter().map(|p| p.version).collect();
    assert_eq!(versions, [1, 2]);
}

#[tokio::test]
async fn composition_orders_by_category_then_order_and_is_deterministic() {
    let f = fixture();
    let format = f.particle(Category::Format, "  Use bullet lists.\n").await;
    let guard_b = f.particle(Category::Guardrails, "Second guardrail.").await;
    let role = f.particle(Category::Role, "You help.").await;
    let guard_a = f.particle(Category::Guardrails, "First guardrail.").await;
    let prompt = f
        .service
        .create_system_prompt(
            &f.acme,
            new_prompt(vec![
                place(&format, 0),
                place(&guard_b, 5),
                place(&role, 9),
                place(&guard_a, 1),
            ]),
        )
        .await
        .unwrap();
    assert_eq!(prompt.layout.particle_count(), 4);
    assert_eq!(prompt.layout.total_token_count(), 3 + 2 + 2 + 2);
    let first = f
        .service
        .compose(&f.acme, &prompt.prompt.id, None)
        .await
        .unwrap();
    assert_eq!(
        first.text,
        "You help.\n\nFirst guardrail.\n\nSecond guardrail.\n\nUse bullet lists."
    );
    let categories: Vec<Category> = first.particles.iter().map(|p| p.category).collect();
    assert_eq!(
        categories,
        [
            Category::Role,
            Category::Guardrails,
            Category::Guardrails,
            Category::Format
        ]
    );
    // The total is the composed text's own count.
    assert_eq!(first.total_tokens, 9);
    let again = f
        .service
        .compose(&f.acme, &prompt.prompt.id, None)
        .await
        .unwrap();
    assert_eq!(again, first);
}

#[tokio::test]
async fn reordering_and_repinning_change_the_composition() {
    let f = fixture();
    let a = f.particle(Category::Constraints, "Alpha.").await;
    let b = f.particle(Category::Constraints, "Beta.").await;
    let prompt = f
        .service
        .create_system_prompt(&f.acme, new_prompt(vec![place(&a, 0), place(&b, 1)]))
        .await
        .unwrap();
    let placement_a = prompt.layout.entries()[0].association.id.clone();
    f.tick();
    let moved = f
        .service
        .update_association(
            &f.acme,
            &prompt.prompt.id,
            &placement_a,
            AssociationChanges {
                order: Some(2),
                pin: Some(Some(a.latest.id.clone())),
            },
        )
        .await
        .unwrap();
    assert_eq!(moved.association.order, 2);
    assert_eq!(moved.association.pin.map(|p| p.number), Some(1));
    let text = f
        .service
        .compose(&f.acme, &prompt.prompt.id, None)
        .await
        .unwrap()
        .text;
    assert_eq!(text, "Beta.\n\nAlpha.");

    let unpinned = f
        .service
        .update_association(
            &f.acme,
            &prompt.prompt.id,
            &placement_a,
            AssociationChanges {
                order: None,
                pin: Some(None),
            },
        )
        .await
        .unwrap();
    assert_eq!(unpinned.association.pin, None);
    assert_eq!(unpinned.association.order, 2);
}

#[tokio::test]
async fn composing_at_a_past_moment_is_exact() {
    let f = fixture();
    let role = f.particle(Category::Role, "Old role.").await;
    let format = f.particle(Category::Format, "Old format.").await;
    let prompt = f
        .service
        .create_system_prompt(&f.acme, new_prompt(vec![place(&role, 0)]))
        .await
        .unwrap();
    f.tick();
    let before_changes = f.clock.now();
    f.tick();
    f.service
        .update_content(&f.acme, &role.id, Content::parse("New role.").unwrap())
        .await
        .unwrap();
    let added = f
        .service
        .add_particle(&f.acme, &prompt.prompt.id, place(&format, 0))
        .await
        .unwrap();
    f.tick();
    let after_adding = f.clock.now();
    f.tick();
    f.service
        .remove_association(&f.acme, &prompt.prompt.id, &added.association.id)
        .await
        .unwrap();

    let compose_at = |at| f.service.compose(&f.acme, &prompt.prompt.id, at);
    assert_eq!(
        compose_at(Some(before_changes)).await.unwrap().text,
        "Old role."
    );
    assert_eq!(
        compose_at(Some(after_adding)).await.unwrap().text,
        "New role.\n\nOld format."
    );
    assert_eq!(compose_at(None).await.unwrap().text, "New role.");
    let before_creation = Utc.with_ymd_and_hms(2020, 1, 1, 0, 0, 0).unwrap();
    assert_eq!(compose_at(Some(before_creation)).await.unwrap().text, "");

    let future = f.clock.now() + Duration::hours(1);
    let locs = invalid_locs(compose_at(Some(future)).await.unwrap_err());
    assert_eq!(locs, [vec![LocSegment::from("query"), "at".into()]]);
}

#[tokio::test]
async fn deleting_a_placed_particle_is_refused_until_the_placement_is_removed() {
    let f = fixture();
    let role = f.particle(Category::Role, "Role.").await;
    let prompt = f
        .service
        .create_system_prompt(&f.acme, new_prompt(vec![place(&role, 0)]))
        .await
        .unwrap();
    let error = f
        .service
        .delete_particle(&f.acme, &role.id)
        .await
        .unwrap_err();
    let PromptError::ParticleInUse { prompts, .. } = &error else {
        panic!("expected in-use, got {error:?}");
    };
    assert_eq!(prompts, std::slice::from_ref(&prompt.prompt.id));
    assert!(matches!(
        DomainError::from(error),
        DomainError::Conflict {
            code: "particle_in_use",
            ..
        }
    ));

    let placement = prompt.layout.entries()[0].association.id.clone();
    f.tick();
    f.service
        .remove_association(&f.acme, &prompt.prompt.id, &placement)
        .await
        .unwrap();
    f.service.delete_particle(&f.acme, &role.id).await.unwrap();
    assert!(matches!(
        f.service.get_particle(&f.acme, &role.id).await,
        Err(PromptError::ParticleNotFound(_))
    ));
}

#[tokio::test]
async fn unknown_and_foreign_particles_are_invalid_input_at_their_field() {
    let f = fixture();
    let own = f.particle(Category::Role, "Own.").await;
    let foreign = f
        .service
        .create_particle(&f.globex, new_particle("Theirs", Category::Tone, "Theirs."))
        .await
        .unwrap();
    let other_version = f.particle(Category::Tone, "Other.").await.latest.id;
    let error = f
        .service
        .create_system_prompt(
            &f.acme,
            new_prompt(vec![
                place(&own, 0),
                place(&foreign, 1),
                NewAssociation {
                    pin: Some(other_version),
                    ..place(&own, 2)
                },
            ]),
        )
        .await
        .unwrap_err();
    assert_eq!(
        invalid_locs(error),
        [
            vec![
                "body".into(),
                "particles".into(),
                1.into(),
                "particleId".into()
            ],
            vec![
                "body".into(),
                "particles".into(),
                2.into(),
                "particleVersionId".into()
            ],
        ] as [Vec<LocSegment>; 2]
    );
    // Nothing was stored.
    let page = f
        .service
        .list_system_prompts(&f.acme, false, Limit::default(), None)
        .await
        .unwrap();
    assert_eq!(page.total_count, Some(0));
}

#[tokio::test]
async fn organizations_see_only_their_own_records() {
    let f = fixture();
    let role = f.particle(Category::Role, "Role.").await;
    let prompt = f
        .service
        .create_system_prompt(&f.acme, new_prompt(vec![place(&role, 0)]))
        .await
        .unwrap();
    assert!(matches!(
        f.service.get_particle(&f.globex, &role.id).await,
        Err(PromptError::ParticleNotFound(_))
    ));
    assert!(matches!(
        f.service
            .update_content(&f.globex, &role.id, Content::parse("Mine now.").unwrap())
            .await,
        Err(PromptError::ParticleNotFound(_))
    ));
    assert!(matches!(
        f.service.compose(&f.globex, &prompt.prompt.id, None).await,
        Err(PromptError::SystemPromptNotFound(_))
    ));
    assert!(matches!(
        f.service
            .delete_system_prompt(&f.globex, &prompt.prompt.id)
            .await,
        Err(PromptError::SystemPromptNotFound(_))
    ));
    let theirs = f
        .service
        .list_particles(&f.globex, false, None, Limit::default(), None)
        .await
        .unwrap();
    assert!(theirs.items.is_empty());
}

#[tokio::test]
async fn lists_page_with_signed_cursors_and_filter_by_category() {
    let f = fixture();
    for index in 0..5 {
        let category = if index % 2 == 0 {
            Category::Role
        } else {
            Category::Tone
        };
        f.particle(category, &format!("Particle {index}.")).await;
    }
    let limit = Limit::new(2).unwrap();
    let first = f
        .service
        .list_particles(&f.acme, false, None, limit, None)
        .await
        .unwrap();
    assert_eq!(first.items.len(), 2);
    assert_eq!(first.total_count, Some(5));
    let cursor = first.next_cursor.unwrap();
    let second = f
        .service
        .list_particles(&f.acme, false, None, limit, Some(cursor.as_str()))
        .await
        .unwrap();
    assert!(second.items[0].id > first.items[1].id);
    let roles = f
        .service
        .list_particles(&f.acme, false, Some(Category::Role), Limit::default(), None)
        .await
        .unwrap();
    assert_eq!(roles.total_count, Some(3));
    assert!(roles.items.iter().all(|p| p.category == Category::Role));
    assert!(
        f.service
            .list_particles(&f.acme, false, None, limit, Some("forged"))
            .await
            .is_err()
    );
}

const PROFILES: &str = r#"
[[profiles]]
slug = "helper"
name = "Helper"
[[profiles.particles]]
slug = "helper-role"
name = "Helper role"
category = "role"
content = "You help."
[[profiles.particles]]
slug = "helper-format"
name = "Helper format"
category = "format"
content = "Use lists."
"#;

#[tokio::test]
async fn system_profiles_are_seeded_idempotently_and_are_read_only() {
    let f = fixture();
    let profiles = SystemProfiles::parse(PROFILES).unwrap();
    f.service.seed_system_profiles(&profiles).await.unwrap();
    f.service.seed_system_profiles(&profiles).await.unwrap();
    let listed = f
        .service
        .list_system_prompts(&f.acme, true, Limit::default(), None)
        .await
        .unwrap();
    assert_eq!(listed.total_count, Some(1));
    let profile = &listed.items[0];
    assert_eq!(profile.prompt.slug.as_deref(), Some("helper"));
    assert_eq!(profile.layout.particle_count(), 2);
    // Any organization can compose it …
    let composed = f
        .service
        .compose(&f.globex, &profile.prompt.id, None)
        .await
        .unwrap();
    assert_eq!(composed.text, "You help.\n\nUse lists.");
    // … but not change it or its particles.
    let error = f
        .service
        .delete_system_prompt(&f.acme, &profile.prompt.id)
        .await
        .unwrap_err();
    assert!(matches!(
        DomainError::from(error),
        DomainError::Forbidden {
            code: "system_managed",
            ..
        }
    ));
    let particle = &profile.layout.entries()[0].association.particle_id;
    assert!(matches!(
        f.service
            .update_content(&f.acme, particle, Content::parse("Hijacked.").unwrap())
            .await,
        Err(PromptError::SystemManaged(_))
    ));
    // Organizations may build on system particles in their own prompts.
    let own = f
        .service
        .create_system_prompt(
            &f.acme,
            new_prompt(vec![NewAssociation {
                particle_id: particle.clone(),
                order: 0,
                pin: None,
            }]),
        )
        .await
        .unwrap();
    assert_eq!(own.layout.particle_count(), 1);

    // A changed file converges: new content is a new version, a dropped particle leaves.
    f.tick();
    let changed = PROFILES
        .replace("You help.", "You help a lot.")
        .replace(
            "[[profiles.particles]]\nslug = \"helper-format\"\nname = \"Helper format\"\ncategory = \"format\"\ncontent = \"Use lists.\"\n",
            "",
        );
    f.service
        .seed_system_profiles(&SystemProfiles::parse(&changed).unwrap())
        .await
        .unwrap();
    let reseeded = f
        .service
        .compose(&f.acme, &profile.prompt.id, None)
        .await
        .unwrap();
    assert_eq!(reseeded.text, "You help a lot.");
    assert_eq!(reseeded.particles[0].version, 2);
}
