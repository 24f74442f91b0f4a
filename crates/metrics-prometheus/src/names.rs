//! Every metric the service exports: its Prometheus name, what it measures, its labels and,
//! for histograms, its buckets. Names of the OpenTelemetry semantic conventions (HTTP, GenAI,
//! database) are written in their Prometheus spelling (dots as underscores, the unit as a
//! suffix); the others start with `tessera_`. No label carries an id or user input: models
//! are labelled by their catalog (base) model, routes by their template.

use metrics::Unit;

/// `http.server.request.duration`: until the response head is sent (a stream's body is
/// not included). Labels: `http_request_method`, `http_route`, `http_response_status_code`.
pub const HTTP_REQUEST_DURATION: &str = "http_server_request_duration_seconds";

/// Completions by `gen_ai_request_model`, `gen_ai_provider_name` and `outcome`
/// (`finished`, `error`, `cancelled`).
pub const CHAT_COMPLETIONS: &str = "tessera_chat_completions_total";
/// `gen_ai.client.token.usage`: tokens per completion by `gen_ai_token_type`
/// (`input`, `output`), model and provider.
pub const TOKEN_USAGE: &str = "gen_ai_client_token_usage";
/// The part of the output tokens spent on reasoning, by model and provider.
pub const REASONING_TOKENS: &str = "tessera_chat_reasoning_tokens_total";
/// The part of the input tokens read from a cache (a reused prompt prefix) rather than
/// processed, by model and provider.
pub const CACHED_INPUT_TOKENS: &str = "tessera_chat_cached_input_tokens_total";
/// `gen_ai.server.time_to_first_token`: from the upstream call to its first event.
pub const TIME_TO_FIRST_TOKEN: &str = "gen_ai_server_time_to_first_token_seconds";
/// `gen_ai.client.operation.duration`: the whole upstream call, by model, provider and
/// `error_type` when it failed.
pub const OPERATION_DURATION: &str = "gen_ai_client_operation_duration_seconds";
/// Upstream generations running now.
pub const GENERATIONS_IN_FLIGHT: &str = "tessera_generations_in_flight";

/// Requests refused by policy, by `reason` (`rate_limit`, `credit_budget`).
pub const REFUSALS: &str = "tessera_refusals_total";

/// Finished file-processing attempts by `state` (`ready`, `failed`, `retrying`, `lease_lost`).
pub const FILE_JOBS: &str = "tessera_file_jobs_total";
/// How long one processing attempt took, by `state`.
pub const FILE_PROCESSING_DURATION: &str = "tessera_file_processing_duration_seconds";
/// Guardrail decisions by `kind` (the PII kind, `denied`, `input_size`, `hook`),
/// `direction` (`input`, `output`) and `effect` (`blocked`, `redacted`, `pseudonymised`,
/// `passed`), counted per value concerned. Rule ids are the writer's, so not a label.
pub const GUARDRAIL_DECISIONS: &str = "tessera_guardrail_decisions_total";
/// Completions of models opted in to the response cache, by `status` (`hit`, `miss`).
pub const RESPONSE_CACHE_LOOKUPS: &str = "tessera_response_cache_lookups_total";

/// File-processing jobs waiting in the database by `state` (`queued`, `processing`), read
/// when scraped (every replica reports the same cluster-wide figure).
pub const FILE_JOBS_WAITING: &str = "tessera_file_jobs";

/// Webhook delivery attempts by `outcome` (`delivered`, `retrying`, `failed`).
pub const WEBHOOK_DELIVERIES: &str = "tessera_webhook_deliveries_total";
/// Webhook deliveries still to be attempted, read when scraped (cluster-wide).
pub const WEBHOOK_OUTBOX_DEPTH: &str = "tessera_webhook_outbox_depth";

/// `db.client.connection.count` by `db_client_connection_state` (`used`, `idle`).
pub const DB_CONNECTIONS: &str = "db_client_connection_count";
/// `db.client.connection.max`.
pub const DB_CONNECTIONS_MAX: &str = "db_client_connection_max";
/// `db.client.connection.pending_requests`: requests waiting for a connection.
pub const DB_PENDING_REQUESTS: &str = "db_client_connection_pending_requests";
/// `db.client.connection.wait_time`, recorded by the store under this name (its
/// `tessera_store::CONNECTION_WAIT_TIME`; written out here so that metrics need no storage
/// adapter, and checked equal by the app).
pub const DB_WAIT_TIME: &str = "db_client_connection_wait_time_seconds";

/// Embedding batches by `outcome` (`ok`, `error`).
pub const EMBEDDING_BATCHES: &str = "tessera_embedding_batches_total";
/// Texts embedded (its rate is texts per second).
pub const EMBEDDING_TEXTS: &str = "tessera_embedding_texts_total";
/// How long one embedding batch took.
pub const EMBEDDING_DURATION: &str = "tessera_embedding_batch_duration_seconds";

/// 1 while a routed deployment's circuit is open (cooling down), else 0; by model and
/// deployment.
pub const DEPLOYMENT_CIRCUIT_OPEN: &str = "tessera_deployment_circuit_open";
/// A routed deployment's failures in a row since its last success or opening.
pub const DEPLOYMENT_FAILURES: &str = "tessera_deployment_consecutive_failures";

/// Always 1, labelled with the build's `version`.
pub const BUILD_INFO: &str = "tessera_build_info";

/// Latency buckets in seconds: the OpenTelemetry HTTP conventions' advice, up to 10 s.
pub const HTTP_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// The GenAI conventions' advice for `gen_ai.server.time_to_first_token`.
pub const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// The GenAI conventions' advice for `gen_ai.client.operation.duration`.
pub const OPERATION_BUCKETS: &[f64] = &[
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// The GenAI conventions' advice for `gen_ai.client.token.usage`.
pub const TOKEN_BUCKETS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];
/// Slow background work: file processing can take minutes.
pub const WORK_BUCKETS: &[f64] = &[
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

/// Each histogram and its buckets.
pub const HISTOGRAMS: &[(&str, &[f64])] = &[
    (HTTP_REQUEST_DURATION, HTTP_BUCKETS),
    (TIME_TO_FIRST_TOKEN, TTFT_BUCKETS),
    (OPERATION_DURATION, OPERATION_BUCKETS),
    (TOKEN_USAGE, TOKEN_BUCKETS),
    (FILE_PROCESSING_DURATION, WORK_BUCKETS),
    (DB_WAIT_TIME, HTTP_BUCKETS),
    (EMBEDDING_DURATION, WORK_BUCKETS),
];

/// Registers each metric's help text and unit with the installed recorder.
pub fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_histogram!(
        HTTP_REQUEST_DURATION,
        Unit::Seconds,
        "Duration of HTTP server requests, until the response head."
    );
    describe_counter!(
        CHAT_COMPLETIONS,
        "Chat completions by base model, provider and outcome."
    );
    describe_histogram!(
        TOKEN_USAGE,
        "Number of input and output tokens used per completion."
    );
    describe_counter!(REASONING_TOKENS, "Output tokens spent on reasoning.");
    describe_counter!(
        CACHED_INPUT_TOKENS,
        "Input tokens read from a cache rather than processed."
    );
    describe_histogram!(
        TIME_TO_FIRST_TOKEN,
        Unit::Seconds,
        "Time from the upstream call to its first event."
    );
    describe_histogram!(
        OPERATION_DURATION,
        Unit::Seconds,
        "Duration of upstream model calls."
    );
    describe_gauge!(GENERATIONS_IN_FLIGHT, "Upstream generations running now.");
    describe_counter!(
        REFUSALS,
        "Requests refused by rate limits or credit budgets."
    );
    describe_counter!(
        GUARDRAIL_DECISIONS,
        "Values guardrails blocked, redacted, pseudonymised or let pass, by kind and direction."
    );
    describe_counter!(
        RESPONSE_CACHE_LOOKUPS,
        "Completions of cached models answered from the response cache (hit) or not (miss)."
    );
    describe_counter!(
        FILE_JOBS,
        "File-processing attempts by the state they left the file in."
    );
    describe_histogram!(
        FILE_PROCESSING_DURATION,
        Unit::Seconds,
        "Duration of file-processing attempts."
    );
    describe_gauge!(
        FILE_JOBS_WAITING,
        "File-processing jobs in the database, queued or processing."
    );
    describe_counter!(WEBHOOK_DELIVERIES, "Webhook delivery attempts by outcome.");
    describe_gauge!(
        WEBHOOK_OUTBOX_DEPTH,
        "Webhook deliveries still to be attempted."
    );
    describe_gauge!(
        DEPLOYMENT_CIRCUIT_OPEN,
        "1 while a deployment's circuit is open (cooling down after failures)."
    );
    describe_gauge!(
        DEPLOYMENT_FAILURES,
        "A deployment's failures in a row since its last success or opening."
    );
    describe_gauge!(
        DB_CONNECTIONS,
        "Database connections in the pool, used or idle."
    );
    describe_gauge!(DB_CONNECTIONS_MAX, "The most connections the pool opens.");
    describe_gauge!(
        DB_PENDING_REQUESTS,
        "Requests waiting for a database connection."
    );
    describe_histogram!(
        DB_WAIT_TIME,
        Unit::Seconds,
        "Time spent waiting for a pooled database connection."
    );
    describe_counter!(EMBEDDING_BATCHES, "Embedding batches by outcome.");
    describe_counter!(EMBEDDING_TEXTS, "Texts embedded.");
    describe_histogram!(
        EMBEDDING_DURATION,
        Unit::Seconds,
        "Duration of embedding batches."
    );
    describe_gauge!(BUILD_INFO, "Always 1; the build's version is its label.");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_histogram_is_listed_once_with_rising_buckets() {
        let mut seen = std::collections::BTreeSet::new();
        for (name, buckets) in HISTOGRAMS {
            assert!(seen.insert(*name), "{name} is listed twice");
            assert!(!buckets.is_empty(), "{name} has no buckets");
            assert!(
                buckets.windows(2).all(|pair| pair[0] < pair[1]),
                "{name}'s buckets do not rise: {buckets:?}"
            );
        }
    }
}
