//! `tessera-admin` as a process, against real SQLite and PostgreSQL databases.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use serde_json::Value;
use tessera_store::{Backend, testing::TestDatabase};

/// A data directory plus, for Postgres, a throwaway database; commands run against them.
struct Env {
    data_dir: tempfile::TempDir,
    database: Option<TestDatabase>,
}

impl Env {
    async fn new(backend: Backend) -> Self {
        let database = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(TestDatabase::postgres().await),
        };
        Self {
            data_dir: tempfile::tempdir().unwrap(),
            database,
        }
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        self.run_with(args, &[])
    }

    /// Runs with extra environment variables (settings).
    fn run_with(&self, args: &[&str], vars: &[(&str, &str)]) -> (i32, String, String) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tessera-admin"));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("TESSERA_DATA_DIR", self.data_dir.path())
            .envs(vars.iter().copied())
            .args(args);
        if let Some(db) = &self.database {
            let tessera_store::DatabaseUrl::Postgres(url) = &db.url else {
                unreachable!()
            };
            command.env("DATABASE_URL", url);
        }
        let output = command.output().unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    }

    /// Runs with `--json`, expects success and exactly one JSON object on stdout.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let (code, stdout, stderr) = self.run(&all);
        assert_eq!(code, 0, "{args:?} failed: {stderr}");
        assert_eq!(stdout.lines().count(), 1, "one line of JSON: {stdout}");
        serde_json::from_str(&stdout).unwrap()
    }
}

async fn migrate_applies_once(backend: Backend) {
    let env = Env::new(backend).await;
    let first = env.json(&["migrate"]);
    if backend == Backend::Sqlite {
        assert!(!first["applied"].as_array().unwrap().is_empty(), "{first}");
        assert!(first["database"].as_str().unwrap().starts_with("sqlite://"));
    } else {
        // The test database arrives migrated.
        assert!(
            first["database"]
                .as_str()
                .unwrap()
                .starts_with("postgres://")
        );
    }
    let second = env.json(&["migrate"]);
    assert_eq!(second["applied"], serde_json::json!([]));
    let (code, text, _) = env.run(&["migrate"]);
    assert_eq!(
        (code, text.trim_end().ends_with("up to date")),
        (0, true),
        "{text}"
    );
}

async fn organizations_are_created_and_listed(backend: Backend) {
    let env = Env::new(backend).await;
    let created = env.json(&["org", "create", "--name", "Acme Corp", "--plan", "pro"]);
    assert!(created["id"].as_str().unwrap().starts_with("org_"));
    assert_eq!(
        (created["name"].as_str(), created["plan"].as_str()),
        (Some("Acme Corp"), Some("pro"))
    );
    assert!(created["createdAt"].is_string());
    let listed = env.json(&["org", "list"]);
    assert_eq!(listed["items"][0]["id"], created["id"]);
    assert_eq!(
        (listed["totalCount"].as_u64(), listed["hasMore"].as_bool()),
        (Some(1), Some(false))
    );

    let (code, text, _) = env.run(&["org", "create", "--name", "Beta"]);
    assert_eq!(code, 0);
    assert!(
        text.contains("Beta") && text.contains("plan free"),
        "{text}"
    );
}

async fn lists_page_with_cursors(backend: Backend) {
    let env = Env::new(backend).await;
    let ids: Vec<Value> = (0..3)
        .map(|i| env.json(&["org", "create", "--name", &format!("org {i}")])["id"].clone())
        .collect();
    let first = env.json(&["org", "list", "--limit", "2"]);
    assert_eq!(
        first["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["id"].clone())
            .collect::<Vec<_>>(),
        ids[..2]
    );
    assert_eq!(first["hasMore"], true);
    let cursor = first["nextCursor"].as_str().unwrap();
    let second = env.json(&["org", "list", "--limit", "2", "--cursor", cursor]);
    assert_eq!(second["items"][0]["id"], ids[2]);
    assert_eq!(
        (second["hasMore"].as_bool(), second["nextCursor"].is_null()),
        (Some(false), true)
    );
}

async fn bad_input_is_a_clear_error(backend: Backend) {
    let env = Env::new(backend).await;
    let (code, stdout, stderr) = env.run(&["org", "create", "--name", "   ", "--json"]);
    assert_eq!(code, 1);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap()["error"],
        "--name: name must not be blank"
    );
    assert!(stderr.starts_with("error: --name"), "{stderr}");
    let (code, _, stderr) = env.run(&["org", "create", "--name", "x", "--plan", "gold"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown plan `gold`"), "{stderr}");
    let (code, _, stderr) = env.run(&["org", "list", "--cursor", "forged.AAAAAAAAAAAAAAAAAAAAAA"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("cursor"), "{stderr}");
    let (code, _, stderr) = env.run(&["org", "list", "--limit", "101"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("--limit: limit must be between 1 and 100"),
        "{stderr}"
    );
}

async fn organization_settings_are_changed_and_audited(backend: Backend) {
    let env = Env::new(backend).await;
    let created = env.json(&["org", "create", "--name", "Acme"]);
    assert_eq!(created["imageOcr"], false, "off until turned on: {created}");
    let org = created["id"].as_str().unwrap().to_owned();
    let other = env.json(&["org", "create", "--name", "Globex"])["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let changed = env.json(&["org", "set", "--org", &org, "--image-ocr", "true"]);
    assert_eq!(
        (
            &changed["id"],
            &changed["name"],
            &changed["plan"],
            &changed["imageOcr"]
        ),
        (
            &created["id"],
            &created["name"],
            &created["plan"],
            &Value::Bool(true)
        ),
        "{changed}"
    );
    assert_eq!(changed["createdAt"], created["createdAt"]);
    let listed = env.json(&["org", "list"]);
    let setting = |id: &str| {
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["id"] == id)
            .map(|item| item["imageOcr"].clone())
    };
    assert_eq!(setting(&org), Some(Value::Bool(true)));
    assert_eq!(
        setting(&other),
        Some(Value::Bool(false)),
        "another organization is unaffected"
    );

    let (code, text, _) = env.run(&["org", "set", "--org", &org, "--image-ocr", "false"]);
    assert_eq!(code, 0);
    assert_eq!(
        text.trim_end(),
        format!("organization \"Acme\" ({org}): image OCR off")
    );
    let updates = env.json(&[
        "audit",
        "list",
        "--org",
        &org,
        "--action",
        "organization.update",
    ]);
    let events = updates["items"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{updates}");
    for event in events {
        assert_eq!(
            (
                &event["resourceType"],
                &event["resourceId"],
                &event["actorKind"],
                &event["actorId"]
            ),
            (
                &Value::from("organization"),
                &Value::from(org.as_str()),
                &Value::from("operator"),
                &Value::from("tessera-admin")
            ),
            "{event}"
        );
    }

    // Bad input names its option; nothing is changed.
    let (code, _, stderr) = env.run(&["org", "set", "--org", &org, "--image-ocr", "maybe"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--image-ocr"), "{stderr}");
    let (code, _, stderr) = env.run(&["org", "set", "--org", &org]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--image-ocr"), "{stderr}");
    let (code, stdout, stderr) = env.run(&[
        "org",
        "set",
        "--org",
        "org_missing",
        "--image-ocr",
        "true",
        "--json",
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap()["error"],
        "--org: organization org_missing was not found"
    );
    assert!(stderr.starts_with("error: --org"), "{stderr}");
    let (code, _, stderr) = env.run(&["org", "set", "--org", "", "--image-ocr", "true"]);
    assert_eq!(code, 1);
    assert!(stderr.starts_with("error: --org: "), "{stderr}");
}

async fn clients_are_created_rotated_listed_and_revoked(backend: Backend) {
    let env = Env::new(backend).await;
    let org = env.json(&["org", "create", "--name", "Acme"])["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let created = env.json(&[
        "client",
        "create",
        "--org",
        &org,
        "--scopes",
        "chats:invoke,files:read",
    ]);
    let client_id = created["clientId"].as_str().unwrap().to_owned();
    assert!(client_id.starts_with("cli_"));
    assert!(
        created["clientSecret"]
            .as_str()
            .unwrap()
            .starts_with("tss_")
    );
    assert_eq!(created["organizationId"], org.as_str());
    assert_eq!(
        created["scopes"],
        serde_json::json!(["chats:invoke", "files:read"])
    );

    let listed = env.json(&["client", "list", "--org", &org]);
    assert_eq!(
        (
            listed["totalCount"].as_u64(),
            listed["items"][0]["id"].as_str()
        ),
        (Some(1), Some(client_id.as_str()))
    );
    assert!(
        listed["items"][0].get("secretHash").is_none() && !listed.to_string().contains("argon2"),
        "no hash is ever printed"
    );

    let rotated = env.json(&["client", "rotate", "--org", &org, "--id", &client_id]);
    assert_ne!(rotated["clientSecret"], created["clientSecret"]);
    assert_eq!(
        env.json(&["client", "list", "--org", &org])["items"][0]["secretGeneration"],
        2
    );

    // Another organization cannot touch the client.
    let other = env.json(&["org", "create", "--name", "Other"])["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, _, stderr) = env.run(&["client", "revoke", "--org", &other, "--id", &client_id]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("was not found"), "{stderr}");
    assert_eq!(
        env.json(&["client", "list", "--org", &other])["totalCount"],
        0
    );

    assert_eq!(
        env.json(&["client", "revoke", "--org", &org, "--id", &client_id])["revoked"],
        true
    );
    assert!(!env.json(&["client", "list", "--org", &org])["items"][0]["revokedAt"].is_null());
    let (code, _, _) = env.run(&["client", "rotate", "--org", &org, "--id", &client_id]);
    assert_eq!(code, 1, "a revoked client cannot be rotated back to life");
}

async fn client_input_is_checked(backend: Backend) {
    let env = Env::new(backend).await;
    let org = env.json(&["org", "create", "--name", "Acme"])["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (args, expected) in [
        (
            vec![
                "client",
                "create",
                "--org",
                "org_missing",
                "--scopes",
                "files:read",
            ],
            "--org: organization org_missing was not found",
        ),
        (
            vec!["client", "create", "--org", &org, "--scopes", "files:fly"],
            "--scopes: unknown scope `files:fly`",
        ),
        (
            vec!["client", "create", "--org", &org, "--scopes", ""],
            "--scopes: at least one scope is required",
        ),
        (
            vec!["client", "rotate", "--org", &org, "--id", "nope"],
            "--id:",
        ),
    ] {
        let (code, _, stderr) = env.run(&args);
        assert_eq!(code, 1, "{args:?}");
        assert!(
            stderr.starts_with(&format!("error: {expected}")),
            "{args:?}: {stderr}"
        );
    }
}

async fn api_keys_are_created_listed_and_revoked(backend: Backend) {
    let env = Env::new(backend).await;
    let org = env.json(&["org", "create", "--name", "Acme"])["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let created = env.json(&[
        "key",
        "create",
        "--org",
        &org,
        "--name",
        "support bot",
        "--scopes",
        "chats:invoke models:read",
        "--expires-at",
        "2999-01-01T00:00:00+01:00",
    ]);
    let id = created["id"].as_str().unwrap().to_owned();
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(id.starts_with("key_"), "{created}");
    assert!(
        secret.starts_with("tsk_") && secret.len() == 47,
        "{created}"
    );
    assert_eq!(
        created["scopes"],
        serde_json::json!(["chats:invoke", "models:read"])
    );
    assert_eq!(created["expiresAt"], "2998-12-31T23:00:00Z");
    assert_eq!(
        (
            created["organizationId"].as_str(),
            created["createdBy"].as_str()
        ),
        (Some(org.as_str()), Some("tessera-admin"))
    );

    // Text output prints the secret once, with the warning.
    let (code, stdout, stderr) = env.run(&[
        "key",
        "create",
        "--org",
        &org,
        "--name",
        "ci",
        "--scopes",
        "files:read",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("secret: tsk_") && stdout.contains("not shown again"),
        "{stdout}"
    );

    let listed = env.json(&["key", "list", "--org", &org]);
    assert_eq!(listed["totalCount"], 2, "{listed}");
    assert_eq!(listed["items"][0]["id"], id.as_str());
    assert!(
        !listed.to_string().contains("tsk_") && listed["items"][0].get("secretHash").is_none(),
        "neither secrets nor hashes are listed: {listed}"
    );
    let (code, stdout, _) = env.run(&["key", "list", "--org", &org]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains(&id) && stdout.contains("never used"),
        "{stdout}"
    );

    // Another organization cannot revoke it.
    let other = env.json(&["org", "create", "--name", "Other"])["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, _, stderr) = env.run(&["key", "revoke", "--org", &other, &id]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("was not found"), "{stderr}");

    assert_eq!(
        env.json(&["key", "revoke", "--org", &org, &id])["revoked"],
        true
    );
    let listed = env.json(&["key", "list", "--org", &org]);
    assert_eq!(listed["totalCount"], 1, "revoked keys are not listed");
    let (code, _, _) = env.run(&["key", "revoke", "--org", &org, &id]);
    assert_eq!(code, 1, "revoked once");

    for (args, expected) in [
        (
            vec![
                "key",
                "create",
                "--org",
                "org_missing",
                "--name",
                "x",
                "--scopes",
                "files:read",
            ],
            "--org: organization org_missing was not found",
        ),
        (
            vec![
                "key",
                "create",
                "--org",
                &org,
                "--name",
                "x",
                "--scopes",
                "files:fly",
            ],
            "--scopes: unknown scope `files:fly`",
        ),
        (
            vec![
                "key",
                "create",
                "--org",
                &org,
                "--name",
                " ",
                "--scopes",
                "files:read",
            ],
            "--name: must be 1 to 255 characters",
        ),
        (
            vec![
                "key",
                "create",
                "--org",
                &org,
                "--name",
                "x",
                "--scopes",
                "files:read",
                "--expires-at",
                "2001-01-01T00:00:00Z",
            ],
            "--expires-at: must lie in the future",
        ),
        (vec!["key", "revoke", "--org", &org, "nope"], "<id>:"),
    ] {
        let (code, _, stderr) = env.run(&args);
        assert_eq!(code, 1, "{args:?}");
        assert!(
            stderr.starts_with(&format!("error: {expected}")),
            "{args:?}: {stderr}"
        );
    }
}

async fn audit_list_shows_what_operators_changed(backend: Backend) {
    let env = Env::new(backend).await;
    let org = env.json(&["org", "create", "--name", "Acme"])["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let other = env.json(&["org", "create", "--name", "Globex"])["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let client = env.json(&[
        "client",
        "create",
        "--org",
        &org,
        "--name",
        "ci",
        "--scopes",
        "files:read",
    ])["clientId"]
        .as_str()
        .unwrap()
        .to_owned();
    let key = env.json(&[
        "key",
        "create",
        "--org",
        &org,
        "--name",
        "bot",
        "--scopes",
        "models:read",
    ])["id"]
        .as_str()
        .unwrap()
        .to_owned();
    env.json(&["key", "revoke", "--org", &org, &key]);
    env.json(&["client", "revoke", "--org", &org, "--id", &client]);

    let listed = env.json(&["audit", "list", "--org", &org]);
    let found: Vec<(String, String, String, String)> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
            (
                text("action"),
                text("resourceId"),
                text("actorKind"),
                text("actorId"),
            )
        })
        .collect();
    let by_operator = |action: &str, id: &str| {
        (
            action.to_owned(),
            id.to_owned(),
            "operator".to_owned(),
            "tessera-admin".to_owned(),
        )
    };
    assert_eq!(
        found,
        [
            by_operator("client.revoke", &client),
            by_operator("api_key.revoke", &key),
            by_operator("api_key.create", &key),
            by_operator("client.create", &client),
            by_operator("organization.create", &org),
        ],
        "newest first: {listed}"
    );
    assert_eq!(listed["totalCount"], 5);

    // Filters, pages, every organization at once, and text output.
    let revocations = env.json(&["audit", "list", "--org", &org, "--action", "api_key.revoke"]);
    assert_eq!(revocations["items"].as_array().unwrap().len(), 1);
    let page = env.json(&["audit", "list", "--limit", "2"]);
    assert_eq!(
        (page["totalCount"].as_u64(), page["hasMore"].as_bool()),
        (Some(6), Some(true))
    );
    let cursor = page["nextCursor"].as_str().unwrap();
    let rest = env.json(&["audit", "list", "--limit", "100", "--cursor", cursor]);
    assert_eq!(rest["items"].as_array().unwrap().len(), 4);
    let theirs = env.json(&["audit", "list", "--org", &other]);
    assert_eq!(theirs["items"][0]["action"], "organization.create");
    assert_eq!(theirs["totalCount"], 1);
    let (code, stdout, _) = env.run(&["audit", "list", "--org", &org, "--resource-id", &key]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("api_key.revoke") && stdout.contains("operator:tessera-admin"),
        "{stdout}"
    );

    // Bad filters name their option.
    let (code, _, stderr) = env.run(&["audit", "list", "--actor-kind", "root"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("--actor-kind: must be one of"), "{stderr}");
    let (code, _, stderr) = env.run(&[
        "audit",
        "list",
        "--from",
        "2026-01-02T00:00:00Z",
        "--to",
        "2026-01-01T00:00:00Z",
    ]);
    assert_ne!(code, 0);
    assert!(stderr.contains("--to: must be later"), "{stderr}");
}

tessera_store::on_both_databases!(
    audit_list_shows_what_operators_changed,
    migrate_applies_once,
    organizations_are_created_and_listed,
    organization_settings_are_changed_and_audited,
    lists_page_with_cursors,
    bad_input_is_a_clear_error,
    clients_are_created_rotated_listed_and_revoked,
    client_input_is_checked,
    api_keys_are_created_listed_and_revoked,
    knowledge_reindex_begins_one_generation_and_shows_progress,
);

/// Stores `count` ready files of one organization, each of two chunks embedded by
/// all-MiniLM-L6-v2, as the server's processing leaves them.
async fn ready_files(env: &Env, count: usize) {
    use tessera_knowledge::{
        FileReady, FileStore,
        contract::{audited, chunk, stored_file},
    };
    let mut settings = tessera_setup::config::Settings {
        data_dir: env.data_dir.path().to_path_buf(),
        ..tessera_setup::config::Settings::default()
    };
    if let Some(db) = &env.database {
        settings.database_url = Some(db.url.clone());
    }
    let database = tessera_setup::open_database(&settings).await.unwrap();
    let organization = tessera_kernel::OrganizationId::generate();
    tessera_store::testing::store_organization(&database, &organization, "Acme").await;
    let files = tessera_store::SqlFileStore::new(database);
    for number in 0..count {
        let file = stored_file(&organization, &format!("{number}.md"), 'a');
        files
            .insert(&file, true, None, &audited(&organization))
            .await
            .unwrap();
        let now = chrono::Utc::now();
        let job = files
            .claim_job("w", now, now + chrono::Duration::minutes(1))
            .await
            .unwrap()
            .unwrap();
        let chunks = [chunk(0, "one"), chunk(1, "two")];
        let ready = FileReady::of(&job.file, 2, now);
        assert!(
            files
                .complete_job("w", &chunks, "all-MiniLM-L6-v2", 0, &ready)
                .await
                .unwrap()
        );
    }
}

/// `knowledge reindex` names embedded models only, has nothing to do over an empty index,
/// begins one generation (again: the same, with its progress), refuses a second model while
/// one builds; `knowledge status` lists the generations.
async fn knowledge_reindex_begins_one_generation_and_shows_progress(backend: Backend) {
    let env = Env::new(backend).await;
    assert_eq!(
        env.json(&["knowledge", "status"]),
        serde_json::json!({"generations": []})
    );
    let (code, _, stderr) = env.run(&["knowledge", "reindex"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(
            "--model: name the model to re-embed with, one of: all-MiniLM-L6-v2, bge-small-en-v1.5"
        ),
        "{stderr}"
    );
    let (code, _, stderr) = env.run(&["knowledge", "reindex", "--model", "bge-large"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("`bge-large` is not an embedded embedding model"),
        "{stderr}"
    );
    let (code, _, stderr) = env.run(&["knowledge", "reindex", "--model", "bge-small-en-v1.5"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("nothing to re-embed"), "{stderr}");

    ready_files(&env, 3).await;
    let begun = env.json(&["knowledge", "reindex", "--model", "bge-small-en-v1.5"]);
    assert_eq!(
        (
            &begun["generation"],
            &begun["state"],
            &begun["embeddingModel"]
        ),
        (
            &serde_json::json!(1),
            &serde_json::json!("building"),
            &serde_json::json!("bge-small-en-v1.5")
        )
    );
    assert_eq!(
        (&begun["filesDone"], &begun["filesTotal"]),
        (&serde_json::json!(0), &serde_json::json!(3))
    );
    // The setting names the model when --model does not; asking again shows the same one.
    let (code, stdout, stderr) = env.run_with(
        &["knowledge", "reindex"],
        &[("TESSERA_KNOWLEDGE__EMBEDDING_MODEL", "bge-small-en-v1.5")],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with("generation 1  building  bge-small-en-v1.5   0/3 files"),
        "{stdout}"
    );
    let (code, _, stderr) = env.run(&["knowledge", "reindex", "--model", "all-MiniLM-L6-v2"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("generation 1 of bge-small-en-v1.5 is being built"),
        "{stderr}"
    );
    let status = env.json(&["knowledge", "status"]);
    let states: Vec<(&Value, &Value, &Value)> = status["generations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (&g["generation"], &g["embeddingModel"], &g["state"]))
        .collect();
    assert_eq!(
        states,
        vec![
            (
                &serde_json::json!(0),
                &serde_json::json!("all-MiniLM-L6-v2"),
                &serde_json::json!("active")
            ),
            (
                &serde_json::json!(1),
                &serde_json::json!("bge-small-en-v1.5"),
                &serde_json::json!("building")
            ),
        ]
    );
}

/// A key the CLI creates works on a server started over the same data directory: both hash
/// keys under the same generated `api-key.key`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_made_by_the_cli_authenticate_on_the_server() {
    let env = Env::new(Backend::Sqlite).await;
    let org = env.json(&["org", "create", "--name", "Acme"])["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let created = env.json(&[
        "key",
        "create",
        "--org",
        &org,
        "--name",
        "bot",
        "--scopes",
        "models:read",
    ]);
    let settings = tessera_setup::config::Settings {
        data_dir: env.data_dir.path().to_path_buf(),
        ..tessera_setup::config::Settings::default()
    };
    let database = tessera_setup::open_database(&settings).await.unwrap();
    let tenancy = tessera_setup::tenancy(&settings, &database, "https://localhost:8443").unwrap();
    let principal = tenancy
        .identity
        .authenticate(created["secret"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(principal.subject, created["id"].as_str().unwrap());
    assert_eq!(principal.organization_id.as_str(), org);
    assert_eq!(principal.kind, tessera_kernel::PrincipalKind::ApiKey);
    assert_eq!(principal.scopes.to_string(), "models:read");
    assert!(env.data_dir.path().join("api-key.key").exists());
}

/// The folder `just models` fills (the embedding model is found anywhere below it).
fn models_root() -> std::path::PathBuf {
    std::env::var_os("TESSERA_MODELS_DIR").map_or_else(
        || {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap())
                .join(".cache/tessera-models")
        },
        std::path::PathBuf::from,
    )
}

/// A running server holds the embedded vector index of its data directory; the CLI's tenant
/// commands do not open it, so they work beside the server with the same settings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_commands_work_while_the_server_holds_the_index() {
    let env = Env::new(Backend::Sqlite).await;
    let models = models_root();
    let mut settings = tessera_setup::config::Settings {
        data_dir: env.data_dir.path().to_path_buf(),
        listen: "127.0.0.1:0".parse().unwrap(),
        ..tessera_setup::config::Settings::default()
    };
    settings.http.workers = 1;
    settings.knowledge.embedding_model_dir = Some(models.clone());
    let app = tessera_api::startup::Application::build(settings)
        .await
        .expect("the server starts");
    let handle = app.handle();
    let server = tokio::spawn(app.run_until_stopped());
    assert!(
        env.data_dir.path().join("vectors").exists(),
        "the server opened no embedded index: is the embedding model under {}? (`just models`)",
        models.display()
    );
    let models = models.to_string_lossy().into_owned();
    let vars = [("TESSERA_KNOWLEDGE__EMBEDDING_MODEL_DIR", models.as_str())];
    let (code, stdout, stderr) = env.run_with(&["org", "list", "--json"], &vars);
    assert_eq!(code, 0, "org list beside the server failed: {stderr}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        listed["totalCount"], 1,
        "the bootstrap organization: {listed}"
    );
    handle.stop(true).await;
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_keys_rotate_and_old_ones_keep_verifying() {
    let env = Env::new(Backend::Sqlite).await;
    let first = env.json(&["keys", "list"]);
    assert_eq!(first["kids"].as_array().unwrap().len(), 1, "{first}");
    let rotated = env.json(&["keys", "rotate"]);
    let kids = rotated["kids"].as_array().unwrap();
    assert_eq!(kids.len(), 2, "{rotated}");
    assert_ne!(rotated["signingKid"], first["signingKid"]);
    assert_eq!(rotated["signingKid"], kids[1], "the newest key signs");
    assert!(
        kids.contains(&first["signingKid"]),
        "the old key still verifies"
    );
}

/// `migrate --part` migrates those parts of the schema (and what they need) only; the rest
/// follows with a plain `migrate`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_takes_parts() {
    let env = Env::new(Backend::Sqlite).await;
    let (code, _, stderr) = env.run(&["migrate", "--part", "billing"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("unknown store part `billing`"), "{stderr}");

    let chats = env.json(&["migrate", "--part", "chats"]);
    let applied: Vec<&str> = (chats["applied"].as_array().unwrap().iter())
        .map(|version| version.as_str().unwrap())
        .collect();
    // Organizations (the tenants part it needs) and chats; no usage (000009) or webhooks.
    assert!(applied.contains(&"20261122000001"), "{chats}");
    assert!(applied.contains(&"20261122000006"), "{chats}");
    assert!(!applied.contains(&"20261122000009"), "{chats}");
    assert!(!applied.contains(&"20261124000011"), "{chats}");
    let rest = env.json(&["migrate"]);
    assert!(
        (rest["applied"].as_array().unwrap().iter()).any(|v| v == "20261122000009"),
        "{rest}"
    );
    assert_eq!(env.json(&["migrate"])["applied"], serde_json::json!([]));
}

#[test]
fn bad_configuration_is_one_line_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_tessera-admin"))
        .env_clear()
        .env("TESSERA_DATA_DIR", dir.path())
        .env("DATABASE_URL", "mysql://nope")
        .args(["migrate"])
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: config key `database_url` (from DATABASE_URL)"),
        "{stderr}"
    );
}
