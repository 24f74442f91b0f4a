//! Dataset links over the in-memory stores, with the knowledge domain's answers mocked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use support::{CATALOG, clock_and_prompts};
use tessera_kernel::{Actor, CursorCodec, DomainError, OrganizationId};
use tessera_models::{
    Catalog, DatasetLinks, DatasetUsage, MockDatasetDirectory, ModelError, ModelService,
    NewUserModel,
    memory::{InMemoryDatasetLinkStore, InMemoryModelStore},
};
use tessera_prompts::Name;

/// Datasets `ds_small` (300 tokens), `ds_medium` (800) and `ds_large` (1500) exist.
fn directory() -> MockDatasetDirectory {
    let mut directory = MockDatasetDirectory::new();
    directory.expect_content_tokens().returning(|_, dataset| {
        Ok(match dataset {
            "ds_small" => Some(300),
            "ds_medium" => Some(800),
            "ds_large" => Some(1500),
            _ => None,
        })
    });
    directory
}

async fn fixture() -> (DatasetLinks, ModelService, OrganizationId) {
    let (clock, prompts) = clock_and_prompts();
    let models = ModelService::new(
        Arc::new(InMemoryModelStore::new()),
        Arc::new(Catalog::parse(CATALOG, |_| None).unwrap()),
        prompts,
        clock.clone(),
        CursorCodec::new([3; 32]),
    );
    let links = DatasetLinks::new(
        models.clone(),
        Arc::new(InMemoryDatasetLinkStore::new()),
        Arc::new(directory()),
        clock,
    );
    (links, models, OrganizationId::generate())
}

async fn user_model(models: &ModelService, org: &OrganizationId) -> tessera_models::ModelId {
    let new = NewUserModel {
        parent_model_id: "local/a".into(),
        display_name: Name::parse("Bot").unwrap(),
        description: None,
        system_prompt_id: None,
        system_prompt: None,
        metadata: Default::default(),
    };
    models.create(org, new).await.unwrap().model.id
}

fn invalid_code(error: ModelError) -> (String, String) {
    match error {
        ModelError::Invalid(errors) => {
            let error = &errors[0];
            (format!("{:?}", error.loc), error.kind.clone())
        }
        other => panic!("expected invalid input, got {other:?}"),
    }
}

#[tokio::test]
async fn links_are_created_listed_changed_and_removed() {
    let (links, models, org) = fixture().await;
    let model = user_model(&models, &org).await;
    let (link, created) = links
        .link(&org, &model, "ds_large", DatasetUsage::Rag, &Actor::System)
        .await
        .unwrap();
    assert!(created);
    assert_eq!(
        (link.dataset_id.as_str(), link.usage),
        ("ds_large", DatasetUsage::Rag)
    );
    let (again, created) = links
        .link(
            &org,
            &model,
            "ds_small",
            DatasetUsage::Context,
            &Actor::System,
        )
        .await
        .unwrap();
    assert!(created);
    assert_eq!(again.usage, DatasetUsage::Context);
    // Linking again changes the usage of the same link.
    let (changed, created) = links
        .link(&org, &model, "ds_small", DatasetUsage::Rag, &Actor::System)
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(changed.usage, DatasetUsage::Rag);
    let listed = links.list(&org, &model).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(
        links.links_of(&org, &model.to_string()).await.unwrap(),
        listed
    );
    links
        .unlink(&org, &model, "ds_small", &Actor::System)
        .await
        .unwrap();
    assert_eq!(links.list(&org, &model).await.unwrap().len(), 1);
    let missing = links
        .unlink(&org, &model, "ds_small", &Actor::System)
        .await
        .unwrap_err();
    assert!(matches!(
        DomainError::from(missing),
        DomainError::NotFound { .. }
    ));
}

#[tokio::test]
async fn unknown_datasets_and_models_are_refused() {
    let (links, models, org) = fixture().await;
    let model = user_model(&models, &org).await;
    let error = links
        .link(
            &org,
            &model,
            "ds_missing",
            DatasetUsage::Rag,
            &Actor::System,
        )
        .await
        .unwrap_err();
    let (loc, kind) = invalid_code(error);
    assert!(loc.contains("datasetId"), "{loc}");
    assert_eq!(kind, "not_found");
    // Another organization's model is not found; base models have no links.
    let other = OrganizationId::generate();
    let error = links
        .link(
            &other,
            &model,
            "ds_small",
            DatasetUsage::Rag,
            &Actor::System,
        )
        .await
        .unwrap_err();
    assert!(matches!(error, ModelError::NotFound(_)));
    assert!(links.links_of(&org, "local/a").await.unwrap().is_empty());
    assert!(
        links
            .links_of(&other, &model.to_string())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn context_datasets_must_fit_their_share_of_the_context_window_together() {
    let (links, models, org) = fixture().await;
    let model = user_model(&models, &org).await;
    // 2048-token window: 819 tokens for context datasets.
    assert_eq!(DatasetLinks::context_budget(2048), 819);
    let error = links
        .link(
            &org,
            &model,
            "ds_large",
            DatasetUsage::Context,
            &Actor::System,
        )
        .await
        .unwrap_err();
    let (loc, kind) = invalid_code(error);
    assert!(loc.contains("usageType"), "{loc}");
    assert_eq!(kind, "context_too_large");
    links
        .link(
            &org,
            &model,
            "ds_medium",
            DatasetUsage::Context,
            &Actor::System,
        )
        .await
        .unwrap();
    // 800 + 300 > 819: refused, but fine as rag.
    let error = links
        .link(
            &org,
            &model,
            "ds_small",
            DatasetUsage::Context,
            &Actor::System,
        )
        .await
        .unwrap_err();
    assert_eq!(invalid_code(error).1, "context_too_large");
    links
        .link(&org, &model, "ds_small", DatasetUsage::Rag, &Actor::System)
        .await
        .unwrap();
    // Re-linking the same context dataset does not count it twice.
    links
        .link(
            &org,
            &model,
            "ds_medium",
            DatasetUsage::Context,
            &Actor::System,
        )
        .await
        .unwrap();
}
