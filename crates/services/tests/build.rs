//! The service graph on its own, with no HTTP framework: what a front end other than the API
//! (worker mode, another server, a test) gets from `Services::build` on the embedded
//! defaults (SQLite in the data directory, no model files).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tessera_kernel::Limit;
use tessera_services::Services;
use tessera_setup::{config::Settings, open_database};

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
