//! OpenAI's Batch API over the batches domain: the create request with its checks, the
//! `batch` object built from a domain batch, and the list query.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_batches::{Batch, BatchEndpoint, BatchProblem, COMPLETION_WINDOW, NewBatch};
use tessera_kernel::{DomainError, FieldError, Metadata};
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use super::unix;

/// `POST /openai/v1/batches`.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBatch {
    /// A file uploaded with `purpose` `batch`: one request a line (`custom_id`, `method`
    /// `POST`, `url` the endpoint, `body`).
    #[validate(length(min = 1, max = 64))]
    #[schema(min_length = 1, max_length = 64)]
    pub input_file_id: String,
    /// `/v1/chat/completions`, `/v1/embeddings` or `/v1/responses`.
    pub endpoint: String,
    /// Only `24h`.
    pub completion_window: String,
    /// Up to 16 pairs; keys of at most 64 characters, values of at most 512.
    pub metadata: Option<BTreeMap<String, String>>,
    /// Not supported: output files are kept until deleted.
    pub output_expires_after: Option<Value>,
}

fn body_error(field: &str, msg: impl Into<String>, kind: &str) -> DomainError {
    DomainError::Validation(vec![FieldError::new(
        ["body".into(), field.into()],
        msg,
        kind,
    )])
}

impl CreateBatch {
    /// The batch to make, once what the door does not support is refused.
    pub fn into_new(self) -> Result<NewBatch, DomainError> {
        let endpoint = BatchEndpoint::parse(&self.endpoint).ok_or_else(|| {
            body_error(
                "endpoint",
                "must be `/v1/chat/completions`, `/v1/embeddings` or `/v1/responses`",
                "enum",
            )
        })?;
        if self.completion_window != COMPLETION_WINDOW {
            return Err(body_error(
                "completion_window",
                format!("must be `{COMPLETION_WINDOW}`"),
                "enum",
            ));
        }
        if self.output_expires_after.is_some() {
            return Err(body_error(
                "output_expires_after",
                "expiry of output files is not supported",
                "unsupported",
            ));
        }
        Ok(NewBatch {
            input_file_id: self.input_file_id,
            endpoint,
            metadata: Metadata::of_body(self.metadata)?.unwrap_or_default(),
        })
    }
}

/// How many of a batch's requests there are, answered and failed.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchRequestCounts {
    pub total: u32,
    pub completed: u32,
    pub failed: u32,
}

/// Why a batch's input was refused.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchError {
    pub code: String,
    pub message: String,
    pub param: Option<String>,
    /// The input line, from 1.
    pub line: Option<u32>,
}

/// The refusals of a failed batch.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchErrors {
    /// Always `list`.
    pub object: &'static str,
    pub data: Vec<BatchError>,
}

/// A batch as OpenAI shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiBatch {
    pub id: String,
    /// Always `batch`.
    pub object: &'static str,
    pub endpoint: &'static str,
    pub errors: Option<BatchErrors>,
    pub input_file_id: String,
    pub completion_window: String,
    /// `validating`, `failed`, `in_progress`, `finalizing`, `completed`, `expired`,
    /// `cancelling` or `cancelled`.
    pub status: &'static str,
    /// The answered requests (`/openai/v1/files/{id}/content`), once the batch ended.
    pub output_file_id: Option<String>,
    /// The failed requests, once the batch ended.
    pub error_file_id: Option<String>,
    pub created_at: i64,
    pub in_progress_at: Option<i64>,
    pub expires_at: i64,
    pub finalizing_at: Option<i64>,
    pub completed_at: Option<i64>,
    pub failed_at: Option<i64>,
    pub expired_at: Option<i64>,
    pub cancelling_at: Option<i64>,
    pub cancelled_at: Option<i64>,
    pub request_counts: BatchRequestCounts,
    pub metadata: BTreeMap<String, String>,
}

impl From<&BatchProblem> for BatchError {
    fn from(problem: &BatchProblem) -> Self {
        Self {
            code: problem.code.clone(),
            message: problem.message.clone(),
            param: problem.param.clone(),
            line: problem.line,
        }
    }
}

impl From<&Batch> for OpenAiBatch {
    fn from(batch: &Batch) -> Self {
        let at = |time: Option<chrono::DateTime<chrono::Utc>>| time.map(unix);
        Self {
            id: batch.id.to_string(),
            object: "batch",
            endpoint: batch.endpoint.as_str(),
            errors: (!batch.errors.is_empty()).then(|| BatchErrors {
                object: "list",
                data: batch.errors.iter().map(BatchError::from).collect(),
            }),
            input_file_id: batch.input_file_id.clone(),
            completion_window: batch.completion_window.clone(),
            status: batch.status.as_str(),
            output_file_id: batch.output_file_id.clone(),
            error_file_id: batch.error_file_id.clone(),
            created_at: unix(batch.created_at),
            in_progress_at: at(batch.in_progress_at),
            expires_at: unix(batch.expires_at),
            finalizing_at: at(batch.finalizing_at),
            completed_at: at(batch.completed_at),
            failed_at: at(batch.failed_at),
            expired_at: at(batch.expired_at),
            cancelling_at: at(batch.cancelling_at),
            cancelled_at: at(batch.cancelled_at),
            request_counts: BatchRequestCounts {
                total: batch.counts.total,
                completed: batch.counts.completed,
                failed: batch.counts.failed,
            },
            metadata: batch.metadata.pairs().clone(),
        }
    }
}

/// `GET /openai/v1/batches`: a page, newest first.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListBatchesQuery {
    /// How many, 1 to 100 (larger values are served 100 at a time), default 20.
    #[param(minimum = 1)]
    pub limit: Option<i64>,
    /// The id of the batch the page starts after (the previous page's `last_id`).
    pub after: Option<String>,
}

impl ListBatchesQuery {
    pub fn paging(&self) -> super::files::ListQuery {
        super::files::ListQuery {
            limit: self.limit,
            after: self.after.clone(),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(endpoint: &str, window: &str) -> CreateBatch {
        CreateBatch {
            input_file_id: "file_1".into(),
            endpoint: endpoint.into(),
            completion_window: window.into(),
            metadata: None,
            output_expires_after: None,
        }
    }

    fn loc(error: DomainError) -> String {
        match error {
            DomainError::Validation(fields) => fields[0]
                .to_string()
                .split(':')
                .next()
                .unwrap_or_default()
                .to_owned(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_endpoint_and_window_are_checked() {
        let new = request("/v1/embeddings", "24h").into_new().unwrap();
        assert_eq!(new.endpoint, BatchEndpoint::Embeddings);
        assert_eq!(
            loc(request("/v1/completions", "24h").into_new().unwrap_err()),
            "body.endpoint"
        );
        assert_eq!(
            loc(request("/v1/embeddings", "1h").into_new().unwrap_err()),
            "body.completion_window"
        );
        let mut expiring = request("/v1/embeddings", "24h");
        expiring.output_expires_after = Some(serde_json::json!({"anchor": "created_at"}));
        assert_eq!(
            loc(expiring.into_new().unwrap_err()),
            "body.output_expires_after"
        );
    }
}
