//! Embeddings on request (OpenAI's `/embeddings`): the configured embedding model turns a
//! caller's texts into vectors, and every request leaves one usage record, attributed to
//! the caller like a completion's, counted with the model's own tokenizer when the embedder
//! exposes it (else with the fallback counter the service was given).

use std::sync::Arc;

use tessera_kernel::{Caller, Clock, DomainError, FieldError, LocSegment};
use tessera_prompts::TokenCounter;
use tessera_usage::{Tokens, UsageId, UsageRecord, UsageStore};

use crate::{EmbedError, Embedder};

/// The most texts one request may embed.
pub const MAX_EMBEDDING_INPUTS: usize = 2048;
/// The finish reason of an embedding's usage record.
pub const EMBEDDED: &str = "embedding";

/// What a request asks for.
#[derive(Debug, Clone)]
pub struct EmbeddingRequest {
    /// Must name the configured model.
    pub model: String,
    pub texts: Vec<String>,
    /// Only the model's own length.
    pub dimensions: Option<u32>,
}

/// The vectors, in the order of the texts, and the tokens read.
#[derive(Debug, Clone)]
pub struct Embeddings {
    pub model: String,
    pub vectors: Vec<Vec<f32>>,
    pub tokens: u64,
}

/// Why texts were not embedded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmbeddingError {
    #[error("the model `{0}` does not exist or does not make embeddings")]
    UnknownModel(String),
    #[error("invalid input")]
    Invalid(Vec<FieldError>),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Domain(#[from] DomainError),
}

impl From<EmbeddingError> for DomainError {
    fn from(error: EmbeddingError) -> Self {
        match error {
            EmbeddingError::UnknownModel(model) => DomainError::not_found("model", model),
            EmbeddingError::Invalid(errors) => DomainError::Validation(errors),
            EmbeddingError::Embed(EmbedError::Invalid(message)) => {
                DomainError::invalid(["body".into(), "input".into()], message, "value_error")
            }
            EmbeddingError::Embed(EmbedError::Unavailable(message)) => {
                DomainError::Unavailable { message }
            }
            EmbeddingError::Domain(error) => error,
        }
    }
}

/// Embeds texts for callers and records the usage.
#[derive(Clone)]
pub struct EmbeddingService {
    embedder: Arc<dyn Embedder>,
    usage: Arc<dyn UsageStore>,
    fallback: Arc<dyn TokenCounter>,
    /// Where the vectors come from (`local`, or the embedding server's provider name).
    provider: String,
    /// Credits per token (0 for the embedded model, as for the embedded chat model).
    credit_multiplier: u32,
    clock: Arc<dyn Clock>,
}

impl EmbeddingService {
    pub fn new(
        embedder: Arc<dyn Embedder>,
        usage: Arc<dyn UsageStore>,
        fallback: Arc<dyn TokenCounter>,
        provider: impl Into<String>,
        credit_multiplier: u32,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            embedder,
            usage,
            fallback,
            provider: provider.into(),
            credit_multiplier,
            clock,
        }
    }

    /// The model's name (what requests must name).
    pub fn model(&self) -> &str {
        self.embedder.model()
    }

    pub async fn embed(
        &self,
        caller: &Caller,
        request: EmbeddingRequest,
    ) -> Result<Embeddings, EmbeddingError> {
        if request.model != self.embedder.model() {
            return Err(EmbeddingError::UnknownModel(request.model));
        }
        let principal_kind = caller.metered_kind()?;
        let mut invalid = Vec::new();
        let input = |rest: &[LocSegment]| {
            let mut loc = vec![LocSegment::from("body"), LocSegment::from("input")];
            loc.extend_from_slice(rest);
            loc
        };
        if request.texts.is_empty() || request.texts.len() > MAX_EMBEDDING_INPUTS {
            invalid.push(FieldError::new(
                input(&[]),
                format!("give 1 to {MAX_EMBEDDING_INPUTS} texts"),
                "length",
            ));
        }
        for (index, text) in request.texts.iter().enumerate() {
            if text.is_empty() {
                invalid.push(FieldError::new(
                    input(&[index.into()]),
                    "must not be empty",
                    "too_short",
                ));
            }
        }
        let native = self.embedder.dimensions();
        if let Some(dimensions) = request.dimensions
            && usize::try_from(dimensions).ok() != Some(native)
        {
            invalid.push(FieldError::new(
                [LocSegment::from("body"), LocSegment::from("dimensions")],
                format!(
                    "{} makes {native}-dimensional vectors and cannot shorten them",
                    self.embedder.model()
                ),
                "unsupported",
            ));
        }
        if !invalid.is_empty() {
            return Err(EmbeddingError::Invalid(invalid));
        }
        let accepted_at = self.clock.now();
        let tokens: u64 = request
            .texts
            .iter()
            .map(|text| {
                u64::from(
                    self.embedder
                        .count_tokens(text)
                        .unwrap_or_else(|| self.fallback.count(text)),
                )
            })
            .sum();
        let vectors = self.embedder.embed(request.texts).await?;
        let at = self.clock.now();
        let id = UsageId::generate();
        let counted = Tokens {
            input: tokens,
            output: 0,
            reasoning: 0,
            cached_input: 0,
        };
        self.usage
            .record(&UsageRecord {
                organization_id: caller.organization().clone(),
                principal: caller.subject().to_owned(),
                principal_kind,
                // No chat: the record's own id stands in for the exchange.
                chat_id: String::new(),
                message_id: id.to_string(),
                id,
                model_id: self.embedder.model().to_owned(),
                parent_model_id: self.embedder.model().to_owned(),
                provider: self.provider.clone(),
                credits: counted.credits(self.credit_multiplier),
                tokens: counted,
                latency_ms: u64::try_from((at - accepted_at).num_milliseconds()).unwrap_or(0),
                finish_reason: EMBEDDED.to_owned(),
                created_at: at,
                cached: false,
            })
            .await?;
        Ok(Embeddings {
            model: self.embedder.model().to_owned(),
            vectors,
            tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use tessera_kernel::{ManualClock, OrganizationId, Principal, PrincipalKind, ScopeSet};
    use tessera_usage::memory::InMemoryUsageStore;

    use super::*;
    use crate::MockEmbedder;

    struct Chars;

    impl TokenCounter for Chars {
        fn encoding(&self) -> &str {
            "chars"
        }

        fn count(&self, text: &str) -> u32 {
            text.chars().count() as u32
        }
    }

    fn service(usage: Arc<InMemoryUsageStore>) -> EmbeddingService {
        let mut embedder = MockEmbedder::new();
        embedder.expect_model().return_const("mini".to_owned());
        embedder.expect_dimensions().return_const(3_usize);
        embedder
            .expect_count_tokens()
            .returning(|text| (text == "counted").then_some(7));
        embedder
            .expect_embed()
            .returning(|texts| Ok(texts.iter().map(|_| vec![1.0, 0.0, 0.0]).collect()));
        EmbeddingService::new(
            Arc::new(embedder),
            usage,
            Arc::new(Chars),
            "local",
            2,
            Arc::new(ManualClock::new(Utc::now())),
        )
    }

    fn caller() -> Caller {
        Caller::of(Principal {
            organization_id: OrganizationId::generate(),
            subject: "key_1".into(),
            kind: PrincipalKind::Client,
            scopes: ScopeSet::default(),
            origin: None,
        })
    }

    #[tokio::test]
    async fn embeddings_record_their_tokens_as_usage() {
        let usage = Arc::new(InMemoryUsageStore::new());
        let embedded = service(usage.clone())
            .embed(
                &caller(),
                EmbeddingRequest {
                    model: "mini".into(),
                    texts: vec!["counted".into(), "abc".into()],
                    dimensions: Some(3),
                },
            )
            .await
            .unwrap();
        assert_eq!(embedded.vectors.len(), 2);
        assert_eq!(
            embedded.tokens,
            7 + 3,
            "the model's count, else the fallback's"
        );
        let records = usage.all();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].tokens.input, 10);
        assert_eq!(records[0].credits, 20);
        assert_eq!(records[0].principal, "key_1");
        assert_eq!(records[0].finish_reason, EMBEDDED);
    }

    #[tokio::test]
    async fn unknown_models_empty_texts_and_other_lengths_are_refused() {
        let usage = Arc::new(InMemoryUsageStore::new());
        let service = service(usage.clone());
        let ask = |model: &str, texts: Vec<String>, dimensions| EmbeddingRequest {
            model: model.into(),
            texts,
            dimensions,
        };
        assert_eq!(
            service
                .embed(&caller(), ask("other", vec!["a".into()], None))
                .await
                .unwrap_err(),
            EmbeddingError::UnknownModel("other".into())
        );
        let Err(EmbeddingError::Invalid(errors)) = service
            .embed(&caller(), ask("mini", vec![String::new()], Some(8)))
            .await
        else {
            panic!()
        };
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(usage.all().is_empty(), "nothing embedded, nothing recorded");
    }
}
