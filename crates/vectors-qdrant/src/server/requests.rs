//! The JSON bodies of the REST calls, per Qdrant's OpenAPI specification (`CreateCollection`,
//! `CreateFieldIndex`, `PointsList`, `SetPayload`, `FilterSelector`, `QueryRequest`).
//! Pure functions: what goes on the wire is decided here and tested here.

use qdrant_edge::SparseVector;
use qdrant_edge::bm25_embed::EdgeBm25;
use serde_json::{Map, Value, json};
use tessera_kernel::OrganizationId;
use tessera_knowledge::{DatasetId, FileId, IndexError, IndexedChunk};

use crate::fields::{DENSE_VECTOR, LATE_DIMENSIONS, LATE_VECTOR, SPARSE_VECTOR};
use crate::payload::{ChunkPayload, datasets_map};
use crate::point_id::point_id;
use crate::scope::{Keyword, file_scope};
use crate::search::{RRF_K, SearchPlan};
use crate::vectors::{LateLayout, check_dense, checked_late, document_sparse, token_rows};

/// `PUT /collections/{name}`: cosine dense vectors of `dimensions`, BM25 sparse vectors
/// with the IDF modifier, and the token vectors (MaxSim multivectors in float16, on disk,
/// without an HNSW graph: `m` 0), as the embedded shard is made (see
/// `crate::edge::config::late_params` for why). Payloads stay on disk (the server's
/// default); the indexed fields are kept in memory by their indexes.
pub(crate) fn create_collection(dimensions: usize) -> Value {
    json!({
        "vectors": {
            DENSE_VECTOR: { "size": dimensions, "distance": "Cosine" },
            LATE_VECTOR: {
                "size": LATE_DIMENSIONS,
                "distance": "Cosine",
                "multivector_config": { "comparator": "max_sim" },
                "datatype": "float16",
                "on_disk": true,
                "hnsw_config": { "m": 0, "payload_m": 0 },
            },
        },
        "sparse_vectors": {
            SPARSE_VECTOR: { "modifier": "idf" },
        },
    })
}

/// `PUT /collections/{name}/index`: a keyword index on one payload field.
pub(crate) fn keyword_index(field: &str) -> Value {
    json!({ "field_name": field, "field_schema": "keyword" })
}

/// One chunk as a `PointStruct`: the UUID id, the named vectors (no sparse vector when the
/// text has no token, no multivector without token vectors, as in the embedded shard) and
/// the payload.
pub(crate) fn point(
    bm25: &EdgeBm25,
    chunk: &IndexedChunk,
    dimensions: usize,
    late: &LateLayout,
) -> Result<Value, IndexError> {
    check_dense(&chunk.dense, dimensions)?;
    let mut vectors = Map::new();
    vectors.insert(DENSE_VECTOR.to_owned(), json!(chunk.dense));
    if let Some(sparse) = document_sparse(bm25, &chunk.text) {
        vectors.insert(SPARSE_VECTOR.to_owned(), sparse_vector(&sparse));
    }
    if let Some(tokens) = checked_late(chunk.late.as_ref(), late, "a chunk's")? {
        vectors.insert(LATE_VECTOR.to_owned(), json!(token_rows(tokens)));
    }
    let id = point_id(&chunk.organization, &chunk.file_id, chunk.ordinal);
    Ok(json!({
        "id": id.to_string(),
        "vector": Value::Object(vectors),
        "payload": Value::Object(ChunkPayload::of(chunk).into_map()?),
    }))
}

/// `PUT /collections/{name}/points`: a batch of points (a `PointsList`).
pub(crate) fn upsert(points: &[Value]) -> Value {
    json!({ "points": points })
}

/// `POST /collections/{name}/points/payload`: the file's chunks get the new dataset list
/// (other payload keys are kept: set-payload merges by key).
pub(crate) fn set_datasets(
    organization: &OrganizationId,
    file_id: &FileId,
    datasets: &[DatasetId],
) -> Value {
    json!({
        "payload": Value::Object(datasets_map(datasets)),
        "filter": filter(file_scope(organization, file_id)),
    })
}

/// `POST /collections/{name}/points/delete`: every chunk of the file (a `FilterSelector`).
pub(crate) fn delete_file(organization: &OrganizationId, file_id: &FileId) -> Value {
    json!({ "filter": filter(file_scope(organization, file_id)) })
}

/// `POST /collections/{name}/points/query`: one prefetch per ranking, fused by RRF with the
/// embedded engine's constant (`{"rrf": {"k": 60}}`; the bare `{"fusion": "rrf"}` would use
/// the server's default of 2 and rank differently). With a rerank, that fusion (limited to
/// the candidates) is the one prefetch of a nearest query on the token vectors, which the
/// collection compares by MaxSim. The filter sits on the root: the server, like
/// qdrant-edge, propagates it into every prefetch, so both rankings only see the allowed
/// chunks.
pub(crate) fn query(plan: &SearchPlan) -> Value {
    let mut rankings = Vec::with_capacity(2);
    if let Some(dense) = &plan.dense {
        rankings.push(json!({
            "query": dense,
            "using": DENSE_VECTOR,
            "limit": plan.candidates,
        }));
    }
    if let Some(sparse) = &plan.sparse {
        rankings.push(json!({
            "query": sparse_vector(sparse),
            "using": SPARSE_VECTOR,
            "limit": plan.candidates,
        }));
    }
    let fusion = json!({ "rrf": { "k": RRF_K } });
    let (prefetch, query) = match &plan.rerank {
        None => (json!(rankings), fusion),
        Some(rerank) => (
            json!([{ "prefetch": rankings, "query": fusion, "limit": rerank.candidates }]),
            json!(token_rows(&rerank.query)),
        ),
    };
    let mut body = json!({
        "prefetch": prefetch,
        "query": query,
        "filter": filter(plan.scope.clone()),
        "limit": plan.limit,
        "with_payload": true,
        "with_vector": false,
    });
    if plan.rerank.is_some() {
        body["using"] = json!(LATE_VECTOR);
    }
    body
}

/// A `Filter` on which every condition must hold (`MatchValue` / `MatchAny` conditions).
pub(crate) fn filter(scope: Vec<Keyword>) -> Value {
    let must: Vec<Value> = scope
        .into_iter()
        .map(|keyword| match keyword {
            Keyword::Equals(field, value) => json!({ "key": field, "match": { "value": value } }),
            Keyword::AnyOf(field, values) => json!({ "key": field, "match": { "any": values } }),
        })
        .collect();
    json!({ "must": must })
}

fn sparse_vector(sparse: &SparseVector) -> Value {
    json!({ "indices": sparse.indices, "values": sparse.values })
}

#[cfg(test)]
mod tests {
    use tessera_knowledge::{ChunkLocation, LateRerank, SearchMode, TokenVectors, VectorQuery};

    use super::*;
    use crate::search::plan;
    use crate::vectors::{bm25, query_sparse};

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    const STORED: &LateLayout = &LateLayout::Stored;

    /// `count` token vectors of `dims` values: token `t` is `0.5` at value `t` (and `t + 1`).
    fn tokens(dims: usize, count: usize) -> Result<TokenVectors, Box<dyn std::error::Error>> {
        let mut values = vec![0.0; dims * count];
        for token in 0..count {
            values[token * dims + token % dims] = 0.5;
            values[token * dims + (token + 1) % dims] = -0.5;
        }
        TokenVectors::new(dims, values).ok_or_else(|| "no tokens".into())
    }

    fn chunk(text: &str) -> Result<IndexedChunk, Box<dyn std::error::Error>> {
        Ok(IndexedChunk {
            organization: "org_a".parse()?,
            file_id: "file_0123456789abcdef0123456789abcdef".parse()?,
            ordinal: 3,
            datasets: vec!["ds_0123456789abcdef0123456789abcdef".parse()?],
            text: text.into(),
            location: ChunkLocation {
                page: Some(2),
                section: None,
                char_start: 10,
                char_end: 20,
            },
            dense: vec![0.5, -0.25],
            late: None,
        })
    }

    #[test]
    fn collection_and_indexes() -> TestResult {
        let body = create_collection(384);
        assert_eq!(
            body,
            json!({
                "vectors": {
                    "dense": { "size": 384, "distance": "Cosine" },
                    "late": {
                        "size": 128,
                        "distance": "Cosine",
                        "multivector_config": { "comparator": "max_sim" },
                        "datatype": "float16",
                        "on_disk": true,
                        "hnsw_config": { "m": 0, "payload_m": 0 },
                    },
                },
                "sparse_vectors": { "bm25": { "modifier": "idf" } },
            })
        );
        // The server's own types (which qdrant-edge shares) read the late vector's
        // settings as the embedded shard's.
        let late = &body["vectors"]["late"];
        let params = crate::edge::config::late_params();
        let comparator: qdrant_edge::MultiVectorConfig =
            serde_json::from_value(late["multivector_config"].clone())?;
        assert_eq!(Some(comparator), params.multivector_config);
        let datatype: qdrant_edge::VectorStorageDatatype =
            serde_json::from_value(late["datatype"].clone())?;
        assert_eq!(Some(datatype), params.datatype);
        let hnsw = params.hnsw_config.ok_or("no HNSW settings")?;
        assert_eq!(
            (late["hnsw_config"]["m"].as_u64(), hnsw.m, hnsw.payload_m),
            (Some(0), 0, Some(0))
        );
        assert_eq!(late["on_disk"].as_bool(), params.on_disk);
        assert_eq!(
            keyword_index("organization_id"),
            json!({ "field_name": "organization_id", "field_schema": "keyword" })
        );
        Ok(())
    }

    #[test]
    fn a_point_is_the_edge_point() -> TestResult {
        let bm25 = bm25()?;
        let chunk = chunk("Walruses walrus")?;
        let body = point(&bm25, &chunk, 2, STORED)?;
        let sparse = document_sparse(&bm25, &chunk.text).ok_or("no sparse vector")?;
        let id = point_id(&chunk.organization, &chunk.file_id, 3).to_string();
        assert_eq!(
            body,
            json!({
                "id": id,
                "vector": {
                    "dense": [0.5, -0.25],
                    "bm25": { "indices": sparse.indices, "values": sparse.values },
                },
                "payload": {
                    "organization_id": "org_a",
                    "file_id": "file_0123456789abcdef0123456789abcdef",
                    "ordinal": 3,
                    "dataset_ids": ["ds_0123456789abcdef0123456789abcdef"],
                    "text": "Walruses walrus",
                    "page": 2,
                    "section": null,
                    "char_start": 10,
                    "char_end": 20,
                },
            })
        );
        // Both words stem to one term, counted twice: one index, as the edge shard stores.
        assert_eq!(sparse.indices.len(), 1);
        assert_eq!(
            upsert(std::slice::from_ref(&body)),
            json!({ "points": [body] })
        );

        // Token vectors: one row per token, beside the other vectors.
        let mut late = chunk;
        late.late = Some(tokens(LATE_DIMENSIONS, 3)?);
        let body = point(&bm25, &late, 2, STORED)?;
        let rows = body["vector"]["late"].as_array().ok_or("no late vector")?;
        assert_eq!(rows.len(), 3);
        assert!(
            rows.iter()
                .all(|row| row.as_array().map(Vec::len) == Some(128))
        );
        assert_eq!(
            (rows[1][1].as_f64(), rows[1][2].as_f64()),
            (Some(0.5), Some(-0.5))
        );
        assert_eq!(body["vector"]["dense"], json!([0.5, -0.25]));
        // Empty token vectors are none.
        late.late = Some(TokenVectors::default());
        assert_eq!(point(&bm25, &late, 2, STORED)?["vector"].get("late"), None);
        Ok(())
    }

    /// qdrant-edge deserializes with the server's own types (its `segment` and `shard`
    /// crates): the JSON sent decodes into exactly the point and filter the embedded adapter
    /// builds, so both adapters store and select the same thing.
    #[test]
    fn bodies_decode_into_what_the_edge_adapter_builds() -> TestResult {
        let bm25 = bm25()?;
        for text in ["Walruses haul out on the ice in spring.", "?!"] {
            for late in [None, Some(tokens(LATE_DIMENSIONS, 4)?)] {
                let mut chunk = chunk(text)?;
                chunk.late = late;
                let sent: qdrant_edge::PointStructPersisted =
                    serde_json::from_value(point(&bm25, &chunk, 2, STORED)?)?;
                assert_eq!(
                    sent,
                    crate::edge::points::point(&bm25, &chunk, 2, STORED)?,
                    "{text}"
                );
            }
        }
        let org: OrganizationId = "org_a".parse()?;
        let file: FileId = "file_0123456789abcdef0123456789abcdef".parse()?;
        let scopes = [
            file_scope(&org, &file),
            crate::scope::search_scope(
                &org,
                Some(&"ds_0123456789abcdef0123456789abcdef".parse()?),
                Some(&[file.clone(), FileId::generate()]),
            ),
        ];
        for scope in scopes {
            let sent: qdrant_edge::Filter = serde_json::from_value(filter(scope.clone()))?;
            assert_eq!(sent, crate::edge::filter::filter(scope)?);
        }
        Ok(())
    }

    #[test]
    fn tokenless_text_is_dense_only_and_bad_vectors_are_refused() -> TestResult {
        let bm25 = bm25()?;
        let body = point(&bm25, &chunk("?! …")?, 2, STORED)?;
        assert_eq!(body["vector"], json!({ "dense": [0.5, -0.25] }));
        assert!(matches!(
            point(&bm25, &chunk("text")?, 3, STORED),
            Err(IndexError::Invalid(_))
        ));
        let mut wide = chunk("text")?;
        wide.late = Some(tokens(LATE_DIMENSIONS * 3, 2)?);
        assert!(matches!(
            point(&bm25, &wide, 2, STORED),
            Err(IndexError::Invalid(_))
        ));
        // A collection made before late interaction: refused with the reason, only when
        // the chunk brings token vectors.
        let missing = LateLayout::Missing("re-index into a new, empty collection".into());
        let mut late = chunk("text")?;
        assert!(point(&bm25, &late, 2, &missing).is_ok());
        late.late = Some(tokens(LATE_DIMENSIONS, 2)?);
        assert_eq!(
            point(&bm25, &late, 2, &missing),
            Err(IndexError::Invalid(
                "re-index into a new, empty collection".into()
            ))
        );
        Ok(())
    }

    #[test]
    fn changes_filter_on_the_organization_and_file() -> TestResult {
        let org: OrganizationId = "org_a".parse()?;
        let file: FileId = "file_0123456789abcdef0123456789abcdef".parse()?;
        let scope = json!({ "must": [
            { "key": "organization_id", "match": { "value": "org_a" } },
            { "key": "file_id", "match": { "value": "file_0123456789abcdef0123456789abcdef" } },
        ]});
        let dataset: DatasetId = "ds_0123456789abcdef0123456789abcdef".parse()?;
        assert_eq!(
            set_datasets(&org, &file, &[dataset]),
            json!({
                "payload": { "dataset_ids": ["ds_0123456789abcdef0123456789abcdef"] },
                "filter": scope,
            })
        );
        assert_eq!(
            set_datasets(&org, &file, &[]),
            json!({ "payload": { "dataset_ids": [] }, "filter": scope })
        );
        assert_eq!(delete_file(&org, &file), json!({ "filter": scope }));
        Ok(())
    }

    #[test]
    fn a_hybrid_query_prefetches_both_rankings_and_fuses_them() -> TestResult {
        let bm25 = bm25()?;
        let file: FileId = "file_0123456789abcdef0123456789abcdef".parse()?;
        let query = VectorQuery {
            organization: "org_a".parse()?,
            dataset: Some("ds_0123456789abcdef0123456789abcdef".parse()?),
            files: Some(vec![file.clone(), file]),
            text: "walrus".into(),
            dense: vec![1.0, 0.0],
            limit: 5,
            mode: SearchMode::Hybrid,
            late: None,
        };
        let plan = plan(&bm25, query, 2, &LateLayout::Stored)?.ok_or("no plan")?;
        let sparse = query_sparse(&bm25, "walrus").ok_or("no sparse vector")?;
        assert_eq!(
            super::query(&plan),
            json!({
                "prefetch": [
                    { "query": [1.0, 0.0], "using": "dense", "limit": 40 },
                    {
                        "query": { "indices": sparse.indices, "values": sparse.values },
                        "using": "bm25",
                        "limit": 40,
                    },
                ],
                "query": { "rrf": { "k": 60 } },
                "filter": { "must": [
                    { "key": "organization_id", "match": { "value": "org_a" } },
                    { "key": "dataset_ids",
                      "match": { "value": "ds_0123456789abcdef0123456789abcdef" } },
                    { "key": "file_id",
                      "match": { "any": ["file_0123456789abcdef0123456789abcdef"] } },
                ]},
                "limit": 5,
                "with_payload": true,
                "with_vector": false,
            })
        );
        Ok(())
    }

    #[test]
    fn single_ranking_queries_prefetch_one() -> TestResult {
        let bm25 = bm25()?;
        let query = |mode, dense: Vec<f32>| -> Result<VectorQuery, Box<dyn std::error::Error>> {
            Ok(VectorQuery {
                organization: "org_a".parse()?,
                dataset: None,
                files: None,
                text: "walrus".into(),
                dense,
                limit: 3,
                mode,
                late: None,
            })
        };
        let dense =
            plan(&bm25, query(SearchMode::Dense, vec![0.0, 1.0])?, 2, STORED)?.ok_or("none")?;
        let body = super::query(&dense);
        assert_eq!(
            body["prefetch"],
            json!([{ "query": [0.0, 1.0], "using": "dense", "limit": 40 }])
        );
        assert_eq!(
            body["filter"],
            json!({ "must": [{ "key": "organization_id", "match": { "value": "org_a" } }] })
        );
        let sparse =
            plan(&bm25, query(SearchMode::Sparse, Vec::new())?, 2, STORED)?.ok_or("none")?;
        let body = super::query(&sparse);
        let prefetch = body["prefetch"].as_array().ok_or("no prefetch")?;
        assert_eq!(prefetch.len(), 1);
        assert_eq!(prefetch[0]["using"], json!("bm25"));
        Ok(())
    }

    /// The fusion, limited to the rerank's candidates, is the one prefetch of a nearest
    /// query on the token vectors (one row per token), filtered on the root.
    #[test]
    fn a_reranked_query_nests_the_fusion_under_maxsim() -> TestResult {
        let bm25 = bm25()?;
        let query = VectorQuery {
            organization: "org_a".parse()?,
            dataset: None,
            files: None,
            text: "walrus".into(),
            dense: vec![1.0, 0.0],
            limit: 5,
            mode: SearchMode::Hybrid,
            late: Some(LateRerank {
                query: tokens(LATE_DIMENSIONS, 2)?,
                candidates: 20,
            }),
        };
        let plan = plan(&bm25, query, 2, STORED)?.ok_or("no plan")?;
        let sparse = query_sparse(&bm25, "walrus").ok_or("no sparse vector")?;
        let rows = token_rows(&tokens(LATE_DIMENSIONS, 2)?);
        assert_eq!(
            super::query(&plan),
            json!({
                "prefetch": [{
                    "prefetch": [
                        { "query": [1.0, 0.0], "using": "dense", "limit": 80 },
                        {
                            "query": { "indices": sparse.indices, "values": sparse.values },
                            "using": "bm25",
                            "limit": 80,
                        },
                    ],
                    "query": { "rrf": { "k": 60 } },
                    "limit": 20,
                }],
                "query": rows,
                "using": "late",
                "filter": { "must": [
                    { "key": "organization_id", "match": { "value": "org_a" } },
                ]},
                "limit": 5,
                "with_payload": true,
                "with_vector": false,
            })
        );
        // The fallback for candidates without token vectors: the plain fusion of the 20.
        let fallback = super::query(&plan.fallback(3).ok_or("no fallback")?);
        assert_eq!(fallback["query"], json!({ "rrf": { "k": 60 } }));
        assert_eq!(fallback["limit"], json!(20));
        assert_eq!(fallback["prefetch"][0]["limit"], json!(80));
        assert_eq!(fallback.get("using"), None);
        Ok(())
    }
}
