//! User-model rules over an in-memory store, with the real prompt service for system prompts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use support::{CATALOG, clock_and_prompts};
use tessera_kernel::{CursorCodec, DomainError, Limit, LocSegment, ManualClock, OrganizationId};
use tessera_models::{
    Catalog, LifecycleState, ModelChanges, ModelError, ModelService, ModelStore, NewUserModel,
    memory::InMemoryModelStore,
};
use tessera_prompts::{Description, Name, NewSystemPrompt, PromptService, SystemProfiles};

struct Fixture {
    models: ModelService,
    prompts: PromptService,
    store: Arc<InMemoryModelStore>,
    clock: Arc<ManualClock>,
    acme: OrganizationId,
}

fn service(
    store: Arc<InMemoryModelStore>,
    prompts: PromptService,
    clock: Arc<ManualClock>,
    catalog: &str,
) -> ModelService {
    ModelService::new(
        store,
        Arc::new(Catalog::parse(catalog, |_| None).unwrap()),
        prompts,
        clock,
        CursorCodec::new([3; 32]),
    )
}

fn fixture() -> Fixture {
    let (clock, prompts) = clock_and_prompts();
    let store = Arc::new(InMemoryModelStore::new());
    Fixture {
        models: service(store.clone(), prompts.clone(), clock.clone(), CATALOG),
        prompts,
        store,
        clock,
        acme: OrganizationId::generate(),
    }
}

fn new_model(parent: &str) -> NewUserModel {
    NewUserModel {
        parent_model_id: parent.into(),
        display_name: Name::parse("Bot").unwrap(),
        description: None,
        system_prompt_id: None,
        system_prompt: None,
        metadata: Default::default(),
    }
}

fn locs(error: ModelError) -> Vec<Vec<LocSegment>> {
    match error {
        ModelError::Invalid(errors) => errors.into_iter().map(|e| e.loc).collect(),
        other => panic!("expected invalid input, got {other:?}"),
    }
}

#[tokio::test]
async fn every_invalid_field_is_reported_at_once() {
    let f = fixture();
    let foreign = f
        .prompts
        .create_system_prompt(
            &OrganizationId::generate(),
            NewSystemPrompt {
                name: Name::parse("Theirs").unwrap(),
                description: Description::parse("").unwrap(),
                enabled: true,
                particles: vec![],
            },
        )
        .await
        .unwrap();
    let error = f
        .models
        .create(
            &f.acme,
            NewUserModel {
                system_prompt_id: Some(foreign.prompt.id),
                system_prompt: Some("   ".into()),
                ..new_model("local/none")
            },
        )
        .await
        .unwrap_err();
    let field = |name: &str| vec![LocSegment::from("body"), name.into()];
    assert_eq!(
        locs(error),
        [
            field("parentModelId"),
            field("systemPrompt"),
            field("systemPromptId")
        ]
    );
    assert_eq!(f.store.count(&f.acme).await.unwrap(), 0);
}

#[tokio::test]
async fn system_profiles_may_be_assigned_and_parents_switched_in_place() {
    let f = fixture();
    let profiles = SystemProfiles::parse(
        r#"
        [[profiles]]
        slug = "p"
        name = "P"
        particles = []
        "#,
    )
    .unwrap();
    f.prompts.seed_system_profiles(&profiles).await.unwrap();
    let profile = f
        .prompts
        .list_system_prompts(&f.acme, true, Limit::default(), None)
        .await
        .unwrap()
        .items
        .remove(0);
    let created = f
        .models
        .create(
            &f.acme,
            NewUserModel {
                system_prompt_id: Some(profile.prompt.id.clone()),
                ..new_model("local/a")
            },
        )
        .await
        .unwrap();
    assert_eq!(created.lifecycle, LifecycleState::Active);
    assert_eq!(created.parent.as_ref().unwrap().context_window, 2048);

    f.clock.advance(chrono::Duration::seconds(1));
    let switched = f
        .models
        .update(
            &f.acme,
            &created.model.id,
            ModelChanges {
                parent_model_id: Some("local/b".into()),
                system_prompt_id: Some(None),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(switched.model.id, created.model.id);
    assert_eq!(switched.parent.unwrap().context_window, 4096);
    assert_eq!(switched.model.system_prompt_id, None);
    assert!(switched.model.updated_at > created.model.updated_at);

    let other = OrganizationId::generate();
    assert!(matches!(
        f.models.get(&other, &created.model.id).await,
        Err(ModelError::NotFound(_))
    ));
}

#[tokio::test]
async fn a_parent_removed_from_the_catalog_means_end_of_life() {
    let f = fixture();
    let created = f
        .models
        .create(&f.acme, new_model("local/b"))
        .await
        .unwrap();
    let only_a = CATALOG
        .split("[[models]]\nid = \"local/b\"")
        .next()
        .unwrap();
    let narrower = service(f.store.clone(), f.prompts.clone(), f.clock.clone(), only_a);
    let view = narrower.get(&f.acme, &created.model.id).await.unwrap();
    assert_eq!(
        (view.parent, view.lifecycle),
        (None, LifecycleState::EndOfLife)
    );
}

#[tokio::test]
async fn a_completion_may_name_the_usable_models_of_every_page() {
    let f = fixture();
    let disabled_base = CATALOG.replace(
        "id = \"local/b\"\ndisplay_name = \"B\"",
        "id = \"local/b\"\nenabled = false\ndisplay_name = \"B\"",
    );
    let models = service(
        f.store.clone(),
        f.prompts.clone(),
        f.clock.clone(),
        &disabled_base,
    );
    // More than one page of the organization's own models.
    let mut created = Vec::new();
    for _ in 0..=Limit::LARGEST.get() {
        created.push(models.create(&f.acme, new_model("local/a")).await.unwrap());
    }
    let off = &created[7].model.id;
    models
        .update(
            &f.acme,
            off,
            ModelChanges {
                enabled: Some(false),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let on_disabled_base = models.create(&f.acme, new_model("local/b")).await.unwrap();

    let nameable = models.nameable(&f.acme).await.unwrap();
    let base: Vec<_> = nameable.base.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(base, ["local/a"], "a disabled base model is not named");
    assert_eq!(nameable.own.len(), created.len() - 1);
    assert!(nameable.own.iter().all(|view| &view.model.id != off));
    assert!(
        nameable
            .own
            .iter()
            .all(|view| view.model.id != on_disabled_base.model.id)
    );

    let first = &created[0].model.id;
    assert!(models.nameable_own(&f.acme, first).await.unwrap().is_some());
    assert!(models.nameable_own(&f.acme, off).await.unwrap().is_none());
    let stranger = OrganizationId::generate();
    assert!(
        models
            .nameable_own(&stranger, first)
            .await
            .unwrap()
            .is_none()
    );
    assert!(models.nameable(&stranger).await.unwrap().own.is_empty());
}

fn provider() -> Arc<dyn tessera_models::ChatModel> {
    Arc::new(tessera_models::MockChatModel::new())
}

#[tokio::test]
async fn resolution_applies_the_lifecycle_plan_and_provider_rules() {
    use tessera_models::{Providers, Usability};
    use tessera_organizations::Plan;

    let f = fixture();
    let premium = CATALOG.replace(
        "id = \"local/b\"\ndisplay_name = \"B\"",
        "id = \"local/b\"\ntier = \"premium\"\ndisplay_name = \"B\"",
    );
    let mut providers = Providers::default();
    providers.insert("local/b", provider());
    let models = service(
        f.store.clone(),
        f.prompts.clone(),
        f.clock.clone(),
        &premium,
    )
    .with_providers(providers);
    let on_a = models.create(&f.acme, new_model("local/a")).await.unwrap();
    let on_b = models.create(&f.acme, new_model("local/b")).await.unwrap();

    let resolved = models
        .resolve(&f.acme, &on_b.model.id, Plan::Pro)
        .await
        .unwrap();
    assert_eq!(
        (resolved.base.id.as_str(), resolved.usability),
        ("local/b", Usability::Usable)
    );
    assert!(matches!(
        models.resolve(&f.acme, &on_b.model.id, Plan::Free).await,
        Err(ModelError::PlanRequired(_))
    ));
    let unserved = models
        .resolve(&f.acme, &on_a.model.id, Plan::Pro)
        .await
        .err()
        .unwrap();
    assert_eq!(unserved, ModelError::ProviderUnavailable("local/a".into()));
    assert!(matches!(
        DomainError::from(unserved),
        DomainError::Unavailable { .. }
    ));
    let disabled = models
        .update(
            &f.acme,
            &on_b.model.id,
            ModelChanges {
                enabled: Some(false),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(matches!(
        models.resolve(&f.acme, &disabled.model.id, Plan::Pro).await,
        Err(ModelError::Disabled(_))
    ));
    assert!(matches!(
        models
            .resolve(&OrganizationId::generate(), &on_b.model.id, Plan::Pro)
            .await,
        Err(ModelError::NotFound(_))
    ));

    // Chats may name a base model directly, or a user model by id.
    let direct = models
        .resolve_any(&f.acme, "local/b", Plan::Pro)
        .await
        .unwrap();
    assert!(direct.model.is_none());
    assert_eq!(direct.base.id, "local/b");
    let on_a_id = on_a.model.id.to_string();
    assert_eq!(
        models.resolve_any(&f.acme, &on_a_id, Plan::Pro).await.err(),
        Some(ModelError::ProviderUnavailable("local/a".into()))
    );
    let unknown = models
        .resolve_any(&f.acme, "local/none", Plan::Pro)
        .await
        .err()
        .unwrap();
    assert_eq!(unknown, ModelError::UnknownBaseModel("local/none".into()));
    assert!(matches!(
        DomainError::from(unknown),
        DomainError::NotFound { .. }
    ));
}
