//! [`QdrantServerIndex`]: the port over HTTP. Each call sends one body from
//! [`super::requests`] and reads the answer with [`super::responses`]; changes wait for the
//! server to apply them (`wait=true`), as the embedded engine applies them before returning.

use std::error::Error as _;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use qdrant_edge::bm25_embed::EdgeBm25;
use reqwest::header::HeaderValue;
use reqwest::{Method, StatusCode, Url};
use serde::Deserialize;
use serde_json::Value;
use tessera_kernel::OrganizationId;
use tessera_knowledge::{
    DatasetId, FileId, IndexError, IndexedChunk, ScoredChunk, VectorIndex, VectorQuery,
};

use super::{requests, responses};
use crate::search::{SearchPlan, plan, with_unscored};
use crate::vectors::{LateLayout, bm25};

/// Points per upsert request (Qdrant's default request limit is 32 MiB; 256 points of 1536
/// dimensions stay far below it).
const UPSERT_BATCH: usize = 256;
/// Connecting gives up after this long (the server is down or unreachable).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A whole request gives up after this long (changes wait for the server to apply them).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The vector index in one collection of a Qdrant server or cluster, over its REST API.
/// It stores exactly the points [`crate::EdgeVectorIndex`] stores. Cheap to clone; any
/// number of processes may share the collection.
#[derive(Clone)]
pub struct QdrantServerIndex {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    /// The base URL without a trailing slash, e.g. `https://qdrant.internal:6333`.
    base: String,
    collection: String,
    api_key: Option<HeaderValue>,
    dimensions: usize,
    bm25: EdgeBm25,
    /// Whether the collection has the token vectors, known once [`QdrantServerIndex::connect`]
    /// has read its layout (until then assumed: the server refuses what it cannot store).
    late: OnceLock<LateLayout>,
}

impl fmt::Debug for QdrantServerIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QdrantServerIndex")
            .field("base", &self.inner.base)
            .field("collection", &self.inner.collection)
            .field("dimensions", &self.inner.dimensions)
            .field(
                "api_key",
                &self.inner.api_key.as_ref().map(|_| "<redacted>"),
            )
            .finish_non_exhaustive()
    }
}

/// A 2xx answer's body, or the status and body of another.
struct Answer {
    status: StatusCode,
    body: Vec<u8>,
}

impl QdrantServerIndex {
    /// Connects to the server at `url` (e.g. `http://localhost:6333`; REST, not the gRPC
    /// port), sending `api_key` as the `api-key` header when given, and makes sure the
    /// collection is ready: created when missing (cosine `dense` vectors of `dimensions`,
    /// `bm25` sparse vectors with the IDF modifier, `late` token vectors compared by MaxSim,
    /// keyword indexes on the filter fields), checked when present. A collection made for
    /// other dimensions is `Invalid` (the embedding model changed: index again into another
    /// collection); one made before late interaction serves everything but token vectors
    /// (a chunk or a query with some is `Invalid`); an unreachable server is `Unavailable`.
    pub async fn connect(
        url: &str,
        api_key: Option<&str>,
        collection: &str,
        dimensions: usize,
    ) -> Result<Self, IndexError> {
        let index = Self::new(url, api_key, collection, dimensions)?;
        index.prepare().await?;
        tracing::debug!(base = %index.inner.base, collection, dimensions, "Qdrant collection ready");
        Ok(index)
    }

    /// Checks the settings and builds the client, without a request.
    fn new(
        url: &str,
        api_key: Option<&str>,
        collection: &str,
        dimensions: usize,
    ) -> Result<Self, IndexError> {
        if dimensions == 0 {
            return Err(IndexError::Invalid("dense vectors need dimensions".into()));
        }
        let parsed = Url::parse(url)
            .map_err(|error| IndexError::Invalid(format!("Qdrant URL `{url}`: {error}")))?;
        if !matches!(parsed.scheme(), "http" | "https")
            || parsed.query().is_some()
            || parsed.fragment().is_some()
        {
            return Err(IndexError::Invalid(format!(
                "Qdrant URL `{url}`: must be an http:// or https:// URL without query"
            )));
        }
        // Restricted to characters that need no escaping in a URL path (and no dots, so the
        // name can never climb out of `/collections/`).
        let name_ok = (1..=255).contains(&collection.len())
            && collection
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !name_ok {
            return Err(IndexError::Invalid(format!(
                "Qdrant collection name `{collection}`: use 1-255 letters, digits, `_` or `-`"
            )));
        }
        let api_key = match api_key {
            None | Some("") => None,
            Some(key) => {
                let mut value = HeaderValue::from_str(key)
                    .ok()
                    .filter(|_| key.chars().all(|c| c.is_ascii_graphic()))
                    .ok_or_else(|| {
                        IndexError::Invalid("the Qdrant API key must be visible ASCII".into())
                    })?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        // reqwest's rustls backend needs a process-wide crypto provider; keep the one the
        // process installed, or install the same one the API does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .user_agent(concat!("tessera/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| {
                IndexError::Unavailable(format!("Qdrant HTTP client: {}", error_chain(&error)))
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                http,
                base: url.trim_end_matches('/').to_owned(),
                collection: collection.to_owned(),
                api_key,
                dimensions,
                bm25: bm25()?,
                late: OnceLock::new(),
            }),
        })
    }

    /// Checks the server's version, then creates or checks the collection and its indexes.
    async fn prepare(&self) -> Result<(), IndexError> {
        #[derive(Deserialize)]
        struct VersionInfo {
            version: String,
        }
        let answer = self.ok("GET /", self.send(Method::GET, "/", None).await?)?;
        let info: VersionInfo = serde_json::from_slice(&answer).map_err(|error| {
            IndexError::Unavailable(format!("GET /: not a Qdrant server? ({error})"))
        })?;
        responses::check_version(&info.version)?;

        let path = self.path("");
        let info = match self.collection_info(&path).await? {
            Some(info) => info,
            None => {
                let body = requests::create_collection(self.inner.dimensions);
                let call = format!("PUT {path}");
                let answer = self.send(Method::PUT, &path, Some(&body)).await?;
                // 409: another replica created it meanwhile; it is checked below like any.
                if answer.status != StatusCode::CONFLICT {
                    let _: bool = responses::result(&call, &self.ok(&call, answer)?)?;
                    tracing::info!(collection = %self.inner.collection, "Qdrant collection created");
                }
                self.collection_info(&path).await?.ok_or_else(|| {
                    IndexError::Unavailable(format!("{call}: the new collection is not there"))
                })?
            }
        };
        let layout = responses::layout(&info);
        let late = responses::check_layout(&layout, &self.inner.collection, self.inner.dimensions)?;
        if let LateLayout::Missing(reason) = &late {
            tracing::info!(collection = %self.inner.collection, "no late interaction: {reason}");
        }
        // Set once: `prepare` runs once, in `connect`, before the index is handed out.
        let _ = self.inner.late.set(late);
        for field in responses::missing_indexes(&layout) {
            self.change(
                Method::PUT,
                "/index?wait=true",
                &requests::keyword_index(field),
            )
            .await?;
        }
        Ok(())
    }

    /// The collection's `CollectionInfo`, or `None` when it does not exist.
    async fn collection_info(&self, path: &str) -> Result<Option<Value>, IndexError> {
        let call = format!("GET {path}");
        let answer = self.send(Method::GET, path, None).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        responses::result(&call, &self.ok(&call, answer)?).map(Some)
    }

    fn late(&self) -> &LateLayout {
        self.inner.late.get().unwrap_or(&LateLayout::Stored)
    }

    /// One query, its points as hits in the server's order.
    async fn run(&self, plan: &SearchPlan) -> Result<Vec<ScoredChunk>, IndexError> {
        let path = self.path("/points/query");
        let call = format!("POST {path}");
        let answer = self
            .send(Method::POST, &path, Some(&requests::query(plan)))
            .await?;
        responses::hits(responses::result(&call, &self.ok(&call, answer)?)?)
    }

    /// `/collections/{name}{rest}`.
    fn path(&self, rest: &str) -> String {
        format!("/collections/{}{rest}", self.inner.collection)
    }

    /// Sends a change to the collection and checks the `UpdateResult`.
    async fn change(&self, method: Method, rest: &str, body: &Value) -> Result<(), IndexError> {
        let path = self.path(rest);
        let call = format!("{method} {path}");
        let answer = self.send(method, &path, Some(body)).await?;
        let result: Value = responses::result(&call, &self.ok(&call, answer)?)?;
        responses::check_update(&call, &result)
    }

    /// A 2xx answer's body, or the error its status means.
    fn ok(&self, call: &str, answer: Answer) -> Result<Vec<u8>, IndexError> {
        if answer.status.is_success() {
            Ok(answer.body)
        } else {
            Err(responses::error(call, answer.status.as_u16(), &answer.body))
        }
    }

    /// One request; a failure to get an answer (refused, reset, timed out) is `Unavailable`.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, IndexError> {
        let call = format!("{method} {path}");
        let mut request = self
            .inner
            .http
            .request(method, format!("{}{path}", self.inner.base));
        if let Some(key) = &self.inner.api_key {
            request = request.header("api-key", key.clone());
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let transport = |error: reqwest::Error| {
            if error.is_timeout() {
                IndexError::Unavailable(format!("{call}: Qdrant did not answer in time"))
            } else {
                IndexError::Unavailable(format!("{call}: {}", error_chain(&error)))
            }
        };
        let response = request.send().await.map_err(transport)?;
        let status = response.status();
        let body = response.bytes().await.map_err(transport)?.to_vec();
        Ok(Answer { status, body })
    }
}

/// An error and its sources, without the URL (the call names the path already).
fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    if let Some(url) = error.url() {
        text = text.replace(&format!(" for url ({url})"), "");
        text = text.replace(&format!(" ({url})"), "");
    }
    text
}

#[async_trait]
impl VectorIndex for QdrantServerIndex {
    async fn upsert(&self, chunks: Vec<IndexedChunk>) -> Result<(), IndexError> {
        // Build every point first, so a bad chunk refuses the whole batch before any is sent.
        let points = chunks
            .iter()
            .map(|chunk| {
                requests::point(&self.inner.bm25, chunk, self.inner.dimensions, self.late())
            })
            .collect::<Result<Vec<_>, _>>()?;
        for batch in points.chunks(UPSERT_BATCH) {
            self.change(Method::PUT, "/points?wait=true", &requests::upsert(batch))
                .await?;
        }
        Ok(())
    }

    async fn set_datasets(
        &self,
        organization: &OrganizationId,
        file_id: &FileId,
        datasets: Vec<DatasetId>,
    ) -> Result<(), IndexError> {
        let body = requests::set_datasets(organization, file_id, &datasets);
        self.change(Method::POST, "/points/payload?wait=true", &body)
            .await
    }

    async fn delete_file(
        &self,
        organization: &OrganizationId,
        file_id: &FileId,
    ) -> Result<(), IndexError> {
        let body = requests::delete_file(organization, file_id);
        self.change(Method::POST, "/points/delete?wait=true", &body)
            .await
    }

    /// A search; with late interaction, the candidates without token vectors (which the
    /// server's MaxSim skips) follow the scored ones, from a second, plain query.
    async fn search(&self, query: VectorQuery) -> Result<Vec<ScoredChunk>, IndexError> {
        let Some(plan) = plan(&self.inner.bm25, query, self.inner.dimensions, self.late())? else {
            return Ok(Vec::new());
        };
        let hits = self.run(&plan).await?;
        match plan.fallback(hits.len()) {
            Some(fused) => Ok(with_unscored(hits, self.run(&fused).await?, plan.limit)),
            None => Ok(hits),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The HTTP side against recorded Qdrant answers replayed by a local socket: which
    //! method, path, header and body each call sends, and how answers and failures reach the
    //! caller. Whether a real server accepts these requests is the contract test's job
    //! (`tests/server_contract.rs`, with `QDRANT_URL`).

    use serde_json::json;
    use tessera_knowledge::{ChunkLocation, LateRerank, SearchMode, TokenVectors};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::fields::LATE_DIMENSIONS;
    use tokio::net::TcpListener;

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// `METHOD /path` of each recorded request, in order.
    fn method_and_path(requests: &[Recorded]) -> Vec<String> {
        requests
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect()
    }

    #[derive(Debug)]
    struct Recorded {
        method: String,
        path: String,
        api_key: Option<String>,
        body: Value,
    }

    /// Answers one connection after another with the next `(status, body)`, and returns
    /// the requests it got once all are answered.
    async fn replay(
        answers: Vec<(u16, Value)>,
    ) -> std::io::Result<(
        String,
        tokio::task::JoinHandle<std::io::Result<Vec<Recorded>>>,
    )> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let task = tokio::spawn(async move {
            let mut recorded = Vec::new();
            for (status, body) in answers {
                let (mut socket, _) = listener.accept().await?;
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    let read = socket.read(&mut chunk).await?;
                    if read == 0 {
                        return Err(std::io::ErrorKind::UnexpectedEof.into());
                    }
                    buffer.extend_from_slice(&chunk[..read]);
                    if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
                let mut lines = head.lines();
                let mut request_line = lines.next().unwrap_or("").split(' ');
                let method = request_line.next().unwrap_or("").to_owned();
                let path = request_line.next().unwrap_or("").to_owned();
                let header = |name: &str| {
                    head.lines().find_map(|line| {
                        let (key, value) = line.split_once(':')?;
                        key.eq_ignore_ascii_case(name)
                            .then(|| value.trim().to_owned())
                    })
                };
                let length: usize = header("content-length")
                    .and_then(|value| value.parse().ok())
                    .unwrap_or(0);
                while buffer.len() < head_end + length {
                    let read = socket.read(&mut chunk).await?;
                    if read == 0 {
                        break;
                    }
                    buffer.extend_from_slice(&chunk[..read]);
                }
                let sent = &buffer[head_end..];
                recorded.push(Recorded {
                    method,
                    path,
                    api_key: header("api-key"),
                    body: serde_json::from_slice(sent).unwrap_or(Value::Null),
                });
                let text = body.to_string();
                let answer = format!(
                    "HTTP/1.1 {status} Recorded\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
                socket.write_all(answer.as_bytes()).await?;
                socket.shutdown().await?;
            }
            Ok(recorded)
        });
        Ok((url, task))
    }

    fn completed() -> (u16, Value) {
        (
            200,
            json!({ "result": { "operation_id": 1, "status": "completed" },
                    "status": "ok", "time": 0.001 }),
        )
    }

    fn version(version: &str) -> (u16, Value) {
        (
            200,
            json!({ "title": "qdrant - vector search engine", "version": version,
                    "commit": "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678" }),
        )
    }

    /// A collection as made by this adapter: with the token vectors.
    fn collection(size: usize, indexed: &[&str]) -> (u16, Value) {
        let (status, mut body) = old_collection(size, indexed);
        body["result"]["config"]["params"]["vectors"]["late"] = json!({
            "size": 128, "distance": "Cosine", "hnsw_config": { "m": 0, "payload_m": 0 },
            "on_disk": true, "datatype": "float16",
            "multivector_config": { "comparator": "max_sim" }
        });
        (status, body)
    }

    /// A collection made before late interaction.
    fn old_collection(size: usize, indexed: &[&str]) -> (u16, Value) {
        let schema: serde_json::Map<String, Value> = indexed
            .iter()
            .map(|field| {
                (
                    (*field).to_owned(),
                    json!({ "data_type": "keyword", "points": 0 }),
                )
            })
            .collect();
        (
            200,
            json!({
                "result": {
                    "status": "green", "optimizer_status": "ok", "points_count": 0,
                    "segments_count": 2,
                    "config": {
                        "params": {
                            "vectors": { "dense": { "size": size, "distance": "Cosine" } },
                            "sparse_vectors": { "bm25": { "modifier": "idf" } },
                            "shard_number": 1, "replication_factor": 1,
                            "write_consistency_factor": 1, "on_disk_payload": true
                        },
                        "hnsw_config": { "m": 16, "ef_construct": 100, "full_scan_threshold": 10000 },
                        "optimizer_config": { "deleted_threshold": 0.2, "vacuum_min_vector_number": 1000,
                                              "default_segment_number": 0, "indexing_threshold": 20000,
                                              "flush_interval_sec": 5 }
                    },
                    "payload_schema": schema
                },
                "status": "ok",
                "time": 0.0001
            }),
        )
    }

    fn not_found() -> (u16, Value) {
        (
            404,
            json!({ "status": { "error": "Not found: Collection `chunks` doesn't exist!" },
                    "time": 0.00001 }),
        )
    }

    fn chunk() -> Result<IndexedChunk, Box<dyn std::error::Error>> {
        Ok(IndexedChunk {
            organization: "org_a".parse()?,
            file_id: "file_0123456789abcdef0123456789abcdef".parse()?,
            ordinal: 0,
            datasets: vec!["ds_0123456789abcdef0123456789abcdef".parse()?],
            text: "Walruses haul out on ice.".into(),
            location: ChunkLocation {
                page: None,
                section: None,
                char_start: 0,
                char_end: 25,
            },
            dense: vec![1.0, 0.0],
            late: None,
        })
    }

    #[tokio::test]
    async fn connect_creates_a_missing_collection_with_its_indexes() -> TestResult {
        let (url, server) = replay(vec![
            version("1.16.3"),
            not_found(),
            (200, json!({ "result": true, "status": "ok", "time": 0.2 })),
            collection(2, &[]),
            completed(),
            completed(),
            completed(),
        ])
        .await?;
        let index =
            QdrantServerIndex::connect(&format!("{url}/"), Some("s3cret"), "chunks", 2).await?;
        assert!(!format!("{index:?}").contains("s3cret"));
        let requests = server.await??;
        let calls = method_and_path(&requests);
        assert_eq!(
            calls,
            [
                "GET /",
                "GET /collections/chunks",
                "PUT /collections/chunks",
                "GET /collections/chunks",
                "PUT /collections/chunks/index?wait=true",
                "PUT /collections/chunks/index?wait=true",
                "PUT /collections/chunks/index?wait=true",
            ]
        );
        assert!(
            requests
                .iter()
                .all(|r| r.api_key.as_deref() == Some("s3cret"))
        );
        assert_eq!(requests[2].body, requests::create_collection(2));
        let indexed: Vec<_> = requests[4..].iter().map(|r| r.body.clone()).collect();
        assert_eq!(
            indexed,
            [
                requests::keyword_index("organization_id"),
                requests::keyword_index("dataset_ids"),
                requests::keyword_index("file_id"),
            ]
        );
        Ok(())
    }

    #[tokio::test]
    async fn an_existing_collection_is_checked_not_changed() -> TestResult {
        let all = ["organization_id", "dataset_ids", "file_id"];
        let (url, server) = replay(vec![version("1.17.0"), collection(2, &all)]).await?;
        QdrantServerIndex::connect(&url, None, "chunks", 2).await?;
        let requests = server.await??;
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].api_key, None);

        let (url, _server) = replay(vec![version("1.17.0"), collection(384, &all)]).await?;
        let error = QdrantServerIndex::connect(&url, None, "chunks", 2).await;
        assert!(
            matches!(&error, Err(IndexError::Invalid(message)) if message.contains("384")),
            "{error:?}"
        );

        let (url, _server) = replay(vec![version("1.15.2")]).await?;
        let error = QdrantServerIndex::connect(&url, None, "chunks", 2).await;
        assert!(
            matches!(&error, Err(IndexError::Invalid(message)) if message.contains("1.15.2")),
            "{error:?}"
        );
        Ok(())
    }

    #[tokio::test]
    async fn the_port_sends_its_bodies_to_the_collection() -> TestResult {
        let hit = json!({
            "result": { "points": [{
                "id": point_id_of(&chunk()?), "version": 2, "score": 0.5,
                "payload": crate::payload::ChunkPayload::of(&chunk()?).into_map()?
            }]},
            "status": "ok", "time": 0.002
        });
        let (url, server) = replay(vec![completed(), completed(), completed(), (200, hit)]).await?;
        let index = QdrantServerIndex::new(&url, None, "chunks", 2)?;
        let chunk = chunk()?;
        index.upsert(vec![chunk.clone()]).await?;
        index
            .set_datasets(&chunk.organization, &chunk.file_id, Vec::new())
            .await?;
        index
            .delete_file(&chunk.organization, &chunk.file_id)
            .await?;
        let query = VectorQuery {
            organization: chunk.organization.clone(),
            dataset: None,
            files: None,
            text: "walrus".into(),
            dense: vec![1.0, 0.0],
            limit: 3,
            mode: SearchMode::Hybrid,
            late: None,
        };
        let hits = index.search(query.clone()).await?;
        assert_eq!(hits.len(), 1);
        assert_eq!((hits[0].ordinal, hits[0].score), (0, 0.5));
        assert_eq!(hits[0].text, chunk.text);

        let requests = server.await??;
        let calls = method_and_path(&requests);
        assert_eq!(
            calls,
            [
                "PUT /collections/chunks/points?wait=true",
                "POST /collections/chunks/points/payload?wait=true",
                "POST /collections/chunks/points/delete?wait=true",
                "POST /collections/chunks/points/query",
            ]
        );
        let bm25 = bm25()?;
        assert_eq!(
            requests[0].body,
            requests::upsert(&[requests::point(&bm25, &chunk, 2, &LateLayout::Stored)?])
        );
        assert_eq!(
            requests[1].body,
            requests::set_datasets(&chunk.organization, &chunk.file_id, &[])
        );
        assert_eq!(
            requests[2].body,
            requests::delete_file(&chunk.organization, &chunk.file_id)
        );
        let plan = plan(&bm25, query, 2, &LateLayout::Stored)?.ok_or("no plan")?;
        assert_eq!(requests[3].body, requests::query(&plan));
        Ok(())
    }

    fn point_id_of(chunk: &IndexedChunk) -> String {
        crate::point_id::point_id(&chunk.organization, &chunk.file_id, chunk.ordinal).to_string()
    }

    #[tokio::test]
    async fn server_failures_map_to_the_ports_errors() -> TestResult {
        let (url, _server) = replay(vec![
            (
                400,
                json!({ "status": { "error": "Wrong input: Not existing vector name error: dense" },
                        "time": 0.0001 }),
            ),
            (
                503,
                json!({ "status": { "error": "Service unavailable" }, "time": 0.0 }),
            ),
            (
                200,
                json!({ "result": { "operation_id": 3, "status": "wait_timeout" },
                        "status": "ok", "time": 1.0 }),
            ),
        ])
        .await?;
        let index = QdrantServerIndex::new(&url, None, "chunks", 2)?;
        let chunk = chunk()?;
        let refused = index.upsert(vec![chunk.clone()]).await;
        assert!(
            matches!(&refused, Err(IndexError::Invalid(m)) if m.contains("Not existing vector name")),
            "{refused:?}"
        );
        let down = index.delete_file(&chunk.organization, &chunk.file_id).await;
        assert!(matches!(down, Err(IndexError::Unavailable(_))), "{down:?}");
        let slow = index.delete_file(&chunk.organization, &chunk.file_id).await;
        assert!(matches!(slow, Err(IndexError::Unavailable(_))), "{slow:?}");
        Ok(())
    }

    #[tokio::test]
    async fn an_unreachable_server_is_unavailable() -> TestResult {
        // A port nobody listens on any more.
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        drop(listener);
        let error = QdrantServerIndex::connect(&url, None, "chunks", 2).await;
        assert!(
            matches!(error, Err(IndexError::Unavailable(_))),
            "{error:?}"
        );
        Ok(())
    }

    #[tokio::test]
    async fn bad_settings_and_vectors_are_invalid_without_a_request() -> TestResult {
        for (url, key, collection, dimensions) in [
            ("localhost:6333", None, "chunks", 2),
            ("ftp://qdrant", None, "chunks", 2),
            ("http://qdrant:6333?x=1", None, "chunks", 2),
            ("http://qdrant:6333", None, "../admin", 2),
            ("http://qdrant:6333", None, "", 2),
            ("http://qdrant:6333", None, "chunks", 0),
            ("http://qdrant:6333", Some("bad key"), "chunks", 2),
        ] {
            assert!(
                matches!(
                    QdrantServerIndex::new(url, key, collection, dimensions),
                    Err(IndexError::Invalid(_))
                ),
                "{url} {key:?} {collection} {dimensions}"
            );
        }
        // Nothing listens here; these never reach the network.
        let index = QdrantServerIndex::new("http://127.0.0.1:9", None, "chunks", 2)?;
        let mut bad = chunk()?;
        bad.dense = vec![1.0];
        assert!(matches!(
            index.upsert(vec![chunk()?, bad]).await,
            Err(IndexError::Invalid(_))
        ));
        index.upsert(Vec::new()).await?;
        let query = VectorQuery {
            organization: "org_a".parse()?,
            dataset: None,
            files: Some(Vec::new()),
            text: "walrus".into(),
            dense: vec![1.0, 0.0],
            limit: 3,
            mode: SearchMode::Hybrid,
            late: None,
        };
        assert!(index.search(query.clone()).await?.is_empty());
        let mut wrong = query;
        wrong.dense = vec![1.0];
        assert!(matches!(
            index.search(wrong).await,
            Err(IndexError::Invalid(_))
        ));
        Ok(())
    }

    fn tokens(count: usize) -> Result<TokenVectors, Box<dyn std::error::Error>> {
        TokenVectors::new(LATE_DIMENSIONS, vec![0.125; LATE_DIMENSIONS * count])
            .ok_or_else(|| "no tokens".into())
    }

    fn answer_of(hits: &[(IndexedChunk, f32)]) -> Result<(u16, Value), Box<dyn std::error::Error>> {
        let points = hits
            .iter()
            .map(|(chunk, score)| {
                Ok(json!({
                    "id": point_id_of(chunk), "version": 2, "score": score,
                    "payload": crate::payload::ChunkPayload::of(chunk).into_map()?
                }))
            })
            .collect::<Result<Vec<_>, IndexError>>()?;
        Ok((
            200,
            json!({ "result": { "points": points }, "status": "ok", "time": 0.002 }),
        ))
    }

    /// A reranked search whose MaxSim query returns fewer hits than the limit asks for the
    /// plain fusion of the candidates too, and appends the ones it lacks; one that fills
    /// the limit sends one request.
    #[tokio::test]
    async fn a_late_search_completes_its_hits_from_the_fusion() -> TestResult {
        let first = chunk()?;
        let mut second = chunk()?;
        second.ordinal = 1;
        let mut third = chunk()?;
        third.ordinal = 2;
        let (url, server) = replay(vec![
            completed(),
            answer_of(&[(second.clone(), 3.5)])?,
            answer_of(&[
                (first.clone(), 0.5),
                (second.clone(), 0.33),
                (third.clone(), 0.25),
            ])?,
            answer_of(&[(third.clone(), 2.0), (first.clone(), 1.5)])?,
        ])
        .await?;
        let index = QdrantServerIndex::new(&url, None, "chunks", 2)?;
        let mut with_tokens = second.clone();
        with_tokens.late = Some(tokens(3)?);
        index.upsert(vec![with_tokens.clone()]).await?;
        let query = VectorQuery {
            organization: first.organization.clone(),
            dataset: None,
            files: None,
            text: "walrus".into(),
            dense: vec![1.0, 0.0],
            limit: 3,
            mode: SearchMode::Hybrid,
            late: Some(LateRerank {
                query: tokens(2)?,
                candidates: 10,
            }),
        };
        let hits = index.search(query.clone()).await?;
        let scored: Vec<(u32, f32)> = hits.iter().map(|hit| (hit.ordinal, hit.score)).collect();
        assert_eq!(scored, vec![(1, 3.5), (0, 0.5), (2, 0.25)]);
        let mut two = query.clone();
        two.limit = 2;
        let hits = index.search(two.clone()).await?;
        assert_eq!(
            hits.iter().map(|hit| hit.ordinal).collect::<Vec<_>>(),
            vec![2, 0]
        );

        let requests = server.await??;
        assert_eq!(
            method_and_path(&requests),
            [
                "PUT /collections/chunks/points?wait=true",
                "POST /collections/chunks/points/query",
                "POST /collections/chunks/points/query",
                "POST /collections/chunks/points/query",
            ]
        );
        let bm25 = bm25()?;
        let stored = &LateLayout::Stored;
        assert_eq!(
            requests[0].body,
            requests::upsert(&[requests::point(&bm25, &with_tokens, 2, stored)?])
        );
        let plan = plan(&bm25, query, 2, stored)?.ok_or("no plan")?;
        assert_eq!(requests[1].body, requests::query(&plan));
        let fallback = plan.fallback(1).ok_or("no fallback")?;
        assert_eq!(requests[2].body, requests::query(&fallback));
        let plan = super::plan(&bm25, two, 2, stored)?.ok_or("no plan")?;
        assert_eq!(requests[3].body, requests::query(&plan));
        Ok(())
    }

    /// A collection made before late interaction is used as ever; token vectors are refused
    /// with the reason and the fix, before any request.
    #[tokio::test]
    async fn a_collection_without_token_vectors_refuses_only_them() -> TestResult {
        let all = ["organization_id", "dataset_ids", "file_id"];
        let (url, server) = replay(vec![version("1.17.0"), old_collection(2, &all)]).await?;
        let index = QdrantServerIndex::connect(&url, None, "chunks", 2).await?;
        assert_eq!(server.await??.len(), 2);
        // Nothing listens any more: a request would be `Unavailable`.
        let mut late = chunk()?;
        late.late = Some(tokens(2)?);
        let refused = index.upsert(vec![chunk()?, late]).await;
        assert!(
            matches!(&refused, Err(IndexError::Invalid(m))
                if m.contains("no `late`") && m.contains("new, empty collection")),
            "{refused:?}"
        );
        let query = VectorQuery {
            organization: "org_a".parse()?,
            dataset: None,
            files: None,
            text: "walrus".into(),
            dense: vec![1.0, 0.0],
            limit: 3,
            mode: SearchMode::Hybrid,
            late: Some(LateRerank {
                query: tokens(2)?,
                candidates: 10,
            }),
        };
        let refused = index.search(query).await;
        assert!(
            matches!(&refused, Err(IndexError::Invalid(m)) if m.contains("no `late`")),
            "{refused:?}"
        );
        Ok(())
    }
}
