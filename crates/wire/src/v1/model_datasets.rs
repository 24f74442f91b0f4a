//! The bodies of `/v1/models/{model_id}/datasets`: a dataset linked to a model, the model's
//! list of links, the link request and how the model uses a dataset (`rag` or `context`),
//! each mapped from the models domain's records.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_models::{DatasetLink, DatasetUsage};
use utoipa::ToSchema;
use validator::Validate;

use crate::itemized;

/// How the model uses the dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = DatasetUsageType)]
pub enum UsageTypeDto {
    /// The passages most relevant to the latest user message are retrieved (cited as sources).
    Rag,
    /// The whole dataset is part of every prompt; refused when it cannot fit the model's
    /// context window.
    Context,
}

impl From<UsageTypeDto> for DatasetUsage {
    fn from(usage: UsageTypeDto) -> Self {
        match usage {
            UsageTypeDto::Rag => DatasetUsage::Rag,
            UsageTypeDto::Context => DatasetUsage::Context,
        }
    }
}

impl From<DatasetUsage> for UsageTypeDto {
    fn from(usage: DatasetUsage) -> Self {
        match usage {
            DatasetUsage::Rag => UsageTypeDto::Rag,
            DatasetUsage::Context => UsageTypeDto::Context,
        }
    }
}

/// Link a dataset of the organization to the model.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateDatasetLink {
    #[schema(example = "dst_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub dataset_id: String,
    pub usage_type: UsageTypeDto,
}

/// A dataset linked to a model.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetLinkOut {
    pub model_id: String,
    pub dataset_id: String,
    pub usage_type: UsageTypeDto,
    pub created_at: DateTime<Utc>,
}

impl From<DatasetLink> for DatasetLinkOut {
    fn from(link: DatasetLink) -> Self {
        Self {
            model_id: link.model_id.to_string(),
            dataset_id: link.dataset_id,
            usage_type: link.usage.into(),
            created_at: link.created_at,
        }
    }
}

itemized!(DatasetLinkOut => DatasetLinkList, "The model's dataset links, oldest first.");
