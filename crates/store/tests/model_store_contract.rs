//! The `ModelStore` and `DatasetLinkStore` contract (`tessera_models::contract`, also run
//! against the in-memory reference) on SQLite and PostgreSQL, and what only a database can
//! show: references to organizations, system prompts and datasets, the cascades of their
//! deletion, and rows the store would never write.
#![cfg(all(feature = "models", feature = "knowledge", feature = "prompts"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use diesel_async::RunQueryDsl;
use tessera_kernel::{DomainError, OrganizationId};
use tessera_knowledge::{Dataset, DatasetId, DatasetStore};
use tessera_models::{
    DatasetLinkStore, DatasetUsage, ModelStore,
    contract::{ModelStores, at, audit, first, link, model, rich_model, system_prompt},
};
use tessera_prompts::{Owner, SystemPrompt, SystemPromptId, SystemPromptStore};
use tessera_store::{
    Backend, Database, SqlDatasetLinkStore, SqlDatasetStore, SqlModelStore, SqlPromptStore,
    testing::{TestDatabase, store_organization},
};

/// Both model stores over one database, which stores the organizations, system prompts and
/// datasets records refer to.
struct SqlStores {
    models: Arc<SqlModelStore>,
    links: Arc<SqlDatasetLinkStore>,
    database: Database,
}

#[async_trait]
impl ModelStores for SqlStores {
    fn models(&self) -> Arc<dyn ModelStore> {
        self.models.clone()
    }

    fn dataset_links(&self) -> Arc<dyn DatasetLinkStore> {
        self.links.clone()
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }

    async fn system_prompt_exists(&self, prompt: &SystemPrompt) {
        SystemPromptStore::insert(
            &SqlPromptStore::new(self.database.clone()),
            prompt,
            &[],
            &[],
        )
        .await
        .unwrap();
    }

    async fn dataset_exists(&self, organization: &OrganizationId, name: &str) -> String {
        dataset(&self.database, organization, name)
            .await
            .to_string()
    }
}

/// The stores over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_store(backend: Backend) -> (SqlStores, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    let stores = SqlStores {
        models: Arc::new(SqlModelStore::new(db.database.clone())),
        links: Arc::new(SqlDatasetLinkStore::new(db.database.clone())),
        database: db.database.clone(),
    };
    (stores, db)
}

mod contract_sqlite {
    tessera_models::model_store_contract!(|| super::sql_store(tessera_store::Backend::Sqlite));
}

mod contract_postgres {
    tessera_models::model_store_contract!(|| super::sql_store(tessera_store::Backend::Postgres));
}

/// An audit record of a change in `organization` (what the knowledge services pass).
fn audited(organization: &OrganizationId) -> tessera_kernel::AuditRecord {
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

/// A fresh organization, stored.
async fn organization(stores: &SqlStores, name: &str) -> OrganizationId {
    let id = OrganizationId::generate();
    stores.organization_exists(&id, name).await;
    id
}

/// A system prompt (without placements) of the organization, stored.
async fn stored_prompt(
    stores: &SqlStores,
    organization: &OrganizationId,
    name: &str,
) -> SystemPromptId {
    let prompt = system_prompt(organization, name);
    stores.system_prompt_exists(&prompt).await;
    prompt.id
}

/// A dataset of the organization, inserted through the knowledge store.
async fn dataset(db: &Database, organization: &OrganizationId, name: &str) -> DatasetId {
    let dataset = Dataset {
        id: DatasetId::generate(),
        organization: organization.clone(),
        name: name.into(),
        description: None,
        version: 1,
        file_count: 0,
        late_interaction: false,
        created_by: "alice".into(),
        created_at: at(0),
        updated_at: at(0),
        metadata: Default::default(),
        expires_after_days: None,
        last_active_at: at(0),
    };
    SqlDatasetStore::new(db.clone())
        .insert(&dataset, &audited(&dataset.organization))
        .await
        .unwrap();
    dataset.id
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

async fn references_must_exist(backend: Backend) {
    let (stores, _db) = sql_store(backend).await;
    let acme = organization(&stores, "Acme").await;
    let store = &stores.models;

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

async fn deleting_the_system_prompt_detaches_it(backend: Backend) {
    let (stores, db) = sql_store(backend).await;
    let acme = organization(&stores, "Acme").await;
    let support = stored_prompt(&stores, &acme, "Support").await;
    let prompts = SqlPromptStore::new(db.database.clone());
    let store = &stores.models;
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
    let (stores, db) = sql_store(backend).await;
    let acme = organization(&stores, "Acme").await;
    let store = &stores.models;
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

/// Links need their model and dataset, and go with either (the rest of the links' promises
/// are the contract's `dataset_links_upsert_and_list_per_organization`).
async fn dataset_links_need_and_go_with_their_model_or_dataset(backend: Backend) {
    let (stores, db) = sql_store(backend).await;
    let acme = organization(&stores, "Acme").await;
    let (models, links) = (&stores.models, &stores.links);
    let bot = model(&acme, "bot");
    let helper = model(&acme, "helper");
    models.insert(&bot, &audit(&acme)).await.unwrap();
    models.insert(&helper, &audit(&acme)).await.unwrap();
    let (handbook, faq) = (
        dataset(&db.database, &acme, "Handbook").await,
        dataset(&db.database, &acme, "FAQ").await,
    );
    for (dataset, seconds) in [(&handbook, 1), (&faq, 2)] {
        links
            .upsert(
                &acme,
                &link(&bot, dataset.as_str(), DatasetUsage::Context, seconds),
                &audit(&acme),
            )
            .await
            .unwrap();
    }

    // A link may not name a model or dataset that does not exist.
    let ghost = model(&acme, "ghost");
    assert!(
        links
            .upsert(
                &acme,
                &link(&ghost, faq.as_str(), DatasetUsage::Rag, 3),
                &audit(&acme)
            )
            .await
            .is_err()
    );
    assert!(
        links
            .upsert(
                &acme,
                &link(
                    &helper,
                    DatasetId::generate().as_str(),
                    DatasetUsage::Rag,
                    3
                ),
                &audit(&acme)
            )
            .await
            .is_err()
    );

    // Links go with their dataset and with their model.
    links
        .upsert(
            &acme,
            &link(&helper, faq.as_str(), DatasetUsage::Rag, 4),
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
    references_must_exist,
    deleting_the_system_prompt_detaches_it,
    corrupt_rows_are_internal_errors,
    dataset_links_need_and_go_with_their_model_or_dataset,
);
