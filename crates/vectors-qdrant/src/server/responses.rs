//! Qdrant's answers, per its OpenAPI specification: the `{"result", "status", "time"}`
//! envelope of successes, `ErrorResponse` (`{"status": {"error"}}`) of failures,
//! `CollectionInfo`, `UpdateResult`, `QueryResponse` and `VersionInfo`. Pure functions, so
//! recorded answers test them.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tessera_knowledge::{IndexError, ScoredChunk};

use crate::fields::{DENSE_VECTOR, KEYWORD_INDEXED, LATE_DIMENSIONS, LATE_VECTOR, SPARSE_VECTOR};
use crate::payload::ChunkPayload;
use crate::vectors::LateLayout;

/// The oldest server with parametrized RRF (`{"rrf": {"k": …}}`), which the query needs to
/// rank as the embedded engine does.
pub(crate) const MIN_VERSION: (u64, u64) = (1, 16);

/// The longest piece of an unexpected answer quoted in an error.
const QUOTE_CHARS: usize = 300;

#[derive(Deserialize)]
struct Envelope<T> {
    result: T,
}

/// The `result` of a successful answer. A 2xx whose body does not parse is the server's
/// fault (a proxy's page, an incompatible version): `Unavailable`.
pub(crate) fn result<T: DeserializeOwned>(call: &str, body: &[u8]) -> Result<T, IndexError> {
    serde_json::from_slice::<Envelope<T>>(body)
        .map(|envelope| envelope.result)
        .map_err(|error| {
            IndexError::Unavailable(format!(
                "{call}: unexpected answer from Qdrant ({error}): {}",
                quote(body)
            ))
        })
}

/// A failed answer as the port's error: the server being down, overloaded or slow (5xx,
/// 429, 408) is `Unavailable`, worth retrying; any other refusal (4xx: bad input, wrong
/// API key, a missing collection) is `Invalid`, with Qdrant's own explanation.
pub(crate) fn error(call: &str, status: u16, body: &[u8]) -> IndexError {
    let message = error_message(status, body);
    match status {
        408 | 429 | 500..=599 => {
            IndexError::Unavailable(format!("{call}: Qdrant answered {status}: {message}"))
        }
        400..=499 => IndexError::Invalid(format!("{call}: Qdrant refused ({status}): {message}")),
        _ => IndexError::Unavailable(format!("{call}: unexpected HTTP {status}: {message}")),
    }
}

/// `status.error` of an `ErrorResponse`, else the start of the body, else the status.
fn error_message(status: u16, body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct ErrorResponse {
        status: ErrorStatus,
    }
    #[derive(Deserialize)]
    struct ErrorStatus {
        error: String,
    }
    if let Ok(response) = serde_json::from_slice::<ErrorResponse>(body) {
        return response.status.error;
    }
    let text = quote(body);
    if text.is_empty() {
        format!("HTTP {status}")
    } else {
        text
    }
}

fn quote(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// What an existing collection must be for this adapter to use it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Layout {
    /// `config.params.vectors.dense`: size and distance.
    pub dense: Option<(u64, String)>,
    /// `config.params.sparse_vectors.bm25.modifier`.
    pub sparse_modifier: Option<String>,
    /// `config.params.vectors.late`: size, distance and multivector comparator (empty when
    /// it is not a multivector).
    pub late: Option<(u64, String, String)>,
    /// Payload fields with a keyword index (`payload_schema`).
    pub keyword_indexed: Vec<String>,
}

/// Reads a `GET /collections/{name}` result (a `CollectionInfo`).
pub(crate) fn layout(info: &Value) -> Layout {
    let params = &info["config"]["params"];
    let dense = &params["vectors"][DENSE_VECTOR];
    let dense = dense["size"]
        .as_u64()
        .map(|size| (size, dense["distance"].as_str().unwrap_or("").to_owned()));
    let sparse_modifier = params["sparse_vectors"][SPARSE_VECTOR]["modifier"]
        .as_str()
        .map(str::to_owned);
    let late = &params["vectors"][LATE_VECTOR];
    let late = late["size"].as_u64().map(|size| {
        let text = |value: &Value| value.as_str().unwrap_or("").to_owned();
        (
            size,
            text(&late["distance"]),
            text(&late["multivector_config"]["comparator"]),
        )
    });
    let keyword_indexed = info["payload_schema"]
        .as_object()
        .map(|schema| {
            schema
                .iter()
                .filter(|(_, index)| index["data_type"] == "keyword")
                .map(|(field, _)| field.clone())
                .collect()
        })
        .unwrap_or_default();
    Layout {
        dense,
        sparse_modifier,
        late,
        keyword_indexed,
    }
}

/// Checks that an existing collection has the layout this adapter writes (as the embedded
/// shard is checked when reopened): a collection made for another embedding model must not
/// be silently mixed with new vectors. Says whether it has the token vectors (one made
/// before late interaction has not, and serves everything else).
pub(crate) fn check_layout(
    layout: &Layout,
    collection: &str,
    dimensions: usize,
) -> Result<LateLayout, IndexError> {
    match &layout.dense {
        Some((size, distance)) if *size == dimensions as u64 && distance == "Cosine" => {}
        Some((size, distance)) => {
            return Err(IndexError::Invalid(format!(
                "the Qdrant collection `{collection}` holds {DENSE_VECTOR} vectors of {size} \
                 dimensions ({distance}), not {dimensions} (Cosine): use another collection \
                 (knowledge.qdrant_collection) and re-index with the new embedding model"
            )));
        }
        None => {
            return Err(IndexError::Invalid(format!(
                "the Qdrant collection `{collection}` has no `{DENSE_VECTOR}` vector: it was \
                 not made by Tessera; use another collection (knowledge.qdrant_collection)"
            )));
        }
    }
    if layout.sparse_modifier.as_deref() != Some("idf") {
        return Err(IndexError::Invalid(format!(
            "the Qdrant collection `{collection}` has no `{SPARSE_VECTOR}` sparse vector with \
             the IDF modifier: use another collection (knowledge.qdrant_collection)"
        )));
    }
    Ok(match &layout.late {
        Some((size, distance, comparator))
            if *size == LATE_DIMENSIONS as u64
                && distance == "Cosine"
                && comparator == "max_sim" =>
        {
            LateLayout::Stored
        }
        other => {
            let has = match other {
                None => format!(
                    "has no `{LATE_VECTOR}` token vectors (it was made before late interaction)"
                ),
                Some((size, distance, comparator)) => format!(
                    "has `{LATE_VECTOR}` vectors of another kind ({size} values, {distance}, \
                     comparator `{comparator}`), not token vectors of {LATE_DIMENSIONS} values \
                     compared by MaxSim"
                ),
            };
            LateLayout::Missing(format!(
                "the Qdrant collection `{collection}` {has}: re-index into a new, empty \
                 collection (knowledge.qdrant_collection) to use late interaction"
            ))
        }
    })
}

/// The filter fields still without a keyword index.
pub(crate) fn missing_indexes(layout: &Layout) -> Vec<&'static str> {
    KEYWORD_INDEXED
        .into_iter()
        .filter(|field| {
            !layout
                .keyword_indexed
                .iter()
                .any(|indexed| indexed == field)
        })
        .collect()
}

/// An `UpdateResult`: with `wait=true` the change is applied (`completed`); anything else
/// (`wait_timeout`) means it may not be, which the caller must be able to retry.
pub(crate) fn check_update(call: &str, result: &Value) -> Result<(), IndexError> {
    match result["status"].as_str() {
        Some("completed" | "acknowledged") => Ok(()),
        other => Err(IndexError::Unavailable(format!(
            "{call}: Qdrant did not complete the change (status {})",
            other.unwrap_or("missing")
        ))),
    }
}

/// A `QueryResponse`'s points as hits, best first as the server ranked them.
pub(crate) fn hits(result: Value) -> Result<Vec<ScoredChunk>, IndexError> {
    #[derive(Deserialize)]
    struct QueryResponse {
        points: Vec<ScoredPoint>,
    }
    #[derive(Deserialize)]
    struct ScoredPoint {
        score: f32,
        payload: Option<Map<String, Value>>,
    }
    let response: QueryResponse = serde_json::from_value(result).map_err(|error| {
        IndexError::Unavailable(format!("unexpected query answer from Qdrant: {error}"))
    })?;
    response
        .points
        .into_iter()
        .map(|point| {
            Ok(ChunkPayload::from_map(point.payload.unwrap_or_default())?.into_hit(point.score))
        })
        .collect()
}

/// Refuses a server older than [`MIN_VERSION`], from `GET /`'s `VersionInfo.version`
/// (`1.16.3`, `1.17.0-dev`). An unreadable version is let through: the first query says
/// whether the server understands it.
pub(crate) fn check_version(version: &str) -> Result<(), IndexError> {
    let mut parts = version
        .trim_start_matches('v')
        .split(['.', '-'])
        .map(str::parse::<u64>);
    if let (Some(Ok(major)), Some(Ok(minor))) = (parts.next(), parts.next())
        && (major, minor) < MIN_VERSION
    {
        return Err(IndexError::Invalid(format!(
            "Qdrant {version} is too old: Tessera needs {}.{} or later (parametrized RRF fusion)",
            MIN_VERSION.0, MIN_VERSION.1
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn bytes(value: &Value) -> Vec<u8> {
        value.to_string().into_bytes()
    }

    /// A `GET /collections/{name}` answer as Qdrant 1.16 gives it for a collection this
    /// adapter made before late interaction.
    fn collection_answer(size: u64) -> Value {
        json!({
            "result": {
                "status": "green",
                "optimizer_status": "ok",
                "indexed_vectors_count": 0,
                "points_count": 12,
                "segments_count": 2,
                "config": {
                    "params": {
                        "vectors": { "dense": { "size": size, "distance": "Cosine" } },
                        "shard_number": 1,
                        "replication_factor": 1,
                        "write_consistency_factor": 1,
                        "on_disk_payload": true,
                        "sparse_vectors": { "bm25": { "modifier": "idf" } }
                    },
                    "hnsw_config": { "m": 16, "ef_construct": 100, "full_scan_threshold": 10000,
                                     "max_indexing_threads": 0, "on_disk": false },
                    "optimizer_config": { "deleted_threshold": 0.2, "vacuum_min_vector_number": 1000,
                                          "default_segment_number": 0, "max_segment_size": null,
                                          "memmap_threshold": null, "indexing_threshold": 20000,
                                          "flush_interval_sec": 5, "max_optimization_threads": null },
                    "wal_config": { "wal_capacity_mb": 32, "wal_segments_ahead": 0 },
                    "quantization_config": null,
                    "strict_mode_config": { "enabled": false }
                },
                "payload_schema": {
                    "organization_id": { "data_type": "keyword", "points": 12 },
                    "file_id": { "data_type": "keyword", "points": 12 },
                    "ordinal": { "data_type": "integer", "points": 12 }
                }
            },
            "status": "ok",
            "time": 0.000_053
        })
    }

    #[test]
    fn a_collection_made_here_is_accepted_and_its_missing_indexes_named() -> TestResult {
        let info: Value = result("GET", &bytes(&collection_answer(16)))?;
        let layout = layout(&info);
        assert_eq!(layout.dense, Some((16, "Cosine".into())));
        assert_eq!(layout.sparse_modifier.as_deref(), Some("idf"));
        assert_eq!(layout.late, None);
        let late = check_layout(&layout, "chunks", 16)?;
        assert!(
            matches!(&late, LateLayout::Missing(m) if m.contains("no `late`")
                && m.contains("new, empty collection")),
            "{late:?}"
        );
        assert_eq!(missing_indexes(&layout), vec!["dataset_ids"]);
        Ok(())
    }

    #[test]
    fn a_collection_with_token_vectors_serves_late_interaction() -> TestResult {
        let mut answer = collection_answer(16);
        // As Qdrant reports the vector `requests::create_collection` asks for.
        answer["result"]["config"]["params"]["vectors"]["late"] = json!({
            "size": 128, "distance": "Cosine", "hnsw_config": { "m": 0, "payload_m": 0 },
            "on_disk": true, "datatype": "float16",
            "multivector_config": { "comparator": "max_sim" }
        });
        let info: Value = result("GET", &bytes(&answer))?;
        let layout = layout(&info);
        assert_eq!(layout.late, Some((128, "Cosine".into(), "max_sim".into())));
        assert_eq!(check_layout(&layout, "chunks", 16)?, LateLayout::Stored);

        // Another width, or not a multivector: usable without late interaction only.
        let mut narrow = info.clone();
        narrow["config"]["params"]["vectors"]["late"]["size"] = json!(96);
        let late = check_layout(&super::layout(&narrow), "chunks", 16)?;
        assert!(
            matches!(&late, LateLayout::Missing(m) if m.contains("96 values")),
            "{late:?}"
        );
        let mut single = info;
        single["config"]["params"]["vectors"]["late"]["multivector_config"] = Value::Null;
        let late = check_layout(&super::layout(&single), "chunks", 16)?;
        assert!(matches!(late, LateLayout::Missing(_)), "{late:?}");
        Ok(())
    }

    #[test]
    fn other_layouts_are_invalid_with_a_clear_reason() -> TestResult {
        let info: Value = result("GET", &bytes(&collection_answer(384)))?;
        let error = check_layout(&layout(&info), "chunks", 16);
        let Err(IndexError::Invalid(message)) = error else {
            return Err(format!("{error:?}").into());
        };
        assert!(
            message.contains("384") && message.contains("16"),
            "{message}"
        );
        assert!(message.contains("knowledge.qdrant_collection"), "{message}");

        // A single unnamed vector (someone else's collection).
        let unnamed = json!({ "config": { "params": {
            "vectors": { "size": 16, "distance": "Cosine" } } }, "payload_schema": {} });
        assert!(matches!(
            check_layout(&layout(&unnamed), "chunks", 16),
            Err(IndexError::Invalid(_))
        ));
        let mut no_idf = collection_answer(16)["result"].clone();
        no_idf["config"]["params"]["sparse_vectors"]["bm25"] = json!({ "modifier": "none" });
        assert!(matches!(
            check_layout(&layout(&no_idf), "chunks", 16),
            Err(IndexError::Invalid(_))
        ));
        let mut euclid = collection_answer(16)["result"].clone();
        euclid["config"]["params"]["vectors"]["dense"]["distance"] = json!("Euclid");
        assert!(matches!(
            check_layout(&layout(&euclid), "chunks", 16),
            Err(IndexError::Invalid(_))
        ));
        Ok(())
    }

    #[test]
    fn errors_map_by_status_with_qdrants_message() {
        let not_found = bytes(&json!({
            "status": { "error": "Not found: Collection `chunks` doesn't exist!" },
            "time": 0.000_012
        }));
        assert_eq!(
            error("GET /collections/chunks", 404, &not_found),
            IndexError::Invalid(
                "GET /collections/chunks: Qdrant refused (404): Not found: Collection `chunks` \
                 doesn't exist!"
                    .into()
            )
        );
        let wrong = bytes(&json!({
            "status": { "error": "Wrong input: Vector dimension error: expected dim: 16, got 3" },
            "time": 0.0001
        }));
        assert!(matches!(
            error("PUT points", 400, &wrong),
            IndexError::Invalid(message) if message.ends_with("expected dim: 16, got 3")
        ));
        assert!(matches!(
            error("PUT points", 401, b"Must provide an API key or an Authorization bearer token"),
            IndexError::Invalid(message) if message.contains("Must provide an API key")
        ));
        for status in [500, 502, 503, 504, 429, 408] {
            assert!(
                matches!(error("query", status, b""), IndexError::Unavailable(message)
                    if message.contains(&format!("HTTP {status}"))),
                "{status}"
            );
        }
        let busy = bytes(&json!({
            "status": { "error": "Service internal error: 1 of 1 read operations failed" },
            "time": 0.2
        }));
        assert!(matches!(
            error("query", 500, &busy),
            IndexError::Unavailable(message) if message.contains("read operations failed")
        ));
        let long = "x".repeat(1000);
        assert!(matches!(
            error("query", 502, long.as_bytes()),
            IndexError::Unavailable(message) if message.chars().count() < 400
        ));
    }

    #[test]
    fn update_results_must_be_applied() -> TestResult {
        let answer = bytes(&json!({
            "result": { "operation_id": 7, "status": "completed" },
            "status": "ok",
            "time": 0.0021
        }));
        let update: Value = result("PUT points", &answer)?;
        check_update("PUT points", &update)?;
        assert!(matches!(
            check_update(
                "PUT points",
                &json!({ "operation_id": 8, "status": "wait_timeout" })
            ),
            Err(IndexError::Unavailable(_))
        ));
        // `PUT /collections/{name}` answers `true`.
        let created: bool = result("PUT", br#"{"result":true,"status":"ok","time":0.1}"#)?;
        assert!(created);
        assert!(matches!(
            result::<Value>("PUT", b"<html>Bad gateway</html>"),
            Err(IndexError::Unavailable(_))
        ));
        Ok(())
    }

    #[test]
    fn query_points_become_hits_in_the_servers_order() -> TestResult {
        let answer = bytes(&json!({
            "result": { "points": [
                {
                    "id": "5c56c793-69f3-5fbf-87e6-c4bf54c28c26",
                    "version": 3,
                    "score": 0.5,
                    "payload": {
                        "organization_id": "org_a",
                        "file_id": "file_0123456789abcdef0123456789abcdef",
                        "ordinal": 3,
                        "dataset_ids": ["ds_0123456789abcdef0123456789abcdef"],
                        "text": "Walruses haul out on ice.",
                        "page": 2,
                        "section": "Habitat",
                        "char_start": 10,
                        "char_end": 35
                    }
                },
                {
                    "id": "0a7c4d1e-2f3b-5c6d-8e9f-0123456789ab",
                    "version": 3,
                    "score": 0.25,
                    "payload": {
                        "organization_id": "org_a",
                        "file_id": "file_0123456789abcdef0123456789abcdef",
                        "ordinal": 4,
                        "dataset_ids": [],
                        "text": "Tusks.",
                        "page": null,
                        "section": null,
                        "char_start": 36,
                        "char_end": 42
                    }
                }
            ]},
            "status": "ok",
            "time": 0.0015
        }));
        let hits = hits(result("query", &answer)?)?;
        assert_eq!(hits.len(), 2);
        assert_eq!(
            hits[0].file_id.as_str(),
            "file_0123456789abcdef0123456789abcdef"
        );
        assert_eq!((hits[0].ordinal, hits[0].score), (3, 0.5));
        assert_eq!(hits[0].text, "Walruses haul out on ice.");
        assert_eq!(hits[0].location.page, Some(2));
        assert_eq!(hits[0].location.section.as_deref(), Some("Habitat"));
        assert_eq!((hits[1].ordinal, hits[1].location.page), (4, None));

        let empty: Value = result(
            "query",
            br#"{"result":{"points":[]},"status":"ok","time":0}"#,
        )?;
        assert!(hits_of(empty)?.is_empty());
        // A point without Tessera's payload (another writer's) is unreadable, not skipped.
        let foreign =
            json!({ "points": [{ "id": 1, "version": 0, "score": 1.0, "payload": null }] });
        assert!(matches!(hits_of(foreign), Err(IndexError::Unavailable(_))));
        Ok(())
    }

    fn hits_of(result: Value) -> Result<Vec<ScoredChunk>, IndexError> {
        hits(result)
    }

    #[test]
    fn versions_before_parametrized_rrf_are_refused() {
        for version in ["1.16.0", "1.16.3", "1.17.0-dev", "2.0.0", "v1.18.1", "dev"] {
            assert_eq!(check_version(version), Ok(()), "{version}");
        }
        for version in ["1.15.5", "1.9.0", "0.11.7"] {
            assert!(
                matches!(check_version(version), Err(IndexError::Invalid(_))),
                "{version}"
            );
        }
    }
}
