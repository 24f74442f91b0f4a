//! Changing the embedding model of an index that holds files (decision 0052), with the
//! `tessera-api` binary as a process on SQLite + qdrant-edge and on PostgreSQL +
//! qdrant-edge: start-up refuses the other model and names the command; once a generation
//! is begun (what `tessera-admin knowledge reindex` does), the running server takes it up
//! and serves from the vectors in use while it re-embeds in the background; killed with
//! SIGKILL midway, it goes on where it stopped; a file deleted and a file added to the dataset meanwhile are right
//! in the new generation; every chunk is in it once; the old model is then refused.

use std::{
    collections::BTreeSet,
    time::{Duration, Instant},
};

use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use tessera_knowledge::{GenerationState, GenerationStore, begin_generation};
use tessera_setup::config::Settings;
use tessera_store::{Backend, DatabaseUrl, SqlFileStore, testing::TestDatabase};

use crate::{
    binary::{Api, Running, announced, command, one_line, run_to_exit, start_with, terminate},
    crash_recovery::document,
};

const FILES: usize = 8;
const MINILM: &str = "all-MiniLM-L6-v2";
const BGE: &str = "bge-small-en-v1.5";

/// Where one deployment keeps its data: a folder, and the PostgreSQL database if any.
struct Deployment {
    dir: tempfile::TempDir,
    postgres: Option<TestDatabase>,
    models: String,
}

impl Deployment {
    async fn new(backend: Backend) -> Self {
        let models = crate::processing::models_root();
        Self {
            dir: tempfile::tempdir().unwrap(),
            postgres: match backend {
                Backend::Sqlite => None,
                Backend::Postgres => Some(TestDatabase::postgres().await),
            },
            models: models.to_str().unwrap().to_owned(),
        }
    }

    fn database_url(&self) -> Option<String> {
        self.postgres.as_ref().map(|db| match &db.url {
            DatabaseUrl::Postgres(url) => url.to_string(),
            DatabaseUrl::Sqlite(_) => unreachable!(),
        })
    }

    fn env(&self, model: &str) -> Vec<(&'static str, String)> {
        let mut env = vec![
            (
                "TESSERA_KNOWLEDGE__EMBEDDING_MODEL_DIR",
                self.models.clone(),
            ),
            ("TESSERA_KNOWLEDGE__EMBEDDING_MODEL", model.to_owned()),
            ("TESSERA_KNOWLEDGE__RERANK", "off".to_owned()),
            ("TESSERA_KNOWLEDGE__WORKERS", "1".to_owned()),
            ("TESSERA_KNOWLEDGE__LEASE_SECS", "2".to_owned()),
            ("TESSERA_KNOWLEDGE__POLL_SECS", "1".to_owned()),
            ("TESSERA_RATE_LIMIT__ENABLED", "false".to_owned()),
            ("CANDLE_NUM_THREADS", "1".to_owned()),
        ];
        if let Some(url) = self.database_url() {
            env.push(("DATABASE_URL", url));
        }
        env
    }

    fn start(&self, model: &str) -> Running {
        let env = self.env(model);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        start_with(self.dir.path(), "info", &env)
    }

    /// The server's exit code and last error when it is started with `model`.
    fn refused(&self, model: &str) -> (i32, String) {
        let mut refused = command(self.dir.path());
        for (key, value) in self.env(model) {
            refused.env(key, value);
        }
        let (code, stderr) = run_to_exit(&mut refused);
        (code, one_line(&stderr).to_owned())
    }

    /// The settings `tessera-admin` would read for this deployment.
    fn settings(&self) -> Settings {
        let mut settings = Settings {
            data_dir: self.dir.path().to_path_buf(),
            ..Settings::default()
        };
        if let Some(url) = self.database_url() {
            settings.database_url = Some(url.parse().unwrap());
        }
        settings
    }

    /// The `org:admin` client's id and secret: the first embedded start prints them; a
    /// PostgreSQL deployment is never bootstrapped, so its client is made here first (as
    /// `tessera-admin org create` and `client create` would).
    async fn admin_client(&self) -> Option<(String, String)> {
        self.postgres.as_ref()?;
        let settings = self.settings();
        let database = tessera_setup::open_database(&settings).await.unwrap();
        let tenancy = tessera_setup::tenancy(&settings, &database, &settings.issuer(0)).unwrap();
        let organization = tenancy
            .organizations
            .ensure_first("Default")
            .await
            .unwrap()
            .unwrap();
        let new = tessera_identity::NewClient {
            organization_id: organization.id,
            name: tessera_identity::ClientName::parse("reindexing").unwrap(),
            scopes: [tessera_kernel::Scope::ORG_ADMIN].into_iter().collect(),
        };
        let (client, secret) = tenancy
            .identity
            .create_client(new, &tessera_kernel::Actor::System)
            .await
            .unwrap();
        Some((client.id.to_string(), secret.expose().to_owned()))
    }

    /// The files' store, as `tessera-admin` opens it.
    async fn store(&self) -> SqlFileStore {
        let database = tessera_setup::open_database(&self.settings())
            .await
            .unwrap();
        SqlFileStore::new(database)
    }
}

async fn upload(api: &Api, number: usize) -> String {
    let form = Form::new().part(
        "file",
        Part::bytes(document(number).into_bytes()).file_name(format!("report-{number}.md")),
    );
    let file = api
        .send(
            api.client
                .post(format!("{}/v1/files", api.base))
                .multipart(form),
            201,
        )
        .await;
    file["id"].as_str().unwrap().to_owned()
}

async fn associate(api: &Api, file: &str, dataset: &str) {
    api.send(
        api.client
            .post(format!("{}/v1/files/{file}/associations", api.base))
            .json(&json!({"datasetId": dataset})),
        201,
    )
    .await;
}

/// The search hits of `body` in the dataset.
async fn search(api: &Api, dataset: &str, body: Value) -> Vec<Value> {
    let found = api
        .send(
            api.client
                .post(format!("{}/v1/datasets/{dataset}/search", api.base))
                .json(&body),
            200,
        )
        .await;
    found["items"].as_array().unwrap().clone()
}

/// The dataset's hits among `file`'s chunks, by chunk index (each once).
async fn chunks_found(api: &Api, dataset: &str, file: &str) -> BTreeSet<u64> {
    let query = json!({"query": "warehouse shelves", "limit": 50, "fileIds": [file]});
    let hits = search(api, dataset, query).await;
    let ordinals: BTreeSet<u64> = hits
        .iter()
        .map(|hit| hit["chunkIndex"].as_u64().unwrap())
        .collect();
    assert_eq!(ordinals.len(), hits.len(), "a chunk twice: {hits:#?}");
    ordinals
}

async fn wait_until_processed(api: &Api, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let files = api.files().await;
        if files.len() == count && files.iter().all(|f| f["status"] == "ready") {
            return files;
        }
        assert!(
            Instant::now() < deadline,
            "files still processing: {files:#?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Generation 1's files done and in all, and its state.
async fn generation_one(store: &SqlFileStore) -> (u64, u64, GenerationState) {
    let generations = store.generations().await.unwrap();
    let state = generations
        .iter()
        .find(|g| g.number == 1)
        .expect("generation 1 is recorded")
        .state;
    let progress = store.progress(1).await.unwrap();
    (progress.done, progress.total, state)
}

async fn the_model_changes_in_the_background_and_survives_a_kill(backend: Backend) {
    let deployment = Deployment::new(backend).await;
    let dir = deployment.dir.path();

    // Files embedded by all-MiniLM-L6-v2, most of them in a dataset.
    let made = deployment.admin_client().await;
    let mut first = deployment.start(MINILM);
    let (id, secret) = made.unwrap_or_else(|| {
        (
            announced(&first, "client_id:"),
            announced(&first, "client_secret:"),
        )
    });
    let api = Api::connect(dir, &first, &id, &secret).await;
    let mut files = Vec::new();
    for number in 0..FILES {
        files.push(upload(&api, number).await);
    }
    let processed = wait_until_processed(&api, FILES).await;
    let chunk_count = |file: &str| {
        let found = processed.iter().find(|f| f["id"] == file).unwrap();
        found["chunkCount"].as_u64().unwrap()
    };
    let dataset = api
        .send(
            api.client
                .post(format!("{}/v1/datasets", api.base))
                .json(&json!({"name": "Reports"})),
            201,
        )
        .await;
    let dataset = dataset["id"].as_str().unwrap().to_owned();
    // The last two stay out: one is deleted, one added while files are re-embedded.
    for file in &files[..FILES - 2] {
        associate(&api, file, &dataset).await;
    }
    assert_eq!(terminate(&mut first.child), 0);

    // Another model over this index stops start-up, naming the way to re-embed.
    let (code, line) = deployment.refused(BGE);
    assert_eq!(code, 1, "{line}");
    assert!(
        line.contains(&format!("{FILES} of {MINILM}"))
            && line.contains("tessera-admin knowledge reindex --model bge-small-en-v1.5"),
        "{line}"
    );

    // With the server running on its model, the operator begins a generation of
    // bge-small-en-v1.5 (what `tessera-admin knowledge reindex` does); the server takes it
    // up at its next poll, searching with the vectors in use and re-embedding meanwhile.
    let mut second = deployment.start(MINILM);
    let api = Api::connect(dir, &second, &id, &secret).await;
    let store = deployment.store().await;
    let begun = begin_generation(&store, &store, BGE, MINILM, chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!((begun.number, begun.state), (1, GenerationState::Building));
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let (done, _, state) = generation_one(&store).await;
        assert_eq!(state, GenerationState::Building);
        if done >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "re-embedding never got going");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        chunks_found(&api, &dataset, &files[0]).await,
        (0..chunk_count(&files[0])).collect(),
        "search answers from the vectors in use"
    );
    let removed = files[FILES - 1].clone();
    api.send(
        api.client
            .delete(format!("{}/v1/files/{removed}", api.base)),
        204,
    )
    .await;
    let added = files[FILES - 2].clone();
    associate(&api, &added, &dataset).await;
    let (done_at_kill, total, _) = generation_one(&store).await;
    second.child.kill().unwrap();
    second.child.wait().unwrap();
    assert!(
        done_at_kill < total,
        "the kill came after every file was re-embedded ({done_at_kill} of {total})"
    );

    // Restarted, now with the new model named (allowed while its generation builds), it goes
    // on where it stopped and puts the generation in use.
    let mut third = deployment.start(BGE);
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let (done, total, state) = generation_one(&store).await;
        if state == GenerationState::Active {
            assert_eq!((done, total), (FILES as u64 - 1, FILES as u64 - 1));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "re-embedding never ended: {done} of {total}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(third.logged("every ready file is re-embedded", Duration::from_secs(10)));
    assert_eq!(terminate(&mut third.child), 0);

    // The next start searches the new generation: every chunk of the dataset's files once,
    // the file added meanwhile among them, the deleted one gone.
    let mut fourth = deployment.start(BGE);
    let api = Api::connect(dir, &fourth, &id, &secret).await;
    for file in &files[..FILES - 1] {
        assert_eq!(
            chunks_found(&api, &dataset, file).await,
            (0..chunk_count(file)).collect(),
            "{file}"
        );
    }
    let everything = search(
        &api,
        &dataset,
        json!({"query": "warehouse shelves", "limit": 50}),
    )
    .await;
    assert!(
        everything
            .iter()
            .all(|hit| hit["fileId"] != removed.as_str()),
        "{everything:#?}"
    );
    assert!(fourth.logged(
        "a retired generation of the vector index",
        Duration::from_secs(5)
    ));
    assert_eq!(terminate(&mut fourth.child), 0);

    // The model of before is now the other one.
    let (code, line) = deployment.refused(MINILM);
    assert_eq!(code, 1, "{line}");
    assert!(
        line.contains(&format!("the index in use holds the vectors of {BGE}")),
        "{line}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedding_model_changes_in_the_background_on_sqlite() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    the_model_changes_in_the_background_and_survives_a_kill(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedding_model_changes_in_the_background_on_postgres() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    the_model_changes_in_the_background_and_survives_a_kill(Backend::Postgres).await;
}
