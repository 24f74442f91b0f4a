//! Typed configuration: a TOML file (`--config`) overlaid with environment variables, checked
//! completely at start-up. Each key `a.b` of the file can be set by `TESSERA_A__B` (e.g.
//! `listen` ← `TESSERA_LISTEN`, `tls.cert` ← `TESSERA_TLS__CERT`); `DATABASE_URL` sets
//! `database_url`. Unknown keys, in the file or in `TESSERA_*` variables, are errors: a typo
//! must not silently fall back to a default. Every error is one line naming the key.

use std::{
    collections::BTreeMap,
    fmt,
    net::{IpAddr, SocketAddr},
    path::{Path, PathBuf},
    str::FromStr,
};

use serde::Deserialize;
use tessera_store::DatabaseUrl;

use crate::otel::{OtelBool, OtlpCompression, TraceSampler};

const ENV_PREFIX: &str = "TESSERA_";
/// The most candidates `knowledge.rerank_candidates` may send to the cross-encoder per search.
const MAX_RERANK_CANDIDATES: usize = 200;
/// Environment variables outside the `TESSERA_` prefix that are read: the key each sets, and
/// the keys it also clears (set by the file or `TESSERA_*`, which these variables override).
/// Listed in increasing precedence: a later variable setting the same key wins, so the
/// OpenTelemetry variables go generic first, then the traces' own (decision 0044). An empty
/// variable counts as unset, as the OpenTelemetry specification says.
const ENV_ALIASES: &[(&str, &str, &[&str])] = &[
    ("DATABASE_URL", "database_url", &[]),
    ("REDIS_URL", "redis_url", &[]),
    ("QDRANT_URL", "knowledge.qdrant_url", &[]),
    // The OpenTelemetry SDK's standard variables.
    (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "telemetry.otlp_endpoint",
        &["telemetry.otlp_traces_endpoint"],
    ),
    ("OTEL_EXPORTER_OTLP_HEADERS", "telemetry.otlp_headers", &[]),
    (
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "telemetry.otlp_protocol",
        &[],
    ),
    (
        "OTEL_EXPORTER_OTLP_TIMEOUT",
        "telemetry.otlp_timeout_ms",
        &[],
    ),
    (
        "OTEL_EXPORTER_OTLP_COMPRESSION",
        "telemetry.otlp_compression",
        &[],
    ),
    (
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "telemetry.otlp_traces_endpoint",
        &[],
    ),
    (
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "telemetry.otlp_headers",
        &[],
    ),
    (
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "telemetry.otlp_protocol",
        &[],
    ),
    (
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "telemetry.otlp_timeout_ms",
        &[],
    ),
    (
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
        "telemetry.otlp_compression",
        &[],
    ),
    ("OTEL_SERVICE_NAME", "telemetry.service_name", &[]),
    ("OTEL_TRACES_SAMPLER", "telemetry.sampler", &[]),
    ("OTEL_TRACES_SAMPLER_ARG", "telemetry.sampling_ratio", &[]),
    (
        "OTEL_RESOURCE_ATTRIBUTES",
        "telemetry.resource_attributes",
        &[],
    ),
    ("OTEL_SDK_DISABLED", "telemetry.disabled", &[]),
];

/// A configuration problem, reported before anything starts.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {message}")]
    File { path: String, message: String },
    #[error("config key `{key}`{source_note}: {message}")]
    Invalid {
        key: String,
        source_note: String,
        message: String,
    },
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            other => Err(format!("expected `text` or `json`, got `{other}`")),
        }
    }
}

/// The embedded embedding model's arithmetic (`knowledge.embedding_precision`), as the
/// settings spell it; the app turns it into the embedder's own precision where it builds
/// the embedder, so the settings need no inference library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EmbeddingPrecision {
    /// 8-bit dense layers where the CPU has AVX-512 VNNI or AVX2, `f32` elsewhere.
    #[default]
    Auto,
    /// `f32` throughout: the reference model's vectors to float rounding.
    F32,
    /// 8-bit everywhere; without VNNI or AVX2 a portable kernel computes them slowly.
    Int8,
}

impl FromStr for EmbeddingPrecision {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" => Ok(Self::Auto),
            "f32" => Ok(Self::F32),
            "int8" => Ok(Self::Int8),
            other => Err(format!("expected `auto`, `f32` or `int8`, got `{other}`")),
        }
    }
}

/// Whether a feature that needs something installed runs: OCR (`knowledge.ocr`: PDF pages
/// without a text layer, and the uploaded images of organizations that opted in) and
/// reranking (`knowledge.rerank`: the cross-encoder's model files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Switch {
    /// When what it needs is installed; a warning otherwise.
    #[default]
    Auto,
    /// Always: the service does not start without it.
    On,
    /// Never.
    Off,
}

impl FromStr for Switch {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" => Ok(Self::Auto),
            "on" | "true" => Ok(Self::On),
            "off" | "false" => Ok(Self::Off),
            other => Err(format!("expected `auto`, `on` or `off`, got `{other}`")),
        }
    }
}

/// Where the TLS certificate comes from.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TlsSettings {
    /// PEM certificate chain. With `key`; when both are absent a self-signed certificate is
    /// generated under `data_dir/tls` on first run and reused after.
    pub cert: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: Option<PathBuf>,
}

/// HTTP server tuning.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSettings {
    /// Peers allowed to set `X-Forwarded-Proto` / `X-Forwarded-For` (TLS-terminating proxies).
    #[serde(deserialize_with = "lenient::list")]
    pub trusted_proxies: Vec<IpAddr>,
    /// Seconds running chat generations get to finish after SIGTERM (new completions are
    /// refused meanwhile), then seconds in-flight requests get to finish.
    #[serde(deserialize_with = "lenient::parse")]
    pub shutdown_timeout_secs: u64,
    /// Worker threads; 0 means one per CPU.
    #[serde(deserialize_with = "lenient::parse")]
    pub workers: usize,
    /// Largest JSON request body, in bytes.
    #[serde(deserialize_with = "lenient::parse")]
    pub json_limit_bytes: usize,
    /// Largest total size of a request's headers (names and values), in bytes.
    #[serde(deserialize_with = "lenient::parse")]
    pub max_header_bytes: usize,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            trusted_proxies: Vec::new(),
            shutdown_timeout_secs: 30,
            workers: 0,
            json_limit_bytes: 2 * 1024 * 1024,
            max_header_bytes: 16 * 1024,
        }
    }
}

/// Database pool tuning.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseSettings {
    #[serde(deserialize_with = "lenient::parse")]
    pub max_connections: usize,
    #[serde(deserialize_with = "lenient::parse")]
    pub acquire_timeout_secs: u64,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            max_connections: 16,
            acquire_timeout_secs: 5,
        }
    }
}

/// Access tokens issued by this service.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSettings {
    /// The `iss` of issued tokens and the issuer of the discovery document; the service's
    /// public base URL. Defaults to `https://localhost:<port>` (or the listen address).
    pub issuer: Option<String>,
    /// The `aud` of issued tokens.
    pub audience: String,
    #[serde(deserialize_with = "lenient::parse")]
    pub token_lifetime_secs: u64,
    /// Clock skew tolerated when checking `exp` and `nbf`.
    #[serde(deserialize_with = "lenient::parse")]
    pub leeway_secs: u64,
    /// Directory of Ed25519 signing keys (`<kid>.pem`); defaults to `data_dir/keys`.
    pub keys_dir: Option<PathBuf>,
    /// External identity providers whose session tokens are accepted (`[[auth.oidc]]`).
    pub oidc: Vec<OidcSettings>,
}

/// One external OpenID Connect provider.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OidcSettings {
    /// Its issuer URL; discovery is read from `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    /// The audience its tokens must name.
    pub audience: String,
    /// The claim holding the organization id.
    #[serde(default = "default_organization_claim")]
    pub organization_claim: String,
    /// The claim holding the scopes (string or array).
    #[serde(default = "default_scopes_claim")]
    pub scopes_claim: String,
    /// Least seconds between two fetches of its keys (fetched again on an unknown `kid`).
    #[serde(
        default = "default_jwks_refresh_secs",
        deserialize_with = "lenient::parse"
    )]
    pub jwks_refresh_secs: u64,
}

fn default_organization_claim() -> String {
    "org_id".to_owned()
}

fn default_scopes_claim() -> String {
    "scope".to_owned()
}

fn default_jwks_refresh_secs() -> u64 {
    10
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            issuer: None,
            audience: "tessera-api".to_owned(),
            token_lifetime_secs: 3600,
            leeway_secs: 30,
            keys_dir: None,
            oidc: Vec::new(),
        }
    }
}

/// Request budgets (GCRA), per minute.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimitSettings {
    #[serde(deserialize_with = "lenient::parse")]
    pub enabled: bool,
    /// Requests per minute of one organization, all its users and clients together.
    #[serde(deserialize_with = "lenient::parse")]
    pub organization_per_minute: u32,
    /// Requests per minute of one user or client.
    #[serde(deserialize_with = "lenient::parse")]
    pub principal_per_minute: u32,
    /// Token requests per minute from one peer address.
    #[serde(deserialize_with = "lenient::parse")]
    pub anonymous_per_minute: u32,
}

impl Default for RateLimitSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            organization_per_minute: 300,
            principal_per_minute: 60,
            anonymous_per_minute: 60,
        }
    }
}

/// The model catalog.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ModelsSettings {
    /// A TOML catalog of base models replacing the built-in one
    /// (`crates/models/catalog.toml` shows the format).
    pub catalog_file: Option<PathBuf>,
    /// Where the embedded engine finds the model files of `local` base models (searched
    /// recursively by `model_name`; `just models` fills `~/.cache/tessera-models`). Unset or
    /// without the file, those base models are disabled.
    pub local_dir: Option<PathBuf>,
    /// Memory (MiB) each embedded model keeps for the keys and values of recent prompts, so a
    /// chat's next turn and chats sharing a system prompt only run their new tokens
    /// (256 by default, about 5,800 positions of SmolLM2-135M; 0 turns reuse off).
    #[serde(deserialize_with = "lenient::parse")]
    pub prefix_cache_mib: usize,
}

impl Default for ModelsSettings {
    fn default() -> Self {
        Self {
            catalog_file: None,
            local_dir: None,
            prefix_cache_mib: 256,
        }
    }
}

/// `Idempotency-Key` handling.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct IdempotencySettings {
    /// How long a key and its stored response are kept (seconds; 24 h by default).
    #[serde(deserialize_with = "lenient::parse")]
    pub retention_secs: u64,
}

impl Default for IdempotencySettings {
    fn default() -> Self {
        Self {
            retention_secs: 24 * 60 * 60,
        }
    }
}

/// The audit log (decision 0026).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct AuditSettings {
    /// How many days audit events are kept (365 by default); 0 keeps them forever. Older
    /// events are deleted by the periodic housekeeping of every API process.
    #[serde(deserialize_with = "lenient::parse")]
    pub retention_days: u32,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            retention_days: 365,
        }
    }
}

/// Files, datasets and their processing (issue 7).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct KnowledgeSettings {
    /// Processing workers in this process (0: none; another replica's `worker` mode or
    /// workers process the queue). They share the embedding model's thread (chunks of files
    /// processed at once share its forward passes), which is what bounds ingestion. Two by
    /// default: while one worker's round is embedded, the other reads, cuts, indexes and
    /// completes its own (on 2 cores NFCorpus ingested in 0.86x one worker's time; 8 workers
    /// were slower than 1, docs/benchmarks.md).
    #[serde(deserialize_with = "lenient::parse")]
    pub workers: usize,
    /// Where uploaded content is kept (default `<data_dir>/blobs`), unless `s3_bucket` is set.
    pub blobs_dir: Option<PathBuf>,
    /// An S3 bucket (AWS, or S3-compatible with `s3_endpoint`) that keeps uploaded content
    /// instead of `blobs_dir`, shared by every replica. Credentials come from the
    /// environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, or the instance role).
    pub s3_bucket: Option<String>,
    /// A key prefix inside the bucket, e.g. `tessera/`.
    pub s3_prefix: String,
    /// An S3-compatible endpoint (MinIO, Ceph, R2), e.g. `https://minio.internal:9000`.
    pub s3_endpoint: Option<String>,
    /// The bucket's region (default `AWS_REGION`, else `us-east-1`).
    pub s3_region: Option<String>,
    /// Allow a plain `http://` endpoint.
    #[serde(deserialize_with = "lenient::parse")]
    pub s3_allow_http: bool,
    /// Explicit credentials (both, or neither to use the environment's).
    pub s3_access_key_id: Option<String>,
    pub s3_secret_access_key: Option<Secret>,
    /// Where the embedded vector index lives (default `<data_dir>/vectors`), unless
    /// `qdrant_url` is set.
    pub vectors_dir: Option<PathBuf>,
    /// A Qdrant server or cluster (its REST port, e.g. `http://qdrant:6333`; also
    /// `QDRANT_URL`) that holds the vector index instead of `vectors_dir`, shared by every
    /// replica.
    pub qdrant_url: Option<String>,
    /// The Qdrant API key, sent as the `api-key` header.
    pub qdrant_api_key: Option<Secret>,
    /// The collection of the chunks (created when missing; one per embedding model).
    pub qdrant_collection: String,
    /// Where the embedded embedding model's files (`tokenizer.json`, `config.json`, and
    /// `model.safetensors` or the package's `model.onnx`) are searched for, recursively
    /// (default `models.local_dir`). Without them files are stored but not processed.
    pub embedding_model_dir: Option<PathBuf>,
    /// An OpenAI-compatible server (`…/v1`) that embeds instead of the embedded model:
    /// OpenAI, vLLM, Ollama, TEI, a LiteLLM proxy. Needs `embedding_model` and
    /// `embedding_dimensions`.
    pub embedding_base_url: Option<String>,
    /// The embedding model: with `embedding_base_url`, the server's name of it (e.g.
    /// `text-embedding-3-small`); else the embedded model, `bge-small-en-v1.5` or
    /// `all-MiniLM-L6-v2` (both fetched by `just models`). Unset: the model of the index's
    /// vectors, else `bge-small-en-v1.5` (decision 0047).
    pub embedding_model: Option<String>,
    /// The length of its vectors (checked on every answer; the index is created with it).
    #[serde(deserialize_with = "lenient::parse_option")]
    pub embedding_dimensions: Option<usize>,
    /// The environment variable that holds the server's API key (none is sent if unset).
    pub embedding_api_key_env: Option<String>,
    /// Texts per embeddings request.
    #[serde(deserialize_with = "lenient::parse")]
    pub embedding_batch_size: usize,
    /// The embedded model's arithmetic: `auto` (8-bit dense layers where the CPU has
    /// AVX-512 VNNI or AVX2, about 2.4× the throughput; f32 elsewhere), `f32` (the
    /// reference model's vectors exactly) or `int8` (decisions 0021, 0048).
    #[serde(deserialize_with = "lenient::parse")]
    pub embedding_precision: EmbeddingPrecision,
    /// The most tokens one chunk holds, in the embedding model's own tokens (`cl100k_base`
    /// for a hosted model); cut to what the model reads of a text.
    #[serde(deserialize_with = "lenient::parse")]
    pub chunk_tokens: usize,
    /// Tokens shared by neighbouring chunks.
    #[serde(deserialize_with = "lenient::parse")]
    pub chunk_overlap_tokens: usize,
    /// Attempts before a file fails on infrastructure errors (content errors fail at once).
    #[serde(deserialize_with = "lenient::parse")]
    pub max_attempts: u32,
    /// Seconds a worker holds a job without reporting progress before another takes it over.
    #[serde(deserialize_with = "lenient::parse")]
    pub lease_secs: u64,
    /// Seconds an idle worker waits before looking for due jobs again (new uploads in this
    /// process wake it at once).
    #[serde(deserialize_with = "lenient::parse")]
    pub poll_secs: u64,
    /// OCR of PDF pages without a usable text layer (scanned pages) and of the uploaded images
    /// of organizations that opted in: `auto`, `on`, `off`.
    #[serde(deserialize_with = "lenient::parse")]
    pub ocr: Switch,
    /// Tesseract's languages joined by `+` (`eng`, `eng+deu`); each needs its data package
    /// (Debian: `tesseract-ocr-eng`, `tesseract-ocr-deu`).
    pub ocr_languages: String,
    /// The most seconds rendering and reading one page (or reading one uploaded image) may
    /// take; the page is skipped (the image fails) beyond.
    #[serde(deserialize_with = "lenient::parse")]
    pub ocr_page_timeout_secs: u64,
    /// Search can rerank its fused candidates with a cross-encoder (ms-marco-MiniLM-L-12-v2,
    /// fetched by `just models`), loaded `auto` (when its files are found), `on` (the
    /// service does not start without them) or `off`. A search's `rerank: true` asks for it,
    /// `false` skips it; `rerank_by_default` decides when it does not say.
    #[serde(deserialize_with = "lenient::parse")]
    pub rerank: Switch,
    /// Where the reranking model's files (`tokenizer.json` and `model.onnx` in a folder
    /// named for reranking, or a `BertForSequenceClassification` checkpoint) are searched
    /// for, recursively (default `models.local_dir`).
    pub rerank_model_dir: Option<PathBuf>,
    /// How many of the fused candidates the cross-encoder reads (at least a search's limit
    /// are): more finds more, and each costs a forward pass of the model.
    #[serde(deserialize_with = "lenient::parse")]
    pub rerank_candidates: usize,
    /// Whether a search that does not say (`rerank` absent; RAG's retrieval) is reranked.
    /// Off: on BEIR NFCorpus the cross-encoder did not raise the hybrid search's nDCG@10
    /// and multiplied its time by about 40 (decision 0047); `rerank: true` still asks for it.
    #[serde(deserialize_with = "lenient::parse")]
    pub rerank_by_default: bool,
    /// Late interaction (answerai-colbert-small-v1, fetched by `just models`, searched for
    /// like the embedding model): every chunk processed is also encoded as token vectors
    /// (about twice the processing time, 37 KiB per chunk in the index), so that datasets
    /// set to (`lateInteraction`) reorder their searches' best candidates by MaxSim. `off`
    /// (default), `auto` (when its files are found) or `on` (the service does not start
    /// without them). Decision 0050.
    #[serde(deserialize_with = "lenient::parse")]
    pub late_interaction: Switch,
    /// How many of a search's best candidates late interaction reorders (at least the
    /// search's limit are).
    #[serde(deserialize_with = "lenient::parse")]
    pub late_interaction_candidates: usize,
}

impl Default for KnowledgeSettings {
    fn default() -> Self {
        Self {
            workers: 2,
            blobs_dir: None,
            s3_bucket: None,
            s3_prefix: String::new(),
            s3_endpoint: None,
            s3_region: None,
            s3_allow_http: false,
            s3_access_key_id: None,
            s3_secret_access_key: None,
            vectors_dir: None,
            qdrant_url: None,
            qdrant_api_key: None,
            qdrant_collection: "tessera_chunks".into(),
            embedding_model_dir: None,
            embedding_base_url: None,
            embedding_model: None,
            embedding_dimensions: None,
            embedding_api_key_env: None,
            embedding_batch_size: 64,
            embedding_precision: EmbeddingPrecision::Auto,
            chunk_tokens: 200,
            chunk_overlap_tokens: 30,
            max_attempts: 5,
            lease_secs: 120,
            poll_secs: 2,
            ocr: Switch::Auto,
            ocr_languages: "eng".into(),
            ocr_page_timeout_secs: 60,
            rerank: Switch::Auto,
            rerank_model_dir: None,
            rerank_candidates: 10,
            rerank_by_default: false,
            late_interaction: Switch::Off,
            late_interaction_candidates: 20,
        }
    }
}

/// OpenAI batches (`POST /openai/v1/batches`): the runners that work through them.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct BatchSettings {
    /// Batch runners in this process (0: none; another replica runs them). Each works
    /// through one batch at a time.
    #[serde(deserialize_with = "lenient::parse")]
    pub runners: usize,
    /// Requests of one batch running at once. One by default: a batch yields to
    /// interactive requests, which it competes with for the same models.
    #[serde(deserialize_with = "lenient::parse")]
    pub concurrency: usize,
    /// Seconds a runner holds a batch without an answer kept; a stopped runner's batch is
    /// taken over after this.
    #[serde(deserialize_with = "lenient::parse")]
    pub lease_secs: u64,
    /// Milliseconds an idle runner waits before looking for batches again.
    #[serde(deserialize_with = "lenient::parse")]
    pub poll_millis: u64,
}

impl Default for BatchSettings {
    fn default() -> Self {
        Self {
            runners: 1,
            concurrency: 1,
            lease_secs: 600,
            poll_millis: 1000,
        }
    }
}

/// Webhook deliveries (`POST /v1/webhooks` registers receivers).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct WebhookSettings {
    /// Dispatchers sending deliveries from this process (0: none; another replica sends).
    #[serde(deserialize_with = "lenient::parse")]
    pub dispatchers: usize,
    /// Attempts before a delivery fails for good.
    #[serde(deserialize_with = "lenient::parse")]
    pub max_attempts: u32,
    /// Seconds before the second attempt; the wait doubles for each later one.
    #[serde(deserialize_with = "lenient::parse")]
    pub first_retry_secs: u64,
    /// The longest wait between attempts, in seconds.
    #[serde(deserialize_with = "lenient::parse")]
    pub max_retry_secs: u64,
    /// Seconds a receiver has to answer one attempt.
    #[serde(deserialize_with = "lenient::parse")]
    pub timeout_secs: u64,
    /// Milliseconds an idle dispatcher waits before looking for due deliveries again.
    #[serde(deserialize_with = "lenient::parse")]
    pub poll_millis: u64,
    /// Allow receivers on `localhost` and loopback, private and link-local addresses (off:
    /// a tenant must not reach this service's own network through its webhooks).
    #[serde(deserialize_with = "lenient::parse")]
    pub allow_private_targets: bool,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            dispatchers: 1,
            max_attempts: 8,
            first_retry_secs: 10,
            max_retry_secs: 3600,
            timeout_secs: 10,
            poll_millis: 1000,
            allow_private_targets: false,
        }
    }
}

/// MCP servers that organizations register (`POST /v1/mcp-servers`) and whose tools
/// completions run.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct McpSettings {
    /// Secret from which the key that encrypts MCP servers' header values (AES-256-GCM) is
    /// derived. Replicas must share it, and changing it makes stored header values
    /// unreadable; when absent a random key is generated once and kept in
    /// `data_dir/mcp-header.key`.
    pub header_secret: Option<Secret>,
    /// Allow MCP servers on `localhost` and loopback, private and link-local addresses (off:
    /// a tenant must not reach this service's own network through its MCP servers).
    #[serde(deserialize_with = "lenient::parse")]
    pub allow_private_targets: bool,
}

/// Guardrail policies (`PUT /v1/guardrails`) and the external services their hooks ask.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct GuardrailSettings {
    /// Allow guardrail hooks on `localhost` and loopback, private and link-local addresses
    /// (off: a tenant must not reach this service's own network through its policy's hook).
    /// A guardrail service run beside Tessera on its own network needs it.
    #[serde(deserialize_with = "lenient::parse")]
    pub allow_private_targets: bool,
}

/// The response cache of the models organizations opt in (`PUT
/// /v1/response-cache/models/{model}`), kept in this process's memory.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ResponseCacheSettings {
    /// At most this many answers are kept (the least recently used go first).
    #[serde(deserialize_with = "lenient::parse")]
    pub max_entries: usize,
    /// And at most about this many mebibytes of them.
    #[serde(deserialize_with = "lenient::parse")]
    pub max_mib: usize,
}

impl Default for ResponseCacheSettings {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            max_mib: 64,
        }
    }
}

/// Chat generations.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ChatsSettings {
    /// How long a process's generations survive it when it stops renewing their lease
    /// (seconds): then any replica marks those chats failed. Renewed every third of it.
    #[serde(deserialize_with = "lenient::parse")]
    pub generation_lease_secs: u64,
}

impl ChatsSettings {
    pub fn generation_lease(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.generation_lease_secs.max(1))
    }
}

impl Default for ChatsSettings {
    fn default() -> Self {
        Self {
            generation_lease_secs: 30,
        }
    }
}

/// OpenTelemetry traces, exported over OTLP (HTTP/protobuf) when an endpoint is set.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetrySettings {
    /// The collector's base URL (e.g. `http://127.0.0.1:4318`; spans go to `/v1/traces`
    /// below it). Unset: no spans are made for export and nothing is sent.
    pub otlp_endpoint: Option<String>,
    /// The URL spans are sent to, used as is (nothing appended); wins over `otlp_endpoint`.
    pub otlp_traces_endpoint: Option<String>,
    /// The OTLP transport: only `http/protobuf` is spoken (a `grpc` collector port would
    /// refuse every export, so it is refused here).
    pub otlp_protocol: String,
    /// How long one export request may take before it is abandoned (and retried), in
    /// milliseconds.
    #[serde(deserialize_with = "lenient::parse")]
    pub otlp_timeout_ms: u64,
    /// `gzip` compresses each export's body; `none` sends it as is.
    #[serde(deserialize_with = "lenient::parse")]
    pub otlp_compression: OtlpCompression,
    /// Which traces are kept, by OpenTelemetry's sampler names.
    #[serde(deserialize_with = "lenient::parse")]
    pub sampler: TraceSampler,
    /// Export nothing, whatever the endpoint (`OTEL_SDK_DISABLED=true`).
    #[serde(deserialize_with = "lenient::parse")]
    pub disabled: OtelBool,
    /// `service.name` of the exported resource.
    pub service_name: String,
    /// Share of new traces kept (0 to 1); a request that arrives with a `traceparent`
    /// follows its caller's decision.
    #[serde(deserialize_with = "lenient::parse")]
    pub sampling_ratio: f64,
    /// More resource attributes, `key=value` pairs separated by commas (as
    /// `OTEL_RESOURCE_ATTRIBUTES` spells them).
    pub resource_attributes: String,
    /// Headers sent with every export (a hosted collector's key, for one), `name=value`
    /// pairs separated by commas, values percent-encoded (as `OTEL_EXPORTER_OTLP_HEADERS`
    /// spells them).
    pub otlp_headers: String,
    /// Put message content (prompts and answers) on completion spans. Off: spans carry
    /// models, token counts and finish reasons only.
    #[serde(deserialize_with = "lenient::parse")]
    pub capture_content: bool,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            otlp_traces_endpoint: None,
            otlp_protocol: "http/protobuf".to_owned(),
            otlp_timeout_ms: 10_000,
            otlp_compression: OtlpCompression::None,
            sampler: TraceSampler::default(),
            disabled: OtelBool(false),
            service_name: "tessera-api".to_owned(),
            sampling_ratio: 1.0,
            resource_attributes: String::new(),
            otlp_headers: String::new(),
            capture_content: false,
        }
    }
}

impl TelemetrySettings {
    /// Where spans are sent, when they are: `otlp_traces_endpoint` as is, else
    /// `/v1/traces` below `otlp_endpoint`; `None` when neither is set (or blank) or
    /// exporting is `disabled`.
    pub fn endpoint(&self) -> Option<String> {
        let set = |value: &Option<String>| {
            value
                .as_deref()
                .map(str::trim)
                .filter(|endpoint| !endpoint.is_empty())
                .map(str::to_owned)
        };
        if self.disabled.0 {
            return None;
        }
        set(&self.otlp_traces_endpoint).or_else(|| {
            set(&self.otlp_endpoint).map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
        })
    }

    /// The resource attributes as pairs; `Err` names the first malformed one.
    pub fn resource_pairs(&self) -> Result<Vec<(String, String)>, String> {
        key_value_pairs(&self.resource_attributes)
    }

    /// The export's headers as pairs, values percent-decoded; `Err` names the first
    /// malformed one, never showing a value (they are often keys).
    pub fn header_pairs(&self) -> Result<Vec<(String, String)>, String> {
        key_value_pairs(&self.otlp_headers)
            .map_err(|_| "each header must be name=value (values not shown)".to_owned())?
            .into_iter()
            .map(|(name, value)| match percent_decoded(&value) {
                Some(value) => Ok((name, value)),
                None => Err(format!(
                    "the value of `{name}` is not percent-encoded UTF-8"
                )),
            })
            .collect()
    }
}

/// `key=value` pairs separated by commas, as the OpenTelemetry variables spell them.
fn key_value_pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                Ok((key.trim().to_owned(), value.trim().to_owned()))
            }
            _ => Err(format!("`{pair}` is not key=value")),
        })
        .collect()
}

/// `%XX` escapes decoded (the W3C Baggage encoding of `OTEL_EXPORTER_OTLP_HEADERS`);
/// `None` for a malformed escape or bytes that are not UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = text.get(at + 1..at + 3)?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            decoded.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

/// Prometheus metrics.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsSettings {
    /// Address of the plain-HTTP listener serving `GET /metrics`; `""` turns metrics off
    /// (nothing is recorded). Bind it to an address only the scraper reaches.
    pub listen: String,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9464".to_owned(),
        }
    }
}

impl MetricsSettings {
    /// The listener's address; `None` when metrics are off. (Checked when loaded.)
    pub fn address(&self) -> Option<SocketAddr> {
        let listen = self.listen.trim();
        (!listen.is_empty()).then(|| listen.parse().ok()).flatten()
    }
}

/// Monthly credit budgets (UTC calendar months; credits = tokens × the base model's credit
/// multiplier). Unset budgets are unlimited. When an organization's spend this month
/// reaches its budget, completions get 402 `credit_budget_exhausted` until the month ends.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct QuotaSettings {
    /// Budget of organizations on the free plan.
    #[serde(deserialize_with = "lenient::parse_option")]
    pub free_monthly_credits: Option<u64>,
    /// Budget of organizations on the pro plan.
    #[serde(deserialize_with = "lenient::parse_option")]
    pub pro_monthly_credits: Option<u64>,
    /// Budget of organizations on the enterprise plan.
    #[serde(deserialize_with = "lenient::parse_option")]
    pub enterprise_monthly_credits: Option<u64>,
    /// Budgets of single organizations (by id), overriding their plan's (config file only).
    pub organizations: std::collections::BTreeMap<String, u64>,
    /// How long an organization's spend is cached between reads (seconds): a budget can be
    /// overshot by what completes within this period.
    #[serde(deserialize_with = "lenient::parse")]
    pub cache_secs: u64,
}

impl Default for QuotaSettings {
    fn default() -> Self {
        Self {
            free_monthly_credits: None,
            pro_monthly_credits: None,
            enterprise_monthly_credits: None,
            organizations: Default::default(),
            cache_secs: 10,
        }
    }
}

impl QuotaSettings {
    /// The budgets, as the chats domain's admission applies them.
    pub fn credit_quotas(&self) -> tessera_chats::CreditQuotas {
        tessera_chats::CreditQuotas {
            free: self.free_monthly_credits,
            pro: self.pro_monthly_credits,
            enterprise: self.enterprise_monthly_credits,
            organizations: self.organizations.clone(),
        }
    }
}

/// The whole configuration of `tessera-api` and `tessera-admin`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Embedded data: SQLite file, TLS certificate, cursor key (later: vectors, blobs).
    pub data_dir: PathBuf,
    /// Address of the HTTPS listener.
    #[serde(deserialize_with = "lenient::parse")]
    pub listen: SocketAddr,
    /// PostgreSQL URL; when absent the embedded SQLite file under `data_dir` is used.
    #[serde(deserialize_with = "lenient::parse_option")]
    pub database_url: Option<DatabaseUrl>,
    /// `tracing` filter, e.g. `info` or `tessera_api=debug,info`.
    pub log: String,
    #[serde(deserialize_with = "lenient::parse")]
    pub log_format: LogFormat,
    /// Secret that signs pagination cursors. Replicas must share it; when absent a random
    /// key is generated once and kept in `data_dir/cursor.key`.
    pub cursor_secret: Option<Secret>,
    /// Secret that keys the HMAC-SHA256 under which API key secrets are stored and looked up.
    /// Replicas must share it, and changing it makes every API key unknown; when absent a
    /// random key is generated once and kept in `data_dir/api-key.key`.
    pub api_key_secret: Option<Secret>,
    /// Name of the organization created on the first run in embedded mode.
    pub default_organization_name: String,
    pub tls: TlsSettings,
    pub http: HttpSettings,
    pub database: DatabaseSettings,
    pub auth: AuthSettings,
    /// Redis URL; when set, rate-limit budgets and circuits are shared by every replica
    /// through it. `rediss://` is TLS; Redis Cluster (`redis+cluster://`) is refused.
    pub redis_url: Option<String>,
    /// PEM certificates of the authorities a `rediss://` server's certificate is checked
    /// against, instead of the system's roots (a server with a private CA's certificate).
    pub redis_ca_file: Option<PathBuf>,
    pub rate_limit: RateLimitSettings,
    pub idempotency: IdempotencySettings,
    pub audit: AuditSettings,
    pub chats: ChatsSettings,
    pub models: ModelsSettings,
    pub quotas: QuotaSettings,
    pub knowledge: KnowledgeSettings,
    pub webhooks: WebhookSettings,
    pub batches: BatchSettings,
    pub mcp: McpSettings,
    pub guardrails: GuardrailSettings,
    pub response_cache: ResponseCacheSettings,
    pub metrics: MetricsSettings,
    pub telemetry: TelemetrySettings,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("tessera-data"),
            listen: SocketAddr::from(([127, 0, 0, 1], 8443)),
            database_url: None,
            log: "info".to_owned(),
            log_format: LogFormat::Text,
            cursor_secret: None,
            api_key_secret: None,
            default_organization_name: "Default".to_owned(),
            tls: TlsSettings::default(),
            http: HttpSettings::default(),
            database: DatabaseSettings::default(),
            auth: AuthSettings::default(),
            redis_url: None,
            redis_ca_file: None,
            rate_limit: RateLimitSettings::default(),
            idempotency: IdempotencySettings::default(),
            audit: AuditSettings::default(),
            chats: ChatsSettings::default(),
            models: ModelsSettings::default(),
            quotas: QuotaSettings::default(),
            knowledge: KnowledgeSettings::default(),
            webhooks: WebhookSettings::default(),
            batches: BatchSettings::default(),
            mcp: McpSettings::default(),
            guardrails: GuardrailSettings::default(),
            response_cache: ResponseCacheSettings::default(),
            metrics: MetricsSettings::default(),
            telemetry: TelemetrySettings::default(),
        }
    }
}

/// A secret string that never appears in `Debug` output or logs.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl Settings {
    /// Embedded mode: no external database; SQLite under `data_dir`, first-run bootstrap.
    pub fn is_embedded(&self) -> bool {
        self.database_url.is_none()
    }

    /// The database to use: `database_url`, or the SQLite file in `data_dir`.
    pub fn database(&self) -> DatabaseUrl {
        self.database_url
            .clone()
            .unwrap_or_else(|| DatabaseUrl::Sqlite(self.data_dir.join("tessera.sqlite")))
    }

    /// Where the token signing keys live.
    pub fn keys_dir(&self) -> PathBuf {
        self.auth
            .keys_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("keys"))
    }

    /// The token issuer: `auth.issuer`, or this listener's own HTTPS URL.
    pub fn issuer(&self, port: u16) -> String {
        match &self.auth.issuer {
            Some(issuer) => issuer.trim_end_matches('/').to_owned(),
            None if self.listen.ip().is_loopback() || self.listen.ip().is_unspecified() => {
                format!("https://localhost:{port}")
            }
            None => format!("https://{}", SocketAddr::new(self.listen.ip(), port)),
        }
    }

    /// Reads the optional file, overlays the process environment, and validates.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_from(file, std::env::vars())
    }

    /// As [`Settings::load`], ignoring the named variables (those a binary reads itself,
    /// such as `TESSERA_CONFIG_FILE`).
    pub fn load_without(file: Option<&Path>, ignored: &[&str]) -> Result<Self, ConfigError> {
        Self::load_from(
            file,
            std::env::vars().filter(|(name, _)| !ignored.contains(&name.as_str())),
        )
    }

    /// As [`Settings::load`], with the environment given explicitly (for tests).
    pub fn load_from(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut table = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
                    path: path.display().to_string(),
                    message: e.to_string(),
                })?;
                toml::from_str::<toml::Table>(&text).map_err(|e| ConfigError::File {
                    path: path.display().to_string(),
                    message: e.message().to_owned() + &line_of(&text, e.span()),
                })?
            }
            None => toml::Table::new(),
        };
        let mut sources = BTreeMap::new();
        let mut aliased = BTreeMap::new();
        let mut set = |table: &mut toml::Table, key: String, name: String, value: String| {
            insert_path(table, &key, value).map_err(|message| ConfigError::Invalid {
                key: key.clone(),
                source_note: format!(" (from {name})"),
                message,
            })?;
            sources.insert(key, name);
            Ok::<_, ConfigError>(())
        };
        for (name, value) in env {
            if ENV_ALIASES.iter().any(|(alias, ..)| *alias == name) {
                aliased.insert(name, value);
                continue;
            }
            let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            let key = rest
                .to_ascii_lowercase()
                .split("__")
                .collect::<Vec<_>>()
                .join(".");
            if key.is_empty() || key.split('.').any(str::is_empty) {
                return Err(ConfigError::Invalid {
                    key: name.clone(),
                    source_note: String::new(),
                    message: "not a configuration key".into(),
                });
            }
            set(&mut table, key, name, value)?;
        }
        // The aliases after `TESSERA_*`, in their order of precedence.
        for (name, key, clears) in ENV_ALIASES {
            let Some(value) = aliased
                .remove(*name)
                .filter(|value| !value.trim().is_empty())
            else {
                continue;
            };
            for cleared in *clears {
                remove_path(&mut table, cleared);
            }
            set(&mut table, (*key).to_owned(), (*name).to_owned(), value)?;
        }
        let settings: Settings = serde_path_to_error::deserialize(toml::Value::Table(table))
            .map_err(|error| {
                let key = error.path().to_string();
                let message = error.inner().message().to_owned();
                let source_note = sources
                    .get(&key)
                    .map(|var| format!(" (from {var})"))
                    .unwrap_or_default();
                ConfigError::Invalid {
                    key,
                    source_note,
                    message,
                }
            })?;
        settings.validate()?;
        Ok(settings)
    }

    /// One Redis server, plain or TLS. Cluster mode is refused by name: the rate limiter's
    /// and the circuits' scripts touch one key each and would work, but a cluster needs
    /// its own client and tests, and an accepted setting must work (decision 0043).
    fn validate_redis(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: &str| ConfigError::Invalid {
            key: key.to_owned(),
            source_note: String::new(),
            message: message.to_owned(),
        };
        match &self.redis_url {
            Some(url)
                if url.starts_with("redis+cluster://") || url.starts_with("rediss+cluster://") =>
            {
                return Err(invalid(
                    "redis_url",
                    "Redis Cluster (redis+cluster://) is not supported: set it to one Redis server's redis:// or rediss:// URL",
                ));
            }
            Some(url) if !(url.starts_with("redis://") || url.starts_with("rediss://")) => {
                return Err(invalid("redis_url", "must be a redis:// or rediss:// URL"));
            }
            _ => {}
        }
        if self.redis_ca_file.is_some()
            && !self
                .redis_url
                .as_deref()
                .is_some_and(|url| url.starts_with("rediss://"))
        {
            return Err(invalid(
                "redis_ca_file",
                "applies to a TLS Redis only: set redis_url to a rediss:// URL",
            ));
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            key: key.to_owned(),
            source_note: String::new(),
            message,
        };
        if tracing_subscriber::EnvFilter::try_new(&self.log).is_err() {
            return Err(invalid(
                "log",
                format!(
                    "`{}` is not a valid log filter (e.g. `info`, `tessera_api=debug,warn`)",
                    self.log
                ),
            ));
        }
        match (&self.tls.cert, &self.tls.key) {
            (Some(_), None) => {
                return Err(invalid("tls.key", "required when tls.cert is set".into()));
            }
            (None, Some(_)) => {
                return Err(invalid("tls.cert", "required when tls.key is set".into()));
            }
            _ => {}
        }
        if let Some(secret) = &self.cursor_secret
            && secret.expose().len() < 32
        {
            return Err(invalid(
                "cursor_secret",
                "must be at least 32 characters".into(),
            ));
        }
        if let Some(secret) = &self.api_key_secret
            && secret.expose().len() < 32
        {
            return Err(invalid(
                "api_key_secret",
                "must be at least 32 characters".into(),
            ));
        }
        let telemetry = &self.telemetry;
        if !(0.0..=1.0).contains(&telemetry.sampling_ratio) {
            return Err(invalid(
                "telemetry.sampling_ratio",
                format!("{} is not between 0 and 1", telemetry.sampling_ratio),
            ));
        }
        for (key, endpoint) in [
            ("telemetry.otlp_endpoint", &telemetry.otlp_endpoint),
            (
                "telemetry.otlp_traces_endpoint",
                &telemetry.otlp_traces_endpoint,
            ),
        ] {
            if let Some(endpoint) = endpoint.as_deref().map(str::trim)
                && !endpoint.is_empty()
                && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
            {
                return Err(invalid(
                    key,
                    format!("`{endpoint}` is not an http:// or https:// URL"),
                ));
            }
        }
        if telemetry.otlp_protocol.trim() != "http/protobuf" {
            return Err(invalid(
                "telemetry.otlp_protocol",
                format!(
                    "`{}` is not supported: spans are sent as http/protobuf (OTLP/HTTP, port 4318 by convention)",
                    telemetry.otlp_protocol
                ),
            ));
        }
        if telemetry.otlp_timeout_ms == 0 {
            return Err(invalid(
                "telemetry.otlp_timeout_ms",
                "must be at least 1".into(),
            ));
        }
        if let Err(message) = telemetry.resource_pairs() {
            return Err(invalid("telemetry.resource_attributes", message));
        }
        if let Err(message) = telemetry.header_pairs() {
            return Err(invalid("telemetry.otlp_headers", message));
        }
        let metrics_listen = self.metrics.listen.trim();
        if !metrics_listen.is_empty() && metrics_listen.parse::<SocketAddr>().is_err() {
            return Err(invalid(
                "metrics.listen",
                format!(
                    "`{metrics_listen}` is not an address such as 127.0.0.1:9464 (\"\" turns metrics off)"
                ),
            ));
        }
        if self.database.max_connections == 0 {
            return Err(invalid(
                "database.max_connections",
                "must be at least 1".into(),
            ));
        }
        if self.http.json_limit_bytes == 0 {
            return Err(invalid(
                "http.json_limit_bytes",
                "must be at least 1".into(),
            ));
        }
        if let Some(issuer) = &self.auth.issuer
            && !issuer.starts_with("https://")
        {
            return Err(invalid(
                "auth.issuer",
                format!("must be an https:// URL, got `{issuer}`"),
            ));
        }
        for (index, provider) in self.auth.oidc.iter().enumerate() {
            let loopback = ["http://localhost:", "http://127.0.0.1:", "http://[::1]:"]
                .iter()
                .any(|p| provider.issuer.starts_with(p));
            if !provider.issuer.starts_with("https://") && !loopback {
                return Err(invalid(
                    &format!("auth.oidc[{index}].issuer"),
                    format!(
                        "must be an https:// URL (http only on loopback), got `{}`",
                        provider.issuer
                    ),
                ));
            }
        }
        for (key, value) in [
            (
                "rate_limit.organization_per_minute",
                self.rate_limit.organization_per_minute,
            ),
            (
                "rate_limit.principal_per_minute",
                self.rate_limit.principal_per_minute,
            ),
            (
                "rate_limit.anonymous_per_minute",
                self.rate_limit.anonymous_per_minute,
            ),
        ] {
            if value == 0 {
                return Err(invalid(key, "must be at least 1".into()));
            }
        }
        if self.idempotency.retention_secs == 0 {
            return Err(invalid(
                "idempotency.retention_secs",
                "must be at least 1".into(),
            ));
        }
        self.validate_redis()?;
        if let Some(url) = &self.knowledge.qdrant_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(invalid(
                "knowledge.qdrant_url",
                "must be an http:// or https:// URL (Qdrant's REST port, e.g. http://qdrant:6333)"
                    .into(),
            ));
        }
        let languages = &self.knowledge.ocr_languages;
        if languages.split('+').any(|language| {
            language.is_empty()
                || !language
                    .chars()
                    .all(|character| character.is_ascii_alphanumeric() || character == '_')
        }) {
            return Err(invalid(
                "knowledge.ocr_languages",
                format!(
                    "must be Tesseract language codes joined by `+` (e.g. `eng+deu`), got `{languages}`"
                ),
            ));
        }
        if !(1..=MAX_RERANK_CANDIDATES).contains(&self.knowledge.rerank_candidates) {
            return Err(invalid(
                "knowledge.rerank_candidates",
                format!("must be 1 to {MAX_RERANK_CANDIDATES}"),
            ));
        }
        if !(1..=MAX_RERANK_CANDIDATES).contains(&self.knowledge.late_interaction_candidates) {
            return Err(invalid(
                "knowledge.late_interaction_candidates",
                format!("must be 1 to {MAX_RERANK_CANDIDATES}"),
            ));
        }
        if self.knowledge.ocr_page_timeout_secs == 0 {
            return Err(invalid(
                "knowledge.ocr_page_timeout_secs",
                "must be at least 1".into(),
            ));
        }
        if self.knowledge.qdrant_collection.is_empty() {
            return Err(invalid(
                "knowledge.qdrant_collection",
                "must not be empty".into(),
            ));
        }
        if !(60..=86_400).contains(&self.auth.token_lifetime_secs) {
            return Err(invalid(
                "auth.token_lifetime_secs",
                "must be between 60 and 86400".into(),
            ));
        }
        if self.default_organization_name.trim().is_empty() {
            return Err(invalid(
                "default_organization_name",
                "must not be blank".into(),
            ));
        }
        Ok(())
    }
}

/// ` (line N)` for a TOML syntax error's span.
fn line_of(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    span.map(|s| {
        format!(
            " (line {})",
            text[..s.start.min(text.len())].lines().count().max(1)
        )
    })
    .unwrap_or_default()
}

/// Sets `a.b.c = value` in a TOML table, creating the intermediate tables.
/// Removes a dotted key from the table, if it is there.
fn remove_path(table: &mut toml::Table, key: &str) {
    let mut current = table;
    let mut parts = key.split('.').peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            current.remove(part);
            return;
        }
        match current.get_mut(part) {
            Some(toml::Value::Table(inner)) => current = inner,
            _ => return,
        }
    }
}

fn insert_path(table: &mut toml::Table, key: &str, value: String) -> Result<(), String> {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().unwrap_or_default();
    let mut current = table;
    for part in parts {
        let entry = current
            .entry(part.to_owned())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        current = entry
            .as_table_mut()
            .ok_or_else(|| format!("`{part}` is not a section"))?;
    }
    current.insert(last.to_owned(), toml::Value::String(value));
    Ok(())
}

/// Deserializers that accept a value written natively in TOML or as a string (environment
/// variables are always strings), parsing with the target type's `FromStr`.
mod lenient {
    use std::{fmt, marker::PhantomData, str::FromStr};

    use serde::{Deserializer, de};

    struct ParseVisitor<T>(PhantomData<T>);

    impl<T: FromStr> de::Visitor<'_> for ParseVisitor<T>
    where
        T::Err: fmt::Display,
    {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a value")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
            text.trim()
                .parse()
                .map_err(|e| E::custom(format!("`{text}`: {e}")))
        }

        fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
            self.visit_str(&n.to_string())
        }

        fn visit_u64<E: de::Error>(self, n: u64) -> Result<T, E> {
            self.visit_str(&n.to_string())
        }

        fn visit_f64<E: de::Error>(self, n: f64) -> Result<T, E> {
            self.visit_str(&n.to_string())
        }

        fn visit_bool<E: de::Error>(self, b: bool) -> Result<T, E> {
            self.visit_str(&b.to_string())
        }
    }

    pub fn parse<'de, D: Deserializer<'de>, T: FromStr>(deserializer: D) -> Result<T, D::Error>
    where
        T::Err: fmt::Display,
    {
        deserializer.deserialize_any(ParseVisitor(PhantomData))
    }

    pub fn parse_option<'de, D: Deserializer<'de>, T: FromStr>(
        deserializer: D,
    ) -> Result<Option<T>, D::Error>
    where
        T::Err: fmt::Display,
    {
        parse(deserializer).map(Some)
    }

    struct ListVisitor<T>(PhantomData<T>);

    impl<'de, T: FromStr> de::Visitor<'de> for ListVisitor<T>
    where
        T::Err: fmt::Display,
    {
        type Value = Vec<T>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list, or a comma-separated string")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<Vec<T>, E> {
            text.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| ParseVisitor(PhantomData).visit_str(s))
                .collect()
        }

        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut items = Vec::new();
            while let Some(text) = seq.next_element::<String>()? {
                items.push(ParseVisitor(PhantomData).visit_str(&text)?);
            }
            Ok(items)
        }
    }

    pub fn list<'de, D: Deserializer<'de>, T: FromStr>(deserializer: D) -> Result<Vec<T>, D::Error>
    where
        T::Err: fmt::Display,
    {
        deserializer.deserialize_any(ListVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn load_toml(text: &str, vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tessera.toml");
        std::fs::write(&path, text).unwrap();
        Settings::load_from(Some(&path), env(vars))
    }

    #[test]
    fn defaults_are_the_embedded_mode() {
        let settings =
            Settings::load_from(None, env(&[("PATH", "/bin"), ("HOME", "/root")])).unwrap();
        assert!(settings.is_embedded());
        assert_eq!(settings.listen, "127.0.0.1:8443".parse().unwrap());
        assert_eq!(
            settings.database(),
            DatabaseUrl::Sqlite("tessera-data/tessera.sqlite".into())
        );
    }

    #[test]
    fn budgets_per_plan_and_per_organization_are_read() {
        let settings = load_toml(
            "[quotas]\nfree_monthly_credits = 1000\n[quotas.organizations]\norg_big = 50000\n",
            &[("TESSERA_QUOTAS__PRO_MONTHLY_CREDITS", "20000")],
        )
        .unwrap();
        // The rule that applies them (an organization's own, else its plan's) is the chats
        // domain's (`CreditQuotas::monthly_credits`).
        assert_eq!(
            settings.quotas.credit_quotas(),
            tessera_chats::CreditQuotas {
                free: Some(1000),
                pro: Some(20000),
                enterprise: None,
                organizations: [("org_big".to_owned(), 50000)].into(),
            }
        );
        assert_eq!(settings.quotas.cache_secs, 10);
    }

    #[test]
    fn environment_overrides_the_file() {
        let settings = load_toml(
            "listen = \"0.0.0.0:9000\"\nlog_format = \"text\"\n[http]\nworkers = 3\ntrusted_proxies = [\"10.0.0.1\"]\n",
            &[("TESSERA_LISTEN", "127.0.0.1:9443"), ("TESSERA_HTTP__WORKERS", "5"), ("DATABASE_URL", "postgres://u@h/db"), ("TESSERA_LOG_FORMAT", "json")],
        )
        .unwrap();
        assert_eq!(settings.listen.port(), 9443);
        assert_eq!(settings.http.workers, 5);
        assert_eq!(
            settings.http.trusted_proxies,
            vec!["10.0.0.1".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(settings.log_format, LogFormat::Json);
        assert!(!settings.is_embedded());
    }

    #[test]
    fn comma_separated_lists_come_from_the_environment() {
        let settings = Settings::load_from(
            None,
            env(&[("TESSERA_HTTP__TRUSTED_PROXIES", "10.0.0.1, ::1")]),
        )
        .unwrap();
        assert_eq!(settings.http.trusted_proxies.len(), 2);
    }

    #[test]
    fn export_headers_come_from_the_opentelemetry_variable() {
        let settings = Settings::load_from(
            None,
            env(&[(
                "OTEL_EXPORTER_OTLP_HEADERS",
                "api-key=secret%20one, x-team = search",
            )]),
        )
        .unwrap();
        assert_eq!(
            settings.telemetry.header_pairs().unwrap(),
            [
                ("api-key".to_owned(), "secret one".to_owned()),
                ("x-team".to_owned(), "search".to_owned())
            ]
        );
        for malformed in ["api-key", "api-key=%zz", "api-key=%c3"] {
            let message = error_of(Settings::load_from(
                None,
                env(&[("OTEL_EXPORTER_OTLP_HEADERS", malformed)]),
            ));
            assert!(
                message.starts_with("config key `telemetry.otlp_headers`"),
                "{malformed}: {message}"
            );
            assert!(
                !message.contains("%zz") && !message.contains("%c3"),
                "{message}"
            );
        }
    }

    fn error_of(result: Result<Settings, ConfigError>) -> String {
        let message = result.unwrap_err().to_string();
        assert!(!message.contains('\n'), "one line: {message}");
        message
    }

    #[test]
    fn unknown_keys_are_named() {
        let message = error_of(load_toml("listne = \"127.0.0.1:1\"\n", &[]));
        assert!(
            message.starts_with("config key `listne`: unknown field `listne`"),
            "{message}"
        );
        let message = error_of(load_toml("[http]\nworkerz = 1\n", &[]));
        assert!(
            message.starts_with("config key `http.workerz`"),
            "{message}"
        );
        let message = error_of(Settings::load_from(None, env(&[("TESSERA_LISTNE", "x")])));
        assert!(
            message.contains("`listne`") && message.contains("TESSERA_LISTNE"),
            "{message}"
        );
    }

    #[test]
    fn bad_values_are_named_with_their_source() {
        let message = error_of(Settings::load_from(
            None,
            env(&[("TESSERA_LISTEN", "127.0.0.1:99999")]),
        ));
        assert!(
            message.starts_with("config key `listen` (from TESSERA_LISTEN): `127.0.0.1:99999`"),
            "{message}"
        );
        let message = error_of(load_toml("listen = 8443\n", &[]));
        assert!(message.starts_with("config key `listen`"), "{message}");
        let message = error_of(Settings::load_from(
            None,
            env(&[("DATABASE_URL", "mysql://x")]),
        ));
        assert!(
            message.starts_with("config key `database_url` (from DATABASE_URL)"),
            "{message}"
        );
        let message = error_of(Settings::load_from(
            None,
            env(&[("TESSERA_LOG_FORMAT", "xml")]),
        ));
        assert!(
            message.contains("log_format") && message.contains("`text` or `json`"),
            "{message}"
        );
        let message = error_of(Settings::load_from(
            None,
            env(&[("TESSERA_HTTP__WORKERS", "many")]),
        ));
        assert!(
            message.starts_with("config key `http.workers`"),
            "{message}"
        );
    }

    #[test]
    fn identity_providers_come_from_the_file() {
        let settings = load_toml(
            "[[auth.oidc]]\nissuer = \"https://idp.example.com\"\naudience = \"tessera-api\"\n\n[[auth.oidc]]\nissuer = \"http://127.0.0.1:9999\"\naudience = \"x\"\norganization_claim = \"tenant\"\n",
            &[],
        )
        .unwrap();
        assert_eq!(settings.auth.oidc.len(), 2);
        assert_eq!(
            (
                settings.auth.oidc[0].organization_claim.as_str(),
                settings.auth.oidc[1].organization_claim.as_str()
            ),
            ("org_id", "tenant")
        );
        let message = error_of(load_toml(
            "[[auth.oidc]]\nissuer = \"http://idp.example.com\"\naudience = \"x\"\n",
            &[],
        ));
        assert!(
            message.starts_with("config key `auth.oidc[0].issuer`"),
            "{message}"
        );
        let message = error_of(load_toml(
            "[[auth.oidc]]\nissuer = \"https://idp.example.com\"\n",
            &[],
        ));
        assert!(message.contains("audience"), "{message}");
    }

    #[test]
    fn cross_field_rules_are_checked() {
        let message = error_of(Settings::load_from(
            None,
            env(&[("TESSERA_TLS__CERT", "/x.pem")]),
        ));
        assert!(
            message.starts_with("config key `tls.key`: required"),
            "{message}"
        );
        let message = error_of(Settings::load_from(
            None,
            env(&[("TESSERA_CURSOR_SECRET", "short")]),
        ));
        assert!(
            message.starts_with("config key `cursor_secret`"),
            "{message}"
        );
        let message = error_of(Settings::load_from(
            None,
            env(&[("TESSERA_API_KEY_SECRET", "short")]),
        ));
        assert!(
            message.starts_with("config key `api_key_secret`"),
            "{message}"
        );
        let message = error_of(Settings::load_from(None, env(&[("TESSERA_LOG", "[[[")])));
        assert!(message.starts_with("config key `log`"), "{message}");
    }

    #[test]
    fn opentelemetry_variables_win_over_tessera_settings_and_the_traces_own_over_generic() {
        let settings = load_toml(
            "[telemetry]\notlp_traces_endpoint = \"http://file:4318/v1/traces\"\nsampler = \"always_off\"\notlp_timeout_ms = 5000\n",
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318/"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "a=1"),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "b=2"),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
                ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", ""),
                ("TESSERA_TELEMETRY__SAMPLER", "always_on"),
                ("OTEL_TRACES_SAMPLER", "traceidratio"),
                ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
            ],
        )
        .unwrap();
        let telemetry = &settings.telemetry;
        // The generic endpoint replaces the file's traces URL, with /v1/traces below it.
        assert_eq!(
            telemetry.endpoint().as_deref(),
            Some("http://generic:4318/v1/traces")
        );
        assert_eq!(
            telemetry.header_pairs().unwrap(),
            [("b".to_owned(), "2".to_owned())]
        );
        assert_eq!(telemetry.otlp_timeout_ms, 2500);
        assert_eq!(
            telemetry.otlp_compression,
            OtlpCompression::Gzip,
            "an empty variable is unset"
        );
        assert_eq!(telemetry.sampler, TraceSampler::TraceIdRatio);
        assert_eq!(telemetry.sampler.ratio(telemetry.sampling_ratio), 0.25);

        let traces_own = Settings::load_from(
            None,
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318"),
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://traces:4318/custom",
                ),
            ]),
        )
        .unwrap();
        assert_eq!(
            traces_own.telemetry.endpoint().as_deref(),
            Some("http://traces:4318/custom"),
            "used as is"
        );
        let disabled = Settings::load_from(
            None,
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318"),
                ("OTEL_SDK_DISABLED", "True"),
            ]),
        )
        .unwrap();
        assert_eq!(disabled.telemetry.endpoint(), None);
    }

    #[test]
    fn opentelemetry_values_tessera_cannot_honour_are_refused() {
        let error = |vars: &[(&str, &str)]| {
            Settings::load_from(None, env(vars))
                .err()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            error(&[("OTEL_TRACES_SAMPLER", "jaeger_remote")]),
            "config key `telemetry.sampler` (from OTEL_TRACES_SAMPLER): `jaeger_remote`: not a supported sampler; one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio"
        );
        assert!(
            error(&[("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "zstd")])
                .contains("expected `gzip` or `none`")
        );
        assert!(error(&[("OTEL_SDK_DISABLED", "1")]).contains("expected `true` or `false`"));
        assert!(
            error(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).contains("`grpc` is not supported")
        );
        assert!(error(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "0")]).contains("at least 1"));
        assert!(
            error(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector:4318")])
                .contains("telemetry.otlp_traces_endpoint")
        );
    }

    #[test]
    fn redis_is_one_server_plain_or_tls() {
        let tls = Settings::load_from(
            None,
            env(&[
                ("REDIS_URL", "rediss://cache.internal:6380"),
                ("TESSERA_REDIS_CA_FILE", "/etc/tessera/redis-ca.pem"),
            ]),
        )
        .unwrap();
        assert_eq!(
            tls.redis_ca_file.as_deref(),
            Some(Path::new("/etc/tessera/redis-ca.pem"))
        );
        let error = |vars: &[(&str, &str)]| {
            Settings::load_from(None, env(vars))
                .err()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            error(&[("REDIS_URL", "redis+cluster://a:7000,b:7001")]),
            "config key `redis_url`: Redis Cluster (redis+cluster://) is not supported: set it to one Redis server's redis:// or rediss:// URL"
        );
        assert!(error(&[("REDIS_URL", "rediss+cluster://a:7000")]).contains("Redis Cluster"));
        assert_eq!(
            error(&[("REDIS_URL", "http://a:6379")]),
            "config key `redis_url`: must be a redis:// or rediss:// URL"
        );
        assert_eq!(
            error(&[
                ("REDIS_URL", "redis://a:6379"),
                ("TESSERA_REDIS_CA_FILE", "/ca.pem")
            ]),
            "config key `redis_ca_file`: applies to a TLS Redis only: set redis_url to a rediss:// URL"
        );
    }

    #[test]
    fn toml_syntax_errors_name_the_file_and_line() {
        let message = error_of(load_toml("listen = \n", &[]));
        assert!(
            message.starts_with("cannot read config file") && message.contains("line 1"),
            "{message}"
        );
        let message = error_of(Settings::load_from(
            Some(Path::new("/nonexistent/tessera.toml")),
            env(&[]),
        ));
        assert!(message.contains("/nonexistent/tessera.toml"), "{message}");
    }

    #[test]
    fn qdrant_comes_from_qdrant_url_or_the_knowledge_keys() {
        let settings = Settings::load_from(None, env(&[])).unwrap();
        assert_eq!(settings.knowledge.qdrant_url, None);
        assert_eq!(settings.knowledge.qdrant_collection, "tessera_chunks");

        let settings = Settings::load_from(
            None,
            env(&[
                ("QDRANT_URL", "http://qdrant:6333"),
                ("TESSERA_KNOWLEDGE__QDRANT_API_KEY", "qdrant-key-123"),
            ]),
        )
        .unwrap();
        let knowledge = &settings.knowledge;
        assert_eq!(knowledge.qdrant_url.as_deref(), Some("http://qdrant:6333"));
        assert_eq!(
            knowledge.qdrant_api_key.as_ref().map(Secret::expose),
            Some("qdrant-key-123")
        );
        assert!(!format!("{settings:?}").contains("qdrant-key-123"));

        let settings = load_toml(
            "[knowledge]\nqdrant_url = \"https://a.cloud.qdrant.io:6333\"\nqdrant_collection = \"chunks_v2\"\n",
            &[],
        )
        .unwrap();
        assert_eq!(settings.knowledge.qdrant_collection, "chunks_v2");
        assert_eq!(
            settings.knowledge.qdrant_url.as_deref(),
            Some("https://a.cloud.qdrant.io:6333")
        );

        let message = error_of(Settings::load_from(
            None,
            env(&[("QDRANT_URL", "qdrant:6334")]),
        ));
        assert!(
            message.starts_with("config key `knowledge.qdrant_url`"),
            "{message}"
        );
    }

    #[test]
    fn rerank_settings_are_read_and_checked() {
        let settings = Settings::load_from(None, env(&[])).unwrap();
        assert_eq!(settings.knowledge.rerank, Switch::Auto);
        assert_eq!(settings.knowledge.rerank_candidates, 10);
        assert!(!settings.knowledge.rerank_by_default);
        let settings = load_toml(
            "[knowledge]\nrerank = \"off\"\nrerank_candidates = 50\nrerank_model_dir = \"/models\"\nrerank_by_default = true\n",
            &[],
        )
        .unwrap();
        assert_eq!(settings.knowledge.rerank, Switch::Off);
        assert!(settings.knowledge.rerank_by_default);
        assert_eq!(settings.knowledge.rerank_candidates, 50);
        assert_eq!(
            settings.knowledge.rerank_model_dir.as_deref(),
            Some(std::path::Path::new("/models"))
        );
        let settings =
            Settings::load_from(None, env(&[("TESSERA_KNOWLEDGE__RERANK", "on")])).unwrap();
        assert_eq!(settings.knowledge.rerank, Switch::On);
        for candidates in ["0", "201"] {
            let message = error_of(Settings::load_from(
                None,
                env(&[("TESSERA_KNOWLEDGE__RERANK_CANDIDATES", candidates)]),
            ));
            assert!(
                message.starts_with("config key `knowledge.rerank_candidates`"),
                "{message}"
            );
        }
    }

    #[test]
    fn late_interaction_settings_are_read_and_checked() {
        let settings = Settings::load_from(None, env(&[])).unwrap();
        assert_eq!(settings.knowledge.late_interaction, Switch::Off);
        assert_eq!(settings.knowledge.late_interaction_candidates, 20);
        let settings = load_toml(
            "[knowledge]\nlate_interaction = \"auto\"\nlate_interaction_candidates = 40\n",
            &[],
        )
        .unwrap();
        assert_eq!(settings.knowledge.late_interaction, Switch::Auto);
        assert_eq!(settings.knowledge.late_interaction_candidates, 40);
        for candidates in ["0", "201"] {
            let message = error_of(Settings::load_from(
                None,
                env(&[("TESSERA_KNOWLEDGE__LATE_INTERACTION_CANDIDATES", candidates)]),
            ));
            assert!(
                message.starts_with("config key `knowledge.late_interaction_candidates`"),
                "{message}"
            );
        }
    }

    #[test]
    fn ocr_settings_are_read_and_checked() {
        let settings = Settings::load_from(None, env(&[])).unwrap();
        assert_eq!(settings.knowledge.ocr, Switch::Auto);
        assert_eq!(settings.knowledge.ocr_languages, "eng");
        let settings = load_toml(
            "[knowledge]\nocr = \"off\"\nocr_languages = \"eng+deu\"\nocr_page_timeout_secs = 5\n",
            &[],
        )
        .unwrap();
        assert_eq!(settings.knowledge.ocr, Switch::Off);
        assert_eq!(settings.knowledge.ocr_languages, "eng+deu");
        assert_eq!(settings.knowledge.ocr_page_timeout_secs, 5);
        let settings = Settings::load_from(None, env(&[("TESSERA_KNOWLEDGE__OCR", "on")])).unwrap();
        assert_eq!(settings.knowledge.ocr, Switch::On);
        let message = error_of(Settings::load_from(
            None,
            env(&[("TESSERA_KNOWLEDGE__OCR_LANGUAGES", "eng+;rm")]),
        ));
        assert!(
            message.contains("knowledge.ocr_languages") && message.contains("eng+;rm"),
            "{message}"
        );
        let message = error_of(Settings::load_from(
            None,
            env(&[("TESSERA_KNOWLEDGE__OCR", "maybe")]),
        ));
        assert!(
            message.contains("expected `auto`, `on` or `off`, got `maybe`"),
            "{message}"
        );
    }

    #[test]
    fn the_embedding_precision_is_read_as_spelled() {
        let settings = Settings::load_from(None, env(&[])).unwrap();
        assert_eq!(
            settings.knowledge.embedding_precision,
            EmbeddingPrecision::Auto
        );
        let settings = load_toml("[knowledge]\nembedding_precision = \"f32\"\n", &[]).unwrap();
        assert_eq!(
            settings.knowledge.embedding_precision,
            EmbeddingPrecision::F32
        );
        let settings = Settings::load_from(
            None,
            env(&[("TESSERA_KNOWLEDGE__EMBEDDING_PRECISION", "int8")]),
        )
        .unwrap();
        assert_eq!(
            settings.knowledge.embedding_precision,
            EmbeddingPrecision::Int8
        );
        let message = error_of(Settings::load_from(
            None,
            env(&[("TESSERA_KNOWLEDGE__EMBEDDING_PRECISION", "fp16")]),
        ));
        assert!(
            message.starts_with("config key `knowledge.embedding_precision`")
                && message.contains("expected `auto`, `f32` or `int8`, got `fp16`"),
            "{message}"
        );
    }

    #[test]
    fn secrets_do_not_leak_through_debug() {
        let settings = Settings::load_from(
            None,
            env(&[("TESSERA_CURSOR_SECRET", "0123456789abcdef0123456789abcdef")]),
        )
        .unwrap();
        assert!(!format!("{settings:?}").contains("0123456789abcdef"));
    }
}
