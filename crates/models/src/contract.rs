//! The `ModelStore` and `DatasetLinkStore` contract, for anyone implementing the ports: each
//! function checks promises of the traits against fresh, empty stores (a [`ModelStores`]),
//! and [`model_store_contract!`](crate::model_store_contract) turns them into tests. Tessera
//! runs it against the in-memory reference ([`MemoryStores`]) and both SQL stores. The
//! `ChatModel` port's contract is [`chat_model`].
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod chat_model;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{Map, Value, json};
use tessera_kernel::{AuditRecord, DomainError, Limit, OrganizationId, PageRequest};
use tessera_prompts::{Owner, SystemPrompt, SystemPromptId};

use crate::{
    DatasetLink, DatasetLinkStore, DatasetUsage, ModelId, ModelStore, UserModel,
    memory::{InMemoryDatasetLinkStore, InMemoryModelStore},
};

/// Runs every check of the contract as a `#[tokio::test]` of the calling crate, each on its
/// own stores made by `$factory`: an expression that, called with no argument, gives a
/// future of `(stores, guard)`, `stores` a [`ModelStores`](crate::contract::ModelStores)
/// (the guard, e.g. a throwaway database, lives until the test ends).
#[macro_export]
macro_rules! model_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            models_read_back_unchanged,
            duplicate_ids_conflict,
            another_organization_cannot_reach_a_model,
            list_is_tenant_scoped_ordered_and_paged,
            update_saves_every_mutable_field,
            delete_happens_once,
            dataset_links_upsert_and_list_per_organization,
        );
    };
}

/// What the checks run on: both stores over one empty state, and ways to make the
/// organizations, system prompts and datasets that records refer to exist (where foreign
/// keys need them).
#[async_trait]
pub trait ModelStores: Send + Sync {
    fn models(&self) -> Arc<dyn ModelStore>;

    fn dataset_links(&self) -> Arc<dyn DatasetLinkStore>;

    /// Makes the organization `id` (named `name`) exist, e.g. stores it where records refer
    /// to it; nothing for stores that keep no organizations. Panics if it cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);

    /// Makes `prompt` (without placements) exist, e.g. stores it where models refer to it;
    /// nothing for stores that keep no system prompts. Panics if it cannot.
    async fn system_prompt_exists(&self, prompt: &SystemPrompt);

    /// Makes a dataset of `organization` named `name` exist and returns its id, e.g. stores
    /// it where links refer to it; any fresh id for stores that keep no datasets.
    async fn dataset_exists(&self, organization: &OrganizationId, name: &str) -> String;
}

/// The in-memory reference stores, which keep no organizations, prompts or datasets.
#[derive(Default)]
pub struct MemoryStores {
    pub models: Arc<InMemoryModelStore>,
    pub dataset_links: Arc<InMemoryDatasetLinkStore>,
}

#[async_trait]
impl ModelStores for MemoryStores {
    fn models(&self) -> Arc<dyn ModelStore> {
        self.models.clone()
    }

    fn dataset_links(&self) -> Arc<dyn DatasetLinkStore> {
        self.dataset_links.clone()
    }

    async fn organization_exists(&self, _id: &OrganizationId, _name: &str) {}

    async fn system_prompt_exists(&self, _prompt: &SystemPrompt) {}

    async fn dataset_exists(&self, _organization: &OrganizationId, _name: &str) -> String {
        ModelId::generate().as_str().replacen("mdl_", "ds_", 1)
    }
}

// ----- fixture -----

/// The stores of one check, and the helpers that fill them.
struct Fixture<'a> {
    stores: &'a dyn ModelStores,
    models: Arc<dyn ModelStore>,
    links: Arc<dyn DatasetLinkStore>,
}

impl<'a> Fixture<'a> {
    fn new(stores: &'a impl ModelStores) -> Self {
        Self {
            stores,
            models: stores.models(),
            links: stores.dataset_links(),
        }
    }

    /// A fresh organization (made to exist first: models refer to it).
    async fn organization(&self, name: &str) -> OrganizationId {
        let id = OrganizationId::generate();
        self.stores.organization_exists(&id, name).await;
        id
    }

    /// A system prompt (without placements) of the organization, made to exist.
    async fn system_prompt(&self, organization: &OrganizationId, name: &str) -> SystemPromptId {
        let prompt = system_prompt(organization, name);
        self.stores.system_prompt_exists(&prompt).await;
        prompt.id
    }

    /// A dataset of the organization, made to exist.
    async fn dataset(&self, organization: &OrganizationId, name: &str) -> String {
        self.stores.dataset_exists(organization, name).await
    }
}

// ----- records -----

/// Microsecond precision, as the domain's clock produces; `at(s)` is `s` seconds later.
pub fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap()
        + Duration::microseconds(123_456)
        + Duration::seconds(seconds)
}

/// A system prompt of the organization (enabled, no slug), created at `at(0)`.
pub fn system_prompt(organization: &OrganizationId, name: &str) -> SystemPrompt {
    SystemPrompt {
        id: SystemPromptId::generate(),
        owner: Owner::Organization(organization.clone()),
        slug: None,
        name: name.to_owned(),
        description: format!("about {name}"),
        enabled: true,
        created_at: at(0),
        updated_at: at(0),
    }
}

/// The JSON object `value` (panics on anything else).
pub fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// The audit record of a change to a model of `organization`.
pub fn audit(organization: &OrganizationId) -> AuditRecord {
    AuditRecord::by_operator(
        organization,
        tessera_kernel::ActorKind::Operator,
        "ops",
        "model.update",
        "model",
        "mdl_x",
        at(0),
    )
}

/// A plain model: no description, no system prompt, empty metadata.
pub fn model(organization: &OrganizationId, name: &str) -> UserModel {
    UserModel {
        id: ModelId::generate(),
        organization_id: organization.clone(),
        parent_model_id: "local/smollm2-135m".to_owned(),
        display_name: name.to_owned(),
        description: None,
        system_prompt_id: None,
        system_prompt: None,
        metadata: Map::new(),
        enabled: true,
        created_at: at(0),
        updated_at: at(0),
    }
}

/// A model with every optional field set, unicode text and nested metadata.
pub fn rich_model(organization: &OrganizationId, prompt: &SystemPromptId) -> UserModel {
    UserModel {
        parent_model_id: "openai/gpt-4o-mini".to_owned(),
        description: Some("Ünïcode – 研究 ✓ 🚀 \"quoted\" 'text'\n\ttabs".to_owned()),
        system_prompt_id: Some(prompt.clone()),
        system_prompt: Some("Du bist ein hilfreicher Assistent. 你好 — antworte knapp.".to_owned()),
        metadata: object(json!({
            "team": "Forschung & Entwicklung – 研究",
            "tags": ["a", "ü", "🚀"],
            "limits": {
                "max_tokens": 4096,
                "temperature": 0.25,
                "nested": { "deep": [null, true, { "x": -1 }] }
            },
            "empty": {},
            "none": null
        })),
        enabled: false,
        updated_at: at(1) + Duration::microseconds(1),
        ..model(organization, "Assistent – Ünïcode ✓ 🚀")
    }
}

fn model_of(organization: &OrganizationId, i: usize) -> UserModel {
    model(organization, &format!("other {i}"))
}

/// The first page of `limit` models.
pub fn first(limit: i64) -> PageRequest<ModelId> {
    PageRequest::first(Limit::new(limit).unwrap())
}

/// The page of `limit` models after `id`.
pub fn after(limit: i64, id: &ModelId) -> PageRequest<ModelId> {
    PageRequest {
        limit: Limit::new(limit).unwrap(),
        after: Some(id.clone()),
    }
}

/// A link of `model` to `dataset` with `usage`, created at `at(seconds)`.
pub fn link(model: &UserModel, dataset: &str, usage: DatasetUsage, seconds: i64) -> DatasetLink {
    DatasetLink {
        model_id: model.id.clone(),
        dataset_id: dataset.to_owned(),
        usage,
        created_at: at(seconds),
    }
}

// ----- checks -----

/// Models read back field for field, texts at the columns' limits included.
pub async fn models_read_back_unchanged(stores: &impl ModelStores) {
    let fx = Fixture::new(stores);
    let acme = fx.organization("Acme").await;
    let prompt = fx.system_prompt(&acme, "Support").await;
    let store = &fx.models;

    let rich = rich_model(&acme, &prompt);
    store
        .insert(&rich, &audit(&rich.organization_id))
        .await
        .unwrap();
    assert_eq!(
        store.get(&acme, &rich.id).await.unwrap(),
        Some(rich.clone())
    );

    let plain = model(&acme, "plain");
    store
        .insert(&plain, &audit(&plain.organization_id))
        .await
        .unwrap();
    assert_eq!(
        store.get(&acme, &plain.id).await.unwrap(),
        Some(plain.clone())
    );

    // Texts at the columns' limits fit (limits count characters, not bytes).
    let mut longest = model(&acme, &"é".repeat(255));
    longest.description = Some("ü".repeat(1000));
    longest.system_prompt = Some("ß".repeat(32_768));
    store
        .insert(&longest, &audit(&longest.organization_id))
        .await
        .unwrap();
    assert_eq!(store.get(&acme, &longest.id).await.unwrap(), Some(longest));

    assert_eq!(store.get(&acme, &ModelId::generate()).await.unwrap(), None);
    assert_eq!(store.count(&acme).await.unwrap(), 3);
}

/// Inserting a model id a second time conflicts with `already_exists`.
pub async fn duplicate_ids_conflict(stores: &impl ModelStores) {
    let fx = Fixture::new(stores);
    let acme = fx.organization("Acme").await;
    let store = &fx.models;
    let plain = model(&acme, "plain");
    store
        .insert(&plain, &audit(&plain.organization_id))
        .await
        .unwrap();
    let again = store
        .insert(&plain, &audit(&plain.organization_id))
        .await
        .unwrap_err();
    assert!(
        matches!(
            again,
            DomainError::Conflict {
                code: "already_exists",
                ..
            }
        ),
        "{again:?}"
    );
}

/// Another organization can neither read, list, count, update nor delete a model.
pub async fn another_organization_cannot_reach_a_model(stores: &impl ModelStores) {
    let fx = Fixture::new(stores);
    let acme = fx.organization("Acme").await;
    let globex = fx.organization("Globex").await;
    let prompt = fx.system_prompt(&acme, "Support").await;
    let store = &fx.models;
    let rich = rich_model(&acme, &prompt);
    store
        .insert(&rich, &audit(&rich.organization_id))
        .await
        .unwrap();

    assert_eq!(store.get(&globex, &rich.id).await.unwrap(), None);
    assert!(store.list(&globex, &first(10)).await.unwrap().is_empty());
    assert_eq!(store.count(&globex).await.unwrap(), 0);

    let mut hijacked = rich.clone();
    hijacked.organization_id = globex.clone();
    hijacked.display_name = "hijacked".to_owned();
    hijacked.enabled = true;
    hijacked.updated_at = at(60);
    assert!(
        !store
            .update(&hijacked, &audit(&hijacked.organization_id))
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete(&globex, &rich.id, &audit(&globex))
            .await
            .unwrap()
    );

    assert_eq!(
        store.get(&acme, &rich.id).await.unwrap(),
        Some(rich.clone()),
        "the owner's model is untouched"
    );
    assert_eq!(store.list(&acme, &first(10)).await.unwrap(), vec![rich]);
    assert_eq!(store.count(&acme).await.unwrap(), 1);
}

/// Lists hold the organization's models only, in id order, paged after an exclusive cursor.
pub async fn list_is_tenant_scoped_ordered_and_paged(stores: &impl ModelStores) {
    let fx = Fixture::new(stores);
    let acme = fx.organization("Acme").await;
    let globex = fx.organization("Globex").await;
    let store = &fx.models;
    let mut mine = Vec::new();
    let mut theirs = Vec::new();
    for i in 0..5 {
        let model = model(&acme, &format!("model {i}"));
        store
            .insert(&model, &audit(&model.organization_id))
            .await
            .unwrap();
        mine.push(model);
        // Interleaved models of another organization never show up.
        if i % 2 == 0 {
            let other = model_of(&globex, i);
            store
                .insert(&other, &audit(&other.organization_id))
                .await
                .unwrap();
            theirs.push(other);
        }
    }
    // The order is the ids' (which sort by creation, but the contract is the id order).
    mine.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
    theirs.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));

    assert_eq!(
        store.list(&acme, &first(2)).await.unwrap(),
        mine[..3],
        "a page fetches one extra row to tell whether more exist"
    );
    assert_eq!(
        store.list(&acme, &after(2, &mine[1].id)).await.unwrap(),
        mine[2..5],
        "`after` is exclusive"
    );
    assert_eq!(
        store.list(&acme, &after(2, &mine[3].id)).await.unwrap(),
        mine[4..]
    );
    assert!(
        store
            .list(&acme, &after(2, &mine[4].id))
            .await
            .unwrap()
            .is_empty()
    );
    // A cursor naming another organization's model pages through the own models only.
    let mut expected: Vec<UserModel> = mine
        .iter()
        .filter(|m| m.id.as_str() > theirs[0].id.as_str())
        .cloned()
        .collect();
    expected.truncate(3);
    assert_eq!(
        store.list(&acme, &after(2, &theirs[0].id)).await.unwrap(),
        expected
    );
    assert_eq!(
        store
            .list(&globex, &PageRequest::first(Limit::DEFAULT))
            .await
            .unwrap(),
        theirs
    );
    assert_eq!(store.count(&acme).await.unwrap(), 5);
    assert_eq!(store.count(&globex).await.unwrap(), 3);
    assert_eq!(store.count(&OrganizationId::generate()).await.unwrap(), 0);
    assert!(
        store
            .list(&OrganizationId::generate(), &first(10))
            .await
            .unwrap()
            .is_empty()
    );
}

/// Updates save every mutable field, set, cleared and set again; never id, owner, creation.
pub async fn update_saves_every_mutable_field(stores: &impl ModelStores) {
    let fx = Fixture::new(stores);
    let acme = fx.organization("Acme").await;
    let support = fx.system_prompt(&acme, "Support").await;
    let sales = fx.system_prompt(&acme, "Sales").await;
    let store = &fx.models;
    let rich = rich_model(&acme, &support);
    store
        .insert(&rich, &audit(&rich.organization_id))
        .await
        .unwrap();
    let untouched = model(&acme, "untouched");
    store
        .insert(&untouched, &audit(&untouched.organization_id))
        .await
        .unwrap();

    // Every mutable field changes; the optional ones are switched to another value.
    let mut changed = rich.clone();
    changed.parent_model_id = "local/qwen2.5-0.5b".to_owned();
    changed.display_name = "Verkäufer – 销售".to_owned();
    changed.description = Some("another description".to_owned());
    changed.system_prompt_id = Some(sales.clone());
    changed.system_prompt = Some("Sell politely.".to_owned());
    changed.metadata = object(json!({ "team": "sales", "nested": { "level": [1, 2, 3] } }));
    changed.enabled = true;
    changed.updated_at = at(3600) + Duration::microseconds(654_321);
    assert!(
        store
            .update(&changed, &audit(&changed.organization_id))
            .await
            .unwrap()
    );
    assert_eq!(
        store.get(&acme, &rich.id).await.unwrap(),
        Some(changed.clone())
    );

    // Optional fields are cleared; id, organization and created_at are never saved.
    let mut cleared = changed.clone();
    cleared.description = None;
    cleared.system_prompt_id = None;
    cleared.system_prompt = None;
    cleared.metadata = Map::new();
    cleared.enabled = false;
    cleared.updated_at = at(7200);
    let mut attempt = cleared.clone();
    attempt.created_at = at(9999);
    assert!(
        store
            .update(&attempt, &audit(&attempt.organization_id))
            .await
            .unwrap()
    );
    assert_eq!(
        store.get(&acme, &rich.id).await.unwrap(),
        Some(cleared.clone()),
        "created_at is kept"
    );

    // ... and set again.
    let mut set = cleared.clone();
    set.description = Some("back".to_owned());
    set.system_prompt_id = Some(support.clone());
    set.system_prompt = Some("Help.".to_owned());
    set.metadata = object(json!({ "again": true }));
    set.updated_at = at(7201);
    assert!(
        store
            .update(&set, &audit(&set.organization_id))
            .await
            .unwrap()
    );
    assert_eq!(store.get(&acme, &rich.id).await.unwrap(), Some(set));

    assert_eq!(
        store.get(&acme, &untouched.id).await.unwrap(),
        Some(untouched.clone()),
        "other models are untouched"
    );

    let mut unknown = model(&acme, "unknown");
    unknown.updated_at = at(10);
    assert!(
        !store
            .update(&unknown, &audit(&unknown.organization_id))
            .await
            .unwrap()
    );
    assert_eq!(store.get(&acme, &unknown.id).await.unwrap(), None);
    assert_eq!(store.count(&acme).await.unwrap(), 2);
}

/// A model is deleted once; afterwards it cannot be read, listed, deleted or updated.
pub async fn delete_happens_once(stores: &impl ModelStores) {
    let fx = Fixture::new(stores);
    let acme = fx.organization("Acme").await;
    let store = &fx.models;
    let gone = model(&acme, "gone");
    let kept = model(&acme, "kept");
    store
        .insert(&gone, &audit(&gone.organization_id))
        .await
        .unwrap();
    store
        .insert(&kept, &audit(&kept.organization_id))
        .await
        .unwrap();

    assert!(store.delete(&acme, &gone.id, &audit(&acme)).await.unwrap());
    assert_eq!(store.get(&acme, &gone.id).await.unwrap(), None);
    assert!(!store.delete(&acme, &gone.id, &audit(&acme)).await.unwrap());
    assert!(
        !store
            .delete(&acme, &ModelId::generate(), &audit(&acme))
            .await
            .unwrap()
    );
    assert_eq!(store.list(&acme, &first(10)).await.unwrap(), vec![kept]);
    assert_eq!(store.count(&acme).await.unwrap(), 1);
    assert!(
        !store
            .update(&gone, &audit(&gone.organization_id))
            .await
            .unwrap(),
        "a deleted model is gone"
    );
}

/// Links upsert (a new usage keeps the creation time), list oldest first, per organization.
pub async fn dataset_links_upsert_and_list_per_organization(stores: &impl ModelStores) {
    let fx = Fixture::new(stores);
    let (acme, other) = (
        fx.organization("Acme").await,
        fx.organization("Other").await,
    );
    let (models, links) = (&fx.models, &fx.links);
    let bot = model(&acme, "bot");
    models.insert(&bot, &audit(&acme)).await.unwrap();
    let (handbook, faq) = (
        fx.dataset(&acme, "Handbook").await,
        fx.dataset(&acme, "FAQ").await,
    );

    let first = link(&bot, &handbook, DatasetUsage::Rag, 1);
    assert_eq!(
        links.upsert(&acme, &first, &audit(&acme)).await.unwrap(),
        (first.clone(), true)
    );
    let second = link(&bot, &faq, DatasetUsage::Context, 2);
    assert_eq!(
        links.upsert(&acme, &second, &audit(&acme)).await.unwrap(),
        (second.clone(), true)
    );
    // The same model and dataset again: the usage changes, the link keeps its creation time.
    let (changed, created) = links
        .upsert(
            &acme,
            &link(&bot, &handbook, DatasetUsage::Context, 9),
            &audit(&acme),
        )
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(
        (changed.usage, changed.created_at),
        (DatasetUsage::Context, at(1))
    );
    let listed = links.links(&acme, &bot.id).await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|l| l.dataset_id.clone())
            .collect::<Vec<_>>(),
        vec![handbook.clone(), faq.clone()],
        "oldest first"
    );
    assert!(links.links(&other, &bot.id).await.unwrap().is_empty());
    assert!(
        !links
            .delete(&other, &bot.id, &faq, &audit(&other))
            .await
            .unwrap()
    );
}
