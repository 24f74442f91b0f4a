//! OpenAI's file object and the query of `GET /openai/v1/files`, mapped from the knowledge
//! domain's stored files (the same records `/v1/files` serves), and the cursor list every
//! `/openai/v1` list of files and vector stores answers with.

use serde::{Deserialize, Serialize};
use tessera_kernel::{DomainError, FieldError, Limit, Page, PageRequest};
use tessera_knowledge::{FileId, FilePurpose, FileStatus, StoredFile};
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use super::unix;

/// A body's `file_ids`, parsed (`body.file_ids.<index>` in a refusal).
pub fn file_ids(texts: &[String]) -> Result<Vec<FileId>, DomainError> {
    (texts.iter().enumerate())
        .map(|(index, text)| {
            text.parse::<FileId>().map_err(|_| {
                DomainError::Validation(vec![FieldError::new(
                    ["body".into(), "file_ids".into(), index.into()],
                    "not a file id",
                    "value_error",
                )])
            })
        })
        .collect()
}

/// A file, as OpenAI describes one.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiFile {
    pub id: String,
    /// Always `file`.
    pub object: &'static str,
    /// Size in bytes.
    pub bytes: u64,
    /// Unix seconds.
    pub created_at: i64,
    pub filename: String,
    /// `assistants`, `user_data`, `batch` or `batch_output` (a batch's answers); files uploaded
    /// through `/v1/files` read as `assistants`.
    pub purpose: &'static str,
    /// `uploaded` while processing, `processed` when ready, `error` when processing failed.
    pub status: &'static str,
    /// Why processing failed.
    pub status_details: Option<String>,
    /// Files do not expire.
    pub expires_at: Option<i64>,
}

impl From<&StoredFile> for OpenAiFile {
    fn from(file: &StoredFile) -> Self {
        Self {
            id: file.id.to_string(),
            object: "file",
            bytes: file.size,
            created_at: unix(file.created_at),
            filename: file.name.clone(),
            purpose: file.purpose.unwrap_or(FilePurpose::Assistants).as_str(),
            status: match file.status {
                FileStatus::Processing => "uploaded",
                FileStatus::Ready => "processed",
                FileStatus::Failed => "error",
            },
            status_details: file.error.clone(),
            expires_at: None,
        }
    }
}

/// What `DELETE` answers on a file, a vector store or a vector store's file.
#[derive(Debug, Serialize, ToSchema)]
pub struct Deleted {
    pub id: String,
    /// `file`, `vector_store.deleted` or `vector_store.file.deleted`.
    pub object: &'static str,
    /// Always true.
    pub deleted: bool,
}

impl Deleted {
    pub fn of(id: impl ToString, object: &'static str) -> Self {
        Self {
            id: id.to_string(),
            object,
            deleted: true,
        }
    }
}

/// A list as OpenAI pages it: `after` the last id of one page gives the next.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiList<T> {
    /// Always `list`.
    pub object: &'static str,
    pub data: Vec<T>,
    pub first_id: Option<String>,
    pub last_id: Option<String>,
    pub has_more: bool,
}

impl<T> OpenAiList<T> {
    /// The list of a domain page, each item converted by `item`, whose id `id` reads.
    pub fn of<U>(page: Page<U>, item: impl FnMut(U) -> T, id: impl Fn(&T) -> String) -> Self {
        Self::new(
            page.items.into_iter().map(item).collect(),
            page.has_more,
            id,
        )
    }

    /// The list of `data`, whose items' ids `id` reads.
    pub fn new(data: Vec<T>, has_more: bool, id: impl Fn(&T) -> String) -> Self {
        Self {
            object: "list",
            first_id: data.first().map(&id),
            last_id: data.last().map(&id),
            has_more,
            data,
        }
    }
}

/// How an OpenAI list is paged: newest first, `after` an object's id.
#[derive(Debug, Clone, Default, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// How many, 1 to 100 (larger values are served 100 at a time), default 20.
    #[param(minimum = 1)]
    pub limit: Option<i64>,
    /// Only `desc` (newest first, the default).
    #[param(pattern = "^desc$")]
    pub order: Option<String>,
    /// The id of the object the page starts after (the previous page's `last_id`).
    pub after: Option<String>,
    /// Not supported: page forwards with `after`.
    pub before: Option<String>,
}

/// `GET /openai/v1/files`: a page, of one purpose.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListFilesQuery {
    /// How many, 1 to 100 (larger values are served 100 at a time), default 20.
    #[param(minimum = 1)]
    pub limit: Option<i64>,
    /// Only `desc` (newest first, the default).
    #[param(pattern = "^desc$")]
    pub order: Option<String>,
    /// The id of the file the page starts after (the previous page's `last_id`).
    pub after: Option<String>,
    /// Not supported: page forwards with `after`.
    pub before: Option<String>,
    /// `assistants`, `user_data`, `batch` or `batch_output`.
    pub purpose: Option<String>,
}

impl ListFilesQuery {
    pub fn paging(&self) -> ListQuery {
        ListQuery {
            limit: self.limit,
            order: self.order.clone(),
            after: self.after.clone(),
            before: self.before.clone(),
        }
    }

    /// The `purpose` filter.
    pub fn purpose(&self) -> Result<Option<FilePurpose>, FieldError> {
        self.purpose
            .as_deref()
            .map(|text| {
                FilePurpose::parse(text).ok_or_else(|| {
                    query_error(
                        "purpose",
                        "must be `assistants`, `user_data`, `batch` or `batch_output`",
                        "enum",
                    )
                })
            })
            .transpose()
    }
}

/// The query's field errors, named as `query.<field>`.
pub(crate) fn query_error(field: &str, msg: impl Into<String>, kind: &str) -> FieldError {
    FieldError::new(["query".into(), field.into()], msg, kind)
}

impl ListQuery {
    /// The page size: OpenAI allows more than Tessera's 100 a page, so larger sizes are
    /// served 100 at a time (with `has_more`) rather than refused.
    fn limit(&self) -> Result<Limit, FieldError> {
        match self.limit {
            None => Ok(Limit::DEFAULT),
            Some(limit) if limit > i64::from(Limit::MAX) => Ok(Limit::LARGEST),
            Some(limit) => {
                Limit::new(limit).map_err(|error| query_error("limit", error.to_string(), "range"))
            }
        }
    }

    /// Refuses what lists cannot do yet: ascending order and `before`.
    fn check_order(&self) -> Result<(), FieldError> {
        if self.order.as_deref().is_some_and(|order| order != "desc") {
            return Err(query_error(
                "order",
                "only `desc` (newest first) is supported",
                "enum",
            ));
        }
        if self.before.is_some() {
            return Err(query_error(
                "before",
                "not supported: page forwards with `after`",
                "unsupported",
            ));
        }
        Ok(())
    }

    /// The page asked for: its size and the id it starts after, once what lists cannot do
    /// is refused.
    pub fn page<K: std::str::FromStr>(&self) -> Result<PageRequest<K>, FieldError> {
        self.check_order()?;
        Ok(PageRequest {
            limit: self.limit()?,
            after: self.after()?,
        })
    }

    /// The `after` id, parsed as the listed objects' ids.
    fn after<K: std::str::FromStr>(&self) -> Result<Option<K>, FieldError> {
        self.after
            .as_deref()
            .map(|text| {
                text.parse()
                    .map_err(|_| query_error("after", "not an id of this list", "value_error"))
            })
            .transpose()
    }
}
