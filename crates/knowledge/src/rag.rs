//! Knowledge for the other domains (the `rag` feature): the chats domain's [`Retriever`]
//! reads a model's dataset links (models domain) and searches or reads those datasets, and
//! searches the datasets a request names (OpenAI's `file_search`) beside them; the
//! models domain's [`DatasetDirectory`](tessera_models::DatasetDirectory) answers whether a
//! dataset exists and how large it is. A service that embeds chats with retrieval-augmented
//! generation takes these instead of writing them again.

use async_trait::async_trait;
use tessera_chats::{RetrievalQuery, Retrieved, Retriever, Source, SourceLocation};
use tessera_kernel::{Caller, DomainError, OrganizationId};

use crate::{
    ChunkLocation, DatasetId, DatasetService, FileId, MAX_QUERY_CHARS, SearchMode, SearchRequest,
    is_expired_refusal,
};
use tessera_models::{DatasetLinks, DatasetUsage};
use tracing::Instrument;

/// The knowledge domain, as the models domain sees datasets.
pub struct KnowledgeDirectory(pub DatasetService);

#[async_trait]
impl tessera_models::DatasetDirectory for KnowledgeDirectory {
    async fn content_tokens(
        &self,
        organization: &OrganizationId,
        dataset_id: &str,
    ) -> Result<Option<u64>, DomainError> {
        let Ok(id) = dataset_id.parse::<DatasetId>() else {
            return Ok(None);
        };
        self.0.content_tokens(organization, &id).await
    }
}

/// Sources for chats on user models with linked datasets: every `context` dataset in full
/// (as far as its share of the context window allows), and the passages of each `rag`
/// dataset, and of each dataset the request names, that best match the question (the
/// chats domain ranks and cuts them).
pub struct DatasetRetriever {
    pub links: DatasetLinks,
    pub datasets: DatasetService,
}

/// A passage as a chat cites it: the file's name and where in it, e.g. `policy.pdf, page 2`.
fn source(
    dataset: &DatasetId,
    (file_id, file_name): (&FileId, &str),
    ordinal: u32,
    location: &ChunkLocation,
    text: String,
    score: f32,
) -> Source {
    let place = match (location.page, location.section.as_deref()) {
        (Some(page), _) => format!(", page {page}"),
        (None, Some(section)) if !section.is_empty() => format!(", {section}"),
        _ => String::new(),
    };
    Source {
        id: format!("{file_id}#{ordinal}"),
        file_id: file_id.to_string(),
        dataset_id: Some(dataset.to_string()),
        title: Some(format!("{file_name}{place}")),
        text,
        score,
        file_name: Some(file_name.to_owned()),
        location: Some(SourceLocation {
            page: location.page,
            section: location.section.clone(),
            char_start: location.char_start,
            char_end: location.char_end,
        }),
    }
}

#[async_trait]
impl Retriever for DatasetRetriever {
    async fn retrieve(
        &self,
        organization: &OrganizationId,
        query: &RetrievalQuery,
    ) -> Result<Retrieved, DomainError> {
        let links = self.links.links_of(organization, &query.model_id).await?;
        let mut read_whole: Vec<DatasetId> = Vec::new();
        let mut searched: Vec<(DatasetId, Option<Vec<FileId>>)> = Vec::new();
        // The files a request's filter picked restrict the datasets it names (an id that
        // names no file finds nothing).
        let only = query.files.as_ref().map(|files| {
            (files.iter())
                .filter_map(|file| file.parse::<FileId>().ok())
                .collect::<Vec<_>>()
        });
        let named = (query.datasets.iter()).map(|id| (id, DatasetUsage::Rag, only.clone()));
        let linked = (links.iter()).map(|link| (&link.dataset_id, link.usage, None));
        // Named first: a dataset the request names that the model links too is used once,
        // as the request asks.
        for (id, usage, files) in named.chain(linked) {
            let Ok(dataset) = id.parse::<DatasetId>() else {
                continue;
            };
            if read_whole.contains(&dataset) || searched.iter().any(|(d, _)| d == &dataset) {
                continue;
            }
            match usage {
                DatasetUsage::Rag => searched.push((dataset, files)),
                DatasetUsage::Context => read_whole.push(dataset),
            }
        }
        if read_whole.is_empty() && searched.is_empty() {
            return Ok(Retrieved::default());
        }
        let span = tracing::info_span!(
            "retrieval",
            "tessera.datasets" =
                i64::try_from(read_whole.len() + searched.len()).unwrap_or(i64::MAX),
            "tessera.sources" = tracing::field::Empty,
        );
        let retrieved = self
            .passages_of(organization, query, read_whole, searched)
            .instrument(span.clone())
            .await?;
        let found = retrieved.whole.len() + retrieved.candidates.len();
        span.record("tessera.sources", i64::try_from(found).unwrap_or(i64::MAX));
        Ok(retrieved)
    }
}

impl DatasetRetriever {
    /// The datasets' passages: those read whole (`context` links), and the search hits of
    /// the `searched` ones (within their files, when restricted).
    async fn passages_of(
        &self,
        organization: &OrganizationId,
        query: &RetrievalQuery,
        read_whole: Vec<DatasetId>,
        searched: Vec<(DatasetId, Option<Vec<FileId>>)>,
    ) -> Result<Retrieved, DomainError> {
        let mut sources = Vec::new();
        let mut context_budget = DatasetLinks::context_budget(query.context_window);
        for dataset in read_whole {
            // Datasets grow after they are linked: what no longer fits is left out.
            let Some(content) = self
                .datasets
                .content(organization, &dataset, context_budget)
                .await?
            else {
                continue;
            };
            context_budget -= content.tokens;
            sources.extend(content.passages.into_iter().map(|passage| {
                let file = (&passage.file.id, passage.file.name.as_str());
                let chunk = passage.chunk;
                source(
                    &dataset,
                    file,
                    chunk.ordinal,
                    &chunk.location,
                    chunk.text,
                    1.0,
                )
            }));
        }
        let whole = |whole| Retrieved {
            whole,
            candidates: Vec::new(),
        };
        if searched.is_empty() {
            return Ok(whole(sources));
        }
        let question: String = query
            .question
            .trim()
            .chars()
            .take(MAX_QUERY_CHARS)
            .collect();
        if question.is_empty() {
            return Ok(whole(sources));
        }
        // Retrieval only reads: nothing it does is audited.
        let caller = Caller::system(organization.clone());
        let mut candidates = Vec::new();
        for (dataset, files) in searched {
            let request = SearchRequest {
                query: question.clone(),
                limit: query.passages,
                version: None,
                files,
                mode: SearchMode::Hybrid,
                // Reranked when the service has a cross-encoder, and reordered by late
                // interaction when the dataset says so.
                rerank: None,
                late_interaction: None,
            };
            match self.datasets.search(&caller, &dataset, request).await {
                Ok(found) => candidates.extend(found.into_iter().map(|hit| {
                    let chunk = hit.chunk;
                    let file = (&chunk.file_id, hit.file_name.as_str());
                    source(
                        &dataset,
                        file,
                        chunk.ordinal,
                        &chunk.location,
                        chunk.text,
                        // The cross-encoder's relevance, when reranked, compares passages
                        // across datasets; fused scores only rank within one search.
                        hit.relevance.unwrap_or(chunk.score),
                    )
                })),
                // Deleted since it was linked (the link goes with it).
                Err(DomainError::NotFound { .. }) => {}
                // Expired: refused for use, so a model linking it answers without it (a
                // request naming it was refused before it began).
                Err(error) if is_expired_refusal(&error) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(Retrieved {
            whole: sources,
            candidates,
        })
    }
}
