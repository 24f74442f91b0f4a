//! The `ModelStore` contract, run against every adapter: SQLite and PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{DateTime, Duration, TimeZone, Utc};
use diesel_async::RunQueryDsl;
use serde_json::{Map, Value, json};
use tessera_kernel::{DomainError, Limit, OrganizationId, PageRequest};
use tessera_knowledge::{Dataset, DatasetId, DatasetStore};
use tessera_models::{DatasetLink, DatasetLinkStore, DatasetUsage, ModelId, ModelStore, UserModel};
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_prompts::{Owner, SystemPrompt, SystemPromptId, SystemPromptStore};
use tessera_store::{
    Backend, Database, SqlDatasetLinkStore, SqlDatasetStore, SqlModelStore, SqlOrganizationStore,
    SqlPromptStore, testing::TestDatabase,
};

/// Microsecond precision, as the domain's clock produces; `at(s)` is `s` seconds later.
/// An audit record of a change in `organization` (what the knowledge services pass).
fn audited(organization: &tessera_kernel::OrganizationId) -> tessera_kernel::AuditRecord {
    tessera_kernel::AuditRecord::by_operator(
        organization,
        tessera_kernel::ActorKind::Operator,
        "ops",
        "dataset.update",
        "dataset",
        "ds_x",
        chrono::Utc::now(),
    )
}

fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap()
        + Duration::microseconds(123_456)
        + Duration::seconds(seconds)
}

/// Inserts a fresh organization and returns its id.
async fn organization(db: &Database, name: &str) -> OrganizationId {
    let org = Organization {
        id: OrganizationId::generate(),
        name: name.to_owned(),
        plan: Plan::Pro,
        created_at: at(0),
        updated_at: at(0),
    };
    SqlOrganizationStore::new(db.clone())
        .insert(&org, &[])
        .await
        .unwrap();
    org.id
}

/// Inserts a system prompt (without placements) of the organization and returns its id.
async fn system_prompt(db: &Database, organization: &OrganizationId, name: &str) -> SystemPromptId {
    let prompt = SystemPrompt {
        id: SystemPromptId::generate(),
        owner: Owner::Organization(organization.clone()),
        slug: None,
        name: name.to_owned(),
        description: format!("about {name}"),
        enabled: true,
        created_at: at(0),
        updated_at: at(0),
    };
    SystemPromptStore::insert(&SqlPromptStore::new(db.clone()), &prompt, &[], &[])
        .await
        .unwrap();
    prompt.id
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// The audit record of a change to a model of `organization`.
fn audit(organization: &OrganizationId) -> tessera_kernel::AuditRecord {
    tessera_kernel::AuditRecord::by_operator(
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
fn model(organization: &OrganizationId, name: &str) -> UserModel {
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
fn rich_model(organization: &OrganizationId, prompt: &SystemPromptId) -> UserModel {
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

fn first(limit: i64) -> PageRequest<ModelId> {
    PageRequest::first(Limit::new(limit).unwrap())
}

fn after(limit: i64, id: &ModelId) -> PageRequest<ModelId> {
    PageRequest {
        limit: Limit::new(limit).unwrap(),
        after: Some(id.clone()),
    }
}

/// Runs one SQL statement as is (to plant rows the store would never write).
async fn execute(db: &Database, sql: &str) {
    match db {
        Database::Postgres(pool) => {
            let mut conn = pool.get().await.unwrap();
            diesel::sql_query(sql).execute(&mut *conn).await.unwrap();
        }
        Database::Sqlite(pool) => {
            let mut conn = pool.get().await.unwrap();
            diesel::sql_query(sql).execute(&mut *conn).await.unwrap();
        }
    };
}

fn is_internal<T: std::fmt::Debug>(result: &Result<T, DomainError>) -> bool {
    matches!(result, Err(DomainError::Internal { .. }))
}

async fn models_read_back_unchanged(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let prompt = system_prompt(&db.database, &acme, "Support").await;
    let store = SqlModelStore::new(db.database.clone());

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

async fn duplicate_ids_conflict(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlModelStore::new(db.database.clone());
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

async fn references_must_exist(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlModelStore::new(db.database.clone());

    let missing = OrganizationId::generate();
    let orphan = model(&missing, "orphan");
    let refused = store.insert(&orphan, &audit(&orphan.organization_id)).await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(store.count(&missing).await.unwrap(), 0);

    let mut dangling = model(&acme, "dangling");
    dangling.system_prompt_id = Some(SystemPromptId::generate());
    let refused = store
        .insert(&dangling, &audit(&dangling.organization_id))
        .await
        .unwrap_err();
    assert!(
        matches!(
            refused,
            DomainError::Conflict {
                code: "missing_reference",
                ..
            }
        ),
        "{refused:?}"
    );
    assert_eq!(store.get(&acme, &dangling.id).await.unwrap(), None);

    let plain = model(&acme, "plain");
    store
        .insert(&plain, &audit(&plain.organization_id))
        .await
        .unwrap();
    let mut changed = plain.clone();
    changed.system_prompt_id = Some(SystemPromptId::generate());
    let refused = store
        .update(&changed, &audit(&changed.organization_id))
        .await
        .unwrap_err();
    assert!(
        matches!(
            refused,
            DomainError::Conflict {
                code: "missing_reference",
                ..
            }
        ),
        "{refused:?}"
    );
    assert_eq!(store.get(&acme, &plain.id).await.unwrap(), Some(plain));
}

async fn another_organization_cannot_reach_a_model(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let globex = organization(&db.database, "Globex").await;
    let prompt = system_prompt(&db.database, &acme, "Support").await;
    let store = SqlModelStore::new(db.database.clone());
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

async fn list_is_tenant_scoped_ordered_and_paged(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let globex = organization(&db.database, "Globex").await;
    let store = SqlModelStore::new(db.database.clone());
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

fn model_of(organization: &OrganizationId, i: usize) -> UserModel {
    model(organization, &format!("other {i}"))
}

async fn update_saves_every_mutable_field(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let support = system_prompt(&db.database, &acme, "Support").await;
    let sales = system_prompt(&db.database, &acme, "Sales").await;
    let store = SqlModelStore::new(db.database.clone());
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

async fn delete_happens_once(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlModelStore::new(db.database.clone());
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

async fn deleting_the_system_prompt_detaches_it(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let support = system_prompt(&db.database, &acme, "Support").await;
    let prompts = SqlPromptStore::new(db.database.clone());
    let store = SqlModelStore::new(db.database.clone());
    let rich = rich_model(&acme, &support);
    store
        .insert(&rich, &audit(&rich.organization_id))
        .await
        .unwrap();
    let plain = model(&acme, "plain");
    store
        .insert(&plain, &audit(&plain.organization_id))
        .await
        .unwrap();

    assert!(
        SystemPromptStore::delete(&prompts, &Owner::Organization(acme.clone()), &support, &[])
            .await
            .unwrap()
    );
    let mut detached = rich.clone();
    detached.system_prompt_id = None;
    assert_eq!(
        store.get(&acme, &rich.id).await.unwrap(),
        Some(detached),
        "only the reference is cleared"
    );
    assert_eq!(store.get(&acme, &plain.id).await.unwrap(), Some(plain));
}

async fn corrupt_rows_are_internal_errors(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlModelStore::new(db.database.clone());
    let plain = model(&acme, "plain");
    store
        .insert(&plain, &audit(&plain.organization_id))
        .await
        .unwrap();

    for metadata in ["not json", "[1, 2]", "\"text\"", "null"] {
        execute(
            &db.database,
            &format!(
                "UPDATE user_models SET metadata = '{metadata}' WHERE id = '{}'",
                plain.id
            ),
        )
        .await;
        let read = store.get(&acme, &plain.id).await;
        assert!(is_internal(&read), "metadata {metadata}: {read:?}");
        let listed = store.list(&acme, &first(10)).await;
        assert!(is_internal(&listed), "metadata {metadata}: {listed:?}");
    }
    execute(
        &db.database,
        &format!(
            "UPDATE user_models SET metadata = '{{}}' WHERE id = '{}'",
            plain.id
        ),
    )
    .await;
    assert_eq!(
        store.get(&acme, &plain.id).await.unwrap(),
        Some(plain.clone())
    );

    // A row whose id is not a model id.
    execute(
        &db.database,
        &format!(
            "UPDATE user_models SET id = 'mdl_not-a-uuid' WHERE id = '{}'",
            plain.id
        ),
    )
    .await;
    let listed = store.list(&acme, &first(10)).await;
    assert!(is_internal(&listed), "{listed:?}");
    assert_eq!(store.count(&acme).await.unwrap(), 1);
}

/// A dataset of the organization, inserted through the knowledge store.
async fn dataset(db: &Database, organization: &OrganizationId) -> DatasetId {
    let dataset = Dataset {
        id: DatasetId::generate(),
        organization: organization.clone(),
        name: "Handbook".into(),
        description: None,
        version: 1,
        file_count: 0,
        created_by: "alice".into(),
        created_at: at(0),
        updated_at: at(0),
    };
    SqlDatasetStore::new(db.clone())
        .insert(&dataset, &audited(&dataset.organization))
        .await
        .unwrap();
    dataset.id
}

fn link(model: &UserModel, dataset: &DatasetId, usage: DatasetUsage, seconds: i64) -> DatasetLink {
    DatasetLink {
        model_id: model.id.clone(),
        dataset_id: dataset.to_string(),
        usage,
        created_at: at(seconds),
    }
}

async fn dataset_links_upsert_list_and_go_with_their_model_or_dataset(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let (acme, other) = (
        organization(&db.database, "Acme").await,
        organization(&db.database, "Other").await,
    );
    let models = SqlModelStore::new(db.database.clone());
    let links = SqlDatasetLinkStore::new(db.database.clone());
    let bot = model(&acme, "bot");
    let helper = model(&acme, "helper");
    models.insert(&bot, &audit(&acme)).await.unwrap();
    models.insert(&helper, &audit(&acme)).await.unwrap();
    let (handbook, faq) = (
        dataset(&db.database, &acme).await,
        dataset(&db.database, &acme).await,
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
        vec![handbook.to_string(), faq.to_string()],
        "oldest first"
    );
    assert!(links.links(&other, &bot.id).await.unwrap().is_empty());
    assert!(
        !links
            .delete(&other, &bot.id, faq.as_str(), &audit(&other))
            .await
            .unwrap()
    );

    // A link may not name a model or dataset that does not exist.
    let ghost = model(&acme, "ghost");
    assert!(
        links
            .upsert(
                &acme,
                &link(&ghost, &faq, DatasetUsage::Rag, 3),
                &audit(&acme)
            )
            .await
            .is_err()
    );
    assert!(
        links
            .upsert(
                &acme,
                &link(&helper, &DatasetId::generate(), DatasetUsage::Rag, 3),
                &audit(&acme)
            )
            .await
            .is_err()
    );

    // Links go with their dataset and with their model.
    links
        .upsert(
            &acme,
            &link(&helper, &faq, DatasetUsage::Rag, 4),
            &audit(&acme),
        )
        .await
        .unwrap();
    assert!(
        SqlDatasetStore::new(db.database.clone())
            .delete(&acme, &faq, &audited(&acme))
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(links.links(&acme, &bot.id).await.unwrap().len(), 1);
    assert!(links.links(&acme, &helper.id).await.unwrap().is_empty());
    assert!(models.delete(&acme, &bot.id, &audit(&acme)).await.unwrap());
    assert!(links.links(&acme, &bot.id).await.unwrap().is_empty());
    assert!(
        !links
            .delete(&acme, &bot.id, handbook.as_str(), &audit(&acme))
            .await
            .unwrap()
    );
}

tessera_store::on_both_databases!(
    models_read_back_unchanged,
    duplicate_ids_conflict,
    references_must_exist,
    another_organization_cannot_reach_a_model,
    list_is_tenant_scoped_ordered_and_paged,
    update_saves_every_mutable_field,
    delete_happens_once,
    deleting_the_system_prompt_detaches_it,
    corrupt_rows_are_internal_errors,
    dataset_links_upsert_list_and_go_with_their_model_or_dataset,
);
