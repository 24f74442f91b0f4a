//! Start-up over an index that holds vectors: the files store records which embedding model
//! made each ready file's vectors (decision 0047), so a server named to embed with another
//! model refuses to start, an unnamed one keeps the index's model, and files processed
//! before models were recorded are taken as all-MiniLM-L6-v2's (the only embedded model
//! then) and recorded so. With the real models (`just models`) on SQLite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use tessera_kernel::{CursorCodec, OrganizationId, SystemClock};
use tessera_knowledge::{
    FileReady, FileStore,
    contract::{at, audited, chunk, stored_file},
};
use tessera_services::knowledge::Knowledge;
use tessera_setup::{
    config::{Settings, Switch},
    open_database,
};
use tessera_store::{Database, SqlFileStore, testing::store_organization};

mod support;

use support::models_root;

fn settings_in(dir: &std::path::Path, model: Option<&str>) -> Settings {
    let mut settings = Settings {
        data_dir: dir.to_path_buf(),
        ..Settings::default()
    };
    settings.knowledge.embedding_model_dir = Some(models_root());
    settings.knowledge.rerank = Switch::Off;
    settings.knowledge.workers = 0;
    settings.knowledge.embedding_model = model.map(str::to_owned);
    settings
}

/// Stores a ready file of one chunk whose vectors `model` made (`None`: as before models
/// were recorded, which only a direct update can make now).
async fn ready_file(database: &Database, model: Option<&str>, sha: char) {
    let organization = OrganizationId::generate();
    store_organization(database, &organization, "Acme").await;
    let files = SqlFileStore::new(database.clone());
    let file = stored_file(&organization, &format!("{sha}.md"), sha);
    files
        .insert(&file, true, None, &audited(&organization))
        .await
        .unwrap();
    let job = files.claim_job("w", at(1), at(3)).await.unwrap().unwrap();
    assert_eq!(job.file.id, file.id);
    let ready = FileReady::of(&file, 1, at(2));
    let recorded = model.unwrap_or("unrecorded");
    assert!(
        files
            .complete_job("w", &[chunk(0, "text")], recorded, 0, &ready)
            .await
            .unwrap()
    );
    if model.is_none() {
        // As a database from before the column existed has it.
        tessera_store::testing::execute(database, "UPDATE files SET embedding_model = NULL")
            .await
            .unwrap();
    }
}

async fn build(settings: &Settings, database: &Database) -> Result<Knowledge, String> {
    Knowledge::build(
        settings,
        database,
        Arc::new(SystemClock),
        CursorCodec::new([7; 32]),
    )
    .await
    .map_err(|e| e.to_string())
}

fn model_of(knowledge: &Knowledge) -> String {
    knowledge.embedder.as_ref().unwrap().model().to_owned()
}

#[tokio::test]
async fn another_models_index_is_refused_and_an_unnamed_model_keeps_the_index_model() {
    let dir = tempfile::tempdir().unwrap();
    let database = open_database(&settings_in(dir.path(), None)).await.unwrap();
    ready_file(&database, Some("bge-small-en-v1.5"), 'a').await;

    let error = build(
        &settings_in(dir.path(), Some("all-MiniLM-L6-v2")),
        &database,
    )
    .await
    .err()
    .unwrap();
    assert!(
        error.contains("1 of bge-small-en-v1.5")
            && error.contains("embeds with all-MiniLM-L6-v2")
            && error.contains("knowledge.embedding_model"),
        "{error}"
    );

    let kept = build(&settings_in(dir.path(), None), &database)
        .await
        .unwrap();
    assert_eq!(model_of(&kept), "bge-small-en-v1.5");
}

#[tokio::test]
async fn files_from_before_models_were_recorded_are_all_minilms() {
    let dir = tempfile::tempdir().unwrap();
    let database = open_database(&settings_in(dir.path(), None)).await.unwrap();
    ready_file(&database, None, 'a').await;
    let files = SqlFileStore::new(database.clone());
    assert_eq!(files.embedding_models().await.unwrap(), vec![(None, 1)]);

    let error = build(
        &settings_in(dir.path(), Some("bge-small-en-v1.5")),
        &database,
    )
    .await
    .err()
    .unwrap();
    assert!(error.contains("1 of all-MiniLM-L6-v2"), "{error}");
    assert_eq!(files.embedding_models().await.unwrap(), vec![(None, 1)]);

    let kept = build(&settings_in(dir.path(), None), &database)
        .await
        .unwrap();
    assert_eq!(model_of(&kept), "all-MiniLM-L6-v2");
    assert_eq!(
        files.embedding_models().await.unwrap(),
        vec![(Some("all-MiniLM-L6-v2".into()), 1)],
        "recorded at start-up"
    );
}

#[tokio::test]
async fn a_new_index_gets_bge_small() {
    let dir = tempfile::tempdir().unwrap();
    let settings = settings_in(dir.path(), None);
    let database = open_database(&settings).await.unwrap();
    let knowledge = build(&settings, &database).await.unwrap();
    assert_eq!(model_of(&knowledge), "bge-small-en-v1.5");
}
