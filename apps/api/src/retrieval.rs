//! Retrieval-augmented generation, wired across domains: the chats domain's [`Retriever`]
//! reads a model's dataset links (models domain) and searches or reads those datasets
//! (knowledge domain); the models domain's [`DatasetDirectory`] answers from the knowledge
//! domain whether a dataset exists and how large it is.

use async_trait::async_trait;
use tessera_chats::{Retriever, Source, SourceLocation};
use tessera_kernel::{DomainError, OrganizationId};
use tessera_knowledge::{
    ChunkLocation, DatasetId, DatasetService, FileId, KnowledgeCaller, MAX_QUERY_CHARS, SearchMode,
    SearchRequest,
};
use tessera_models::{DatasetLinks, DatasetUsage, ModelService};
use tracing::Instrument;

/// Passages retrieved per question from a model's `rag` datasets, best first.
pub const RAG_PASSAGES: usize = 5;
/// The share of the model's context window retrieved `rag` passages may fill.
const RAG_SHARE_PERCENT: u64 = 20;

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
/// (as far as its budget allows), then the passages of the `rag` datasets that best match
/// the question.
pub struct DatasetRetriever {
    pub links: DatasetLinks,
    pub models: ModelService,
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

impl DatasetRetriever {
    /// The model's context window, when `model_id` is one of the organization's models.
    async fn context_window(&self, organization: &OrganizationId, model_id: &str) -> u32 {
        let Ok(id) = model_id.parse() else {
            return 0;
        };
        self.models
            .get(organization, &id)
            .await
            .ok()
            .and_then(|view| view.parent.map(|base| base.context_window))
            .unwrap_or(0)
    }
}

#[async_trait]
impl Retriever for DatasetRetriever {
    async fn retrieve(
        &self,
        organization: &OrganizationId,
        model_id: &str,
        query: &str,
    ) -> Result<Vec<Source>, DomainError> {
        let links = self.links.links_of(organization, model_id).await?;
        if links.is_empty() {
            return Ok(Vec::new());
        }
        let span = tracing::info_span!(
            "retrieval",
            "tessera.datasets" = i64::try_from(links.len()).unwrap_or(i64::MAX),
            "tessera.sources" = tracing::field::Empty,
        );
        let sources = self
            .passages_of(organization, model_id, query, links)
            .instrument(span.clone())
            .await?;
        span.record(
            "tessera.sources",
            i64::try_from(sources.len()).unwrap_or(i64::MAX),
        );
        Ok(sources)
    }
}

impl DatasetRetriever {
    /// The passages of the linked datasets: whole datasets first, then the search hits.
    async fn passages_of(
        &self,
        organization: &OrganizationId,
        model_id: &str,
        query: &str,
        links: Vec<tessera_models::DatasetLink>,
    ) -> Result<Vec<Source>, DomainError> {
        let window = self.context_window(organization, model_id).await;
        let mut sources = Vec::new();
        let mut context_budget = DatasetLinks::context_budget(window);
        let mut searched = Vec::new();
        for link in links {
            let Ok(dataset) = link.dataset_id.parse::<DatasetId>() else {
                continue;
            };
            if link.usage == DatasetUsage::Rag {
                searched.push(dataset);
                continue;
            }
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
        if searched.is_empty() {
            return Ok(sources);
        }
        let query: String = query.trim().chars().take(MAX_QUERY_CHARS).collect();
        if query.is_empty() {
            return Ok(sources);
        }
        let caller = KnowledgeCaller {
            organization: organization.clone(),
            subject: "retrieval".into(),
            // Retrieval only reads: nothing it does is audited.
            actor: tessera_kernel::Actor::System,
        };
        let mut hits = Vec::new();
        for dataset in searched {
            let request = SearchRequest {
                query: query.clone(),
                limit: RAG_PASSAGES,
                version: None,
                files: None,
                mode: SearchMode::Hybrid,
            };
            match self.datasets.search(&caller, &dataset, request).await {
                Ok(found) => hits.extend(found.into_iter().map(|hit| (dataset.clone(), hit))),
                // Deleted since it was linked (the link goes with it).
                Err(DomainError::NotFound { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        hits.sort_by(|a, b| b.1.chunk.score.total_cmp(&a.1.chunk.score));
        let mut rag_budget = u64::from(window) * RAG_SHARE_PERCENT / 100;
        for (dataset, hit) in hits.into_iter().take(RAG_PASSAGES) {
            // Four characters a token is close enough to keep within the budget.
            let tokens = (hit.chunk.text.len() / 4) as u64;
            if tokens > rag_budget {
                break;
            }
            rag_budget -= tokens;
            let chunk = hit.chunk;
            let file = (&chunk.file_id, hit.file_name.as_str());
            sources.push(source(
                &dataset,
                file,
                chunk.ordinal,
                &chunk.location,
                chunk.text,
                chunk.score,
            ));
        }
        Ok(sources)
    }
}
