//! The service graph on its own, with no HTTP framework: what a front end other than the API
//! (worker mode, another server, a test) gets from `Services::build` on the embedded
//! defaults (SQLite in the data directory, no model files).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tessera_kernel::Limit;
use tessera_services::Services;
use tessera_setup::{config::Settings, open_database};

mod support;

use support::models_root;

#[tokio::test]
async fn the_graph_builds_on_the_embedded_defaults_and_bootstraps_once() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        data_dir: dir.path().to_path_buf(),
        ..Settings::default()
    };
    let database = open_database(&settings).await.unwrap();
    let services = Services::build(&settings, database, "https://localhost:8443".into())
        .await
        .unwrap();

    let first = services
        .bootstrap(&settings)
        .await
        .unwrap()
        .expect("the first run creates the default organization");
    assert_eq!(first.organization.name, settings.default_organization_name);
    assert!(
        services.bootstrap(&settings).await.unwrap().is_none(),
        "a database that has an organization is not bootstrapped again"
    );

    // The built-in system profiles were seeded, readable by every organization.
    let profiles = services
        .prompts
        .list_system_prompts(&first.organization.id, true, Limit::DEFAULT, None)
        .await
        .unwrap();
    assert!(!profiles.items.is_empty());

    // Without model files, no base model has a provider and nothing can embed: the graph
    // still builds, and says so rather than failing.
    assert!(services.embeddings.is_none());
    assert!(!services.knowledge.can_process());
    assert!(
        services
            .models
            .nameable(&first.organization.id)
            .await
            .unwrap()
            .base
            .is_empty()
    );

    // The background work starts on the caller's runtime.
    services.start_background(&settings);
}

/// A worker processes files and serves no search: it loads no reranking model, even where
/// an API replica with the same settings reranks (issue 61).
#[tokio::test]
async fn a_worker_processes_files_without_the_reranking_model() {
    use tessera_kernel::SystemClock;
    use tessera_services::knowledge::Knowledge;
    use tessera_setup::config::Switch;

    let settings_in = |dir: &std::path::Path| {
        let mut settings = Settings {
            data_dir: dir.to_path_buf(),
            ..Settings::default()
        };
        settings.knowledge.embedding_model_dir = Some(models_root());
        settings.knowledge.rerank_model_dir = Some(models_root());
        settings.knowledge.rerank = Switch::On;
        settings
    };
    let cursors = tessera_kernel::CursorCodec::new([7; 32]);
    let clock = std::sync::Arc::new(SystemClock);

    // Each in a data directory of its own: the embedded index belongs to one process.
    let replica_dir = tempfile::tempdir().unwrap();
    let settings = settings_in(replica_dir.path());
    let database = open_database(&settings).await.unwrap();
    let serving = Knowledge::build(&settings, &database, clock.clone(), cursors.clone())
        .await
        .unwrap();
    assert!(serving.can_process() && serving.reranks());

    let worker_dir = tempfile::tempdir().unwrap();
    let settings = settings_in(worker_dir.path());
    let database = open_database(&settings).await.unwrap();
    let worker = Knowledge::build_for_processing(&settings, &database, clock, cursors)
        .await
        .unwrap();
    assert!(worker.can_process(), "the worker embeds and indexes");
    assert!(!worker.reranks(), "the worker loads no reranking model");
}
