//! Datasets linked to a user model: `rag` links are searched for every question, `context`
//! links are read whole into the prompt. A link names a dataset of the model's organization;
//! the knowledge domain answers whether it exists and how large it is, through
//! [`DatasetDirectory`].

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{Actor, AuditRecord, Clock, DomainError, FieldError, OrganizationId};

use crate::{ModelError, ModelId, ModelService};

/// How a model uses a linked dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DatasetUsage {
    /// The passages most relevant to the latest question are retrieved.
    Rag,
    /// The whole dataset is part of every prompt.
    Context,
}

impl DatasetUsage {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rag => "rag",
            Self::Context => "context",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "rag" => Some(Self::Rag),
            "context" => Some(Self::Context),
            _ => None,
        }
    }
}

/// One dataset linked to one user model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetLink {
    pub model_id: ModelId,
    pub dataset_id: String,
    pub usage: DatasetUsage,
    pub created_at: DateTime<Utc>,
}

/// Persistence of links. A link disappears with its model or its dataset.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait DatasetLinkStore: Send + Sync {
    /// Inserts the link, or changes the usage of the existing link of the same model and
    /// dataset; returns the stored link and whether it is new.
    /// `audit` is written in the same transaction.
    async fn upsert(
        &self,
        organization: &OrganizationId,
        link: &DatasetLink,
        audit: &AuditRecord,
    ) -> Result<(DatasetLink, bool), DomainError>;

    /// The model's links, oldest first.
    async fn links(
        &self,
        organization: &OrganizationId,
        model: &ModelId,
    ) -> Result<Vec<DatasetLink>, DomainError>;

    /// False (and no record written) when there was no such link.
    async fn delete(
        &self,
        organization: &OrganizationId,
        model: &ModelId,
        dataset_id: &str,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError>;
}

/// What the models domain asks of the datasets it links.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait DatasetDirectory: Send + Sync {
    /// Tokens of the dataset's processed content; `None` when the organization has no
    /// dataset with this id.
    async fn content_tokens(
        &self,
        organization: &OrganizationId,
        dataset_id: &str,
    ) -> Result<Option<u64>, DomainError>;
}

/// The share of a model's context window its `context` datasets may fill together; the rest
/// is left for the system prompt, retrieved passages, the conversation and the answer.
pub const CONTEXT_SHARE_PERCENT: u64 = 40;

/// Links between user models and datasets.
#[derive(Clone)]
pub struct DatasetLinks {
    models: ModelService,
    store: Arc<dyn DatasetLinkStore>,
    datasets: Arc<dyn DatasetDirectory>,
    clock: Arc<dyn Clock>,
}

impl DatasetLinks {
    pub fn new(
        models: ModelService,
        store: Arc<dyn DatasetLinkStore>,
        datasets: Arc<dyn DatasetDirectory>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            models,
            store,
            datasets,
            clock,
        }
    }

    /// The most tokens of `context` datasets a model of this base model reads.
    pub fn context_budget(context_window: u32) -> u64 {
        u64::from(context_window) * CONTEXT_SHARE_PERCENT / 100
    }

    /// Links the dataset (or changes how an existing link uses it). A `context` link is
    /// refused when the model's `context` datasets together would not fit its budget.
    pub async fn link(
        &self,
        organization: &OrganizationId,
        model: &ModelId,
        dataset_id: &str,
        usage: DatasetUsage,
        actor: &Actor,
    ) -> Result<(DatasetLink, bool), ModelError> {
        let found = self.models.get(organization, model).await?;
        let Some(tokens) = self
            .datasets
            .content_tokens(organization, dataset_id)
            .await?
        else {
            return Err(ModelError::Invalid(vec![FieldError::new(
                ["body".into(), "datasetId".into()],
                format!("dataset {dataset_id} was not found"),
                "not_found",
            )]));
        };
        if usage == DatasetUsage::Context {
            let window = found.parent.as_ref().map_or(0, |base| base.context_window);
            let budget = Self::context_budget(window);
            let mut total = tokens;
            for other in self.store.links(organization, model).await? {
                if other.usage == DatasetUsage::Context && other.dataset_id != dataset_id {
                    total += self
                        .datasets
                        .content_tokens(organization, &other.dataset_id)
                        .await?
                        .unwrap_or(0);
                }
            }
            if total > budget {
                return Err(ModelError::Invalid(vec![FieldError::new(
                    ["body".into(), "usageType".into()],
                    format!(
                        "the model's context datasets would hold {total} tokens; its context window ({window} tokens) leaves {budget} for them: link the dataset as `rag` instead"
                    ),
                    "context_too_large",
                )]));
            }
        }
        let link = DatasetLink {
            model_id: model.clone(),
            dataset_id: dataset_id.to_owned(),
            usage,
            created_at: self.clock.now(),
        };
        // The link is the resource: `<model id>/<dataset id>`.
        let audit = actor.record(
            organization,
            "model_dataset.link",
            "model_dataset",
            &format!("{model}/{dataset_id}"),
            link.created_at,
        );
        Ok(self.store.upsert(organization, &link, &audit).await?)
    }

    /// The model's links, oldest first.
    pub async fn list(
        &self,
        organization: &OrganizationId,
        model: &ModelId,
    ) -> Result<Vec<DatasetLink>, ModelError> {
        self.models.get(organization, model).await?;
        Ok(self.store.links(organization, model).await?)
    }

    /// The links a chat on this model uses; none for base models and unknown ids.
    pub async fn links_of(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Vec<DatasetLink>, DomainError> {
        let Ok(model) = model_id.parse::<ModelId>() else {
            return Ok(Vec::new());
        };
        self.store.links(organization, &model).await
    }

    pub async fn unlink(
        &self,
        organization: &OrganizationId,
        model: &ModelId,
        dataset_id: &str,
        actor: &Actor,
    ) -> Result<(), ModelError> {
        self.models.get(organization, model).await?;
        let audit = actor.record(
            organization,
            "model_dataset.unlink",
            "model_dataset",
            &format!("{model}/{dataset_id}"),
            self.clock.now(),
        );
        if self
            .store
            .delete(organization, model, dataset_id, &audit)
            .await?
        {
            Ok(())
        } else {
            Err(ModelError::Domain(DomainError::not_found(
                "dataset link",
                format!("{dataset_id} of {model}"),
            )))
        }
    }
}
