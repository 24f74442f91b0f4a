//! Retrieval-augmented generation as the chats domain decides it: the [`Retriever`] port
//! finds what a model's knowledge holds for a question, and [`select`] decides what of it
//! the model reads (the best passages, within their share of the context window).

use async_trait::async_trait;
use tessera_kernel::{DomainError, OrganizationId};

use crate::Source;

/// Passages a question is answered with at most, best first; also how many candidates a
/// retriever is asked for from each collection it searches.
pub const RAG_PASSAGES: usize = 5;
/// The share of the model's context window the passages found for a question may fill.
pub const RAG_SHARE_PERCENT: u64 = 20;
/// Characters per token when budgeting passages: close enough to stay within the share,
/// and the same for every tokenizer.
const CHARS_PER_TOKEN_ESTIMATE: usize = 4;

/// What a completion asks of a model's knowledge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrievalQuery {
    /// The model the completion runs on: its linked knowledge is searched.
    pub model_id: String,
    /// The question: the turn's last user message.
    pub question: String,
    /// The context window of the model that reads the result (whole documents must fit
    /// the share of it their links allow).
    pub context_window: u32,
    /// Candidates wanted from each collection searched (and the most the model reads).
    pub passages: usize,
    /// Datasets the request itself names to search (OpenAI's `file_search` tool), besides
    /// the model's linked knowledge; ids as the knowledge domain gives them.
    pub datasets: Vec<String>,
    /// When given, the searches of `datasets` find only these files (those a filter on
    /// their attributes picked).
    pub files: Option<Vec<String>>,
}

/// A search of datasets a request asks for by itself (OpenAI's `file_search` tool): run on
/// the turn's last question before the model answers, its passages read as the model's
/// own knowledge is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSearch {
    /// The datasets searched (the caller's: the request's handler checks them).
    pub datasets: Vec<String>,
    /// Passages the model reads at most, 1 to [`MAX_FILE_SEARCH_RESULTS`].
    pub max_results: usize,
    /// Only these files of the datasets, when given (the request's filter picked them).
    pub files: Option<Vec<String>>,
}

/// The most passages a request's own search may give the model.
pub const MAX_FILE_SEARCH_RESULTS: usize = 50;

/// What a model's knowledge gives a question.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retrieved {
    /// Documents the model reads whole with every question, in order (already within their
    /// own budget).
    pub whole: Vec<Source>,
    /// Passages matching the question, in any order: [`select`] ranks and cuts them.
    pub candidates: Vec<Source>,
}

/// Finds what the knowledge linked to a model holds for a question (RAG). The knowledge
/// domain implements it; a model without linked knowledge gets nothing.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Retriever: Send + Sync {
    async fn retrieve(
        &self,
        organization: &OrganizationId,
        query: &RetrievalQuery,
    ) -> Result<Retrieved, DomainError>;
}

/// Retrieval for deployments (and models) without knowledge.
pub struct NoRetrieval;

#[async_trait]
impl Retriever for NoRetrieval {
    async fn retrieve(
        &self,
        _: &OrganizationId,
        _: &RetrievalQuery,
    ) -> Result<Retrieved, DomainError> {
        Ok(Retrieved::default())
    }
}

/// The sources a model reads: every whole document, then the best candidates (at most
/// `passages`, [`RAG_PASSAGES`] unless the request says) while they fit
/// [`RAG_SHARE_PERCENT`] of `context_window`; the first that does not fit ends the list, so
/// a better passage is never skipped for a worse one.
pub fn select(retrieved: Retrieved, context_window: u32, passages: usize) -> Vec<Source> {
    let Retrieved {
        mut whole,
        mut candidates,
    } = retrieved;
    candidates.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut budget = u64::from(context_window) * RAG_SHARE_PERCENT / 100;
    for candidate in candidates.into_iter().take(passages) {
        let tokens = (candidate.text.len() / CHARS_PER_TOKEN_ESTIMATE) as u64;
        if tokens > budget {
            break;
        }
        budget -= tokens;
        whole.push(candidate);
    }
    whole
}

/// The system prompt with retrieved passages appended as numbered context.
pub fn with_sources(system: Option<String>, sources: &[Source]) -> Option<String> {
    if sources.is_empty() {
        return system;
    }
    let mut text = system.unwrap_or_default();
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str("Answer using the following context passages when they are relevant.\n");
    for (index, source) in sources.iter().enumerate() {
        let title = source.title.as_deref().unwrap_or(&source.file_id);
        text.push_str(&format!(
            "\n[{}] {}\n{}\n",
            index + 1,
            title,
            source.text.trim()
        ));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(id: &str, score: f32, chars: usize) -> Source {
        Source {
            id: id.into(),
            file_id: "file".into(),
            dataset_id: None,
            title: None,
            text: "x".repeat(chars),
            score,
            file_name: None,
            location: None,
        }
    }

    fn ids(sources: &[Source]) -> Vec<&str> {
        sources.iter().map(|s| s.id.as_str()).collect()
    }

    #[test]
    fn whole_documents_come_first_then_the_best_passages() {
        let retrieved = Retrieved {
            whole: vec![passage("whole", 1.0, 40)],
            candidates: (0..8)
                .map(|i| passage(&format!("p{i}"), i as f32 / 10.0, 40))
                .collect(),
        };
        let chosen = select(retrieved, 100_000, RAG_PASSAGES);
        assert_eq!(ids(&chosen), ["whole", "p7", "p6", "p5", "p4", "p3"]);
    }

    #[test]
    fn a_request_may_ask_for_more_or_fewer_passages() {
        let retrieved = || Retrieved {
            whole: Vec::new(),
            candidates: (0..12)
                .map(|i| passage(&format!("p{i}"), i as f32 / 10.0, 40))
                .collect(),
        };
        assert_eq!(select(retrieved(), 100_000, 8).len(), 8);
        assert_eq!(ids(&select(retrieved(), 100_000, 2)), ["p11", "p10"]);
    }

    #[test]
    fn passages_stop_at_their_share_of_the_context_window() {
        // 1000 tokens of window: 200 for passages, 100 tokens (400 characters) each.
        let retrieved = Retrieved {
            whole: Vec::new(),
            candidates: vec![
                passage("best", 0.9, 400),
                passage("second", 0.8, 400),
                passage("third", 0.7, 400),
            ],
        };
        assert_eq!(
            ids(&select(retrieved, 1000, RAG_PASSAGES)),
            ["best", "second"]
        );
    }

    #[test]
    fn a_better_passage_too_long_to_fit_ends_the_list() {
        let retrieved = Retrieved {
            whole: Vec::new(),
            candidates: vec![passage("long", 0.9, 4000), passage("short", 0.1, 4)],
        };
        assert!(select(retrieved, 1000, RAG_PASSAGES).is_empty());
    }
}
