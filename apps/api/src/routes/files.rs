//! Files: multipart uploads checked while they stream into content-addressed storage,
//! processed in the background (extract, chunk, embed, index), listed, downloaded, deleted
//! (refused while a dataset holds them), and added to or removed from datasets. Its bodies
//! are `tessera_wire::v1::files`.

use actix_multipart::{Multipart, MultipartError};
use actix_web::{HttpRequest, HttpResponse, delete, get, http::header, post, web};
use futures_util::{StreamExt, TryStreamExt};
use tessera_kernel::{DomainError, FieldError, text};
use tessera_knowledge::{
    DatasetId, FileId, FilePurpose, FileStatus, FormatError, Upload, UploadError,
};
use tessera_wire::page::PageOf;
use tessera_wire::v1::files::{
    BulkDelete, BulkDeleteFailure, BulkDeleteOut, CreateAssociation, DatasetMembershipOut,
    FileBytes, FileOut, FilePage, ListFiles, UploadForm,
};

use crate::{
    caller::Caller,
    extract::{ValidJson, ValidQuery},
    problem::{ApiError, Problem, ValidationProblem},
    routes::artifacts::ARTIFACT_CSP,
    state::AppState,
};
use tessera_wire::parse::{page_limit, path_id};

pub(crate) fn file_id(text: &str) -> Result<FileId, DomainError> {
    path_id(text, "file")
}

pub(crate) fn upload_error(error: UploadError) -> ApiError {
    let field = |msg: String, kind: &str| {
        ApiError::validation(vec![FieldError::new(
            ["body".into(), "file".into()],
            msg,
            kind,
        )])
    };
    match error {
        UploadError::BadName => field(error.to_string(), "file_name"),
        UploadError::Empty => field(error.to_string(), "file_empty"),
        UploadError::Format(
            FormatError::UnsupportedExtension(_) | FormatError::MissingExtension,
        ) => ApiError::unsupported_media_type("unsupported_file_type", error.to_string()),
        UploadError::Format(FormatError::ContentMismatch(_)) => ApiError::unsupported_media_type(
            "content_mismatch",
            format!("{error}; the content must match the file name's extension"),
        ),
        UploadError::TooLarge { limit, .. } => {
            ApiError::payload_too_large("file_too_large", error.to_string())
                .with("limitBytes", limit)
        }
        UploadError::Interrupted(_) => {
            ApiError::bad_request("upload_interrupted", error.to_string())
        }
        UploadError::Storage(_) => {
            tracing::error!(%error, "upload not stored");
            ApiError::unavailable(
                "service_unavailable",
                "the file could not be stored; retry later",
            )
        }
        UploadError::Unavailable(_) => {
            tracing::error!(%error, "upload not admitted");
            ApiError::unavailable(
                "service_unavailable",
                "the file could not be stored; retry later",
            )
        }
    }
}

pub(crate) fn multipart_error(error: MultipartError) -> ApiError {
    match error {
        MultipartError::ContentTypeMissing
        | MultipartError::ContentTypeParse
        | MultipartError::ContentTypeIncompatible
        | MultipartError::BoundaryMissing => ApiError::unsupported_media_type(
            "unsupported_media_type",
            "send multipart/form-data with one part named `file`",
        ),
        other => ApiError::bad_request(
            "malformed_multipart",
            format!("the multipart body cannot be read: {other}"),
        ),
    }
}

/// The upload a form's `file` part brings: its file name (required, storable) and its
/// content as it streams in.
pub(crate) fn upload_of(
    field: actix_multipart::Field,
    purpose: Option<FilePurpose>,
) -> Result<Upload<'static>, ApiError> {
    let file_name = field
        .content_disposition()
        .and_then(|disposition| disposition.get_filename())
        .map(str::to_owned)
        .ok_or_else(|| {
            ApiError::validation(vec![FieldError::new(
                ["body".into(), "file".into()],
                "the `file` part needs a file name (Content-Disposition filename)",
                "file_name",
            )])
        })?;
    if !text::is_storable(&file_name) {
        return Err(ApiError::validation(vec![text::nul_error([
            "body".into(),
            "file".into(),
        ])]));
    }
    let content = field
        .map(|piece| {
            piece
                .map(|bytes| bytes.to_vec())
                .map_err(|error| UploadError::Interrupted(error.to_string()))
        })
        .boxed_local();
    Ok(Upload {
        file_name,
        purpose,
        content,
    })
}

/// Upload a file. Documents are processed in the background (`status: processing`, then
/// `ready` or `failed`; poll `GET /v1/files/{file_id}`); images are `ready` at once.
#[utoipa::path(
    tag = "Files",
    operation_id = "uploadFile",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Stored; processing has started", body = FileOut),
        (status = 400, description = "The upload was interrupted or the multipart body is malformed", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Larger than the format's limit", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Extension not accepted, content not matching it, or not multipart", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "No `file` part, no file name, or an empty file", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/files")]
pub async fn upload_file(
    caller: Caller,
    state: web::Data<AppState>,
    request: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let mut form = Multipart::new(request.headers(), payload);
    while let Some(field) = form.try_next().await.map_err(multipart_error)? {
        if field.name() != Some("file") {
            // Other parts are skipped (drained), not refused.
            continue;
        }
        let upload = upload_of(field, None)?;
        let file = state
            .knowledge
            .upload(&caller, upload)
            .await
            .map_err(upload_error)?;
        return Ok(HttpResponse::Created()
            .insert_header((header::LOCATION, format!("/v1/files/{}", file.id)))
            .json(FileOut::from(&file)));
    }
    Err(ApiError::validation(vec![FieldError::new(
        ["body".into(), "file".into()],
        "the form has no part named `file`",
        "missing",
    )]))
}

/// The organization's files, newest first.
#[utoipa::path(
    tag = "Files",
    operation_id = "listFiles",
    params(ListFiles),
    responses(
        (status = 200, description = "A page of files", body = FilePage),
        (status = 422, description = "Invalid status, limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/files")]
pub async fn list_files(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<ListFiles>,
) -> Result<web::Json<FilePage>, ApiError> {
    Ok(web::Json(list(&state, &caller, query).await?))
}

/// One page of the organization's files (also the MCP tool `list_files`).
pub(crate) async fn list(
    state: &AppState,
    caller: &Caller,
    query: ListFiles,
) -> Result<FilePage, ApiError> {
    let status = query
        .status
        .as_deref()
        .map(|text| {
            FileStatus::parse(text).ok_or_else(|| {
                ApiError::validation(vec![FieldError::new(
                    ["query".into(), "status".into()],
                    "must be `processing`, `ready` or `failed`",
                    "enum",
                )])
            })
        })
        .transpose()?;
    let page = state
        .knowledge
        .files
        .list(
            caller,
            status,
            page_limit(query.limit)?,
            query.cursor.as_deref(),
        )
        .await?;
    Ok(PageOf::of(page, |item| FileOut::from(&item)))
}

/// A file record with its processing status.
#[utoipa::path(
    tag = "Files",
    operation_id = "getFile",
    params(("file_id" = String, Path, description = "The file id")),
    responses(
        (status = 200, description = "The file", body = FileOut),
        (status = 404, description = "No such file in the organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/files/{file_id}")]
pub async fn get_file(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<FileOut>, ApiError> {
    let file = state.knowledge.files.get(&caller, &file_id(&path)?).await?;
    Ok(web::Json(FileOut::from(&file)))
}

/// Download a file's content, as uploaded, with its media type, as an attachment.
#[utoipa::path(
    tag = "Files",
    operation_id = "getFileContent",
    params(("file_id" = String, Path, description = "The file id")),
    responses(
        (status = 200, description = "The content, in the media type of its format", content(
            (FileBytes = "application/pdf"),
            (FileBytes = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
            (FileBytes = "text/plain"),
            (FileBytes = "text/csv"),
            (FileBytes = "application/json"),
            (FileBytes = "text/markdown"),
            (FileBytes = "image/png"),
            (FileBytes = "image/jpeg"),
            (FileBytes = "image/gif"),
            (FileBytes = "image/webp"),
        )),
        (status = 404, description = "No such file in the organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/files/{file_id}/content")]
pub async fn get_file_content(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    content_response(&state, &caller, &path).await
}

/// A file's content as an attachment in its format's media type (also `/openai/v1`'s).
pub(crate) async fn content_response(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<HttpResponse, ApiError> {
    let (file, content) = state.knowledge.files.content(caller, &file_id(id)?).await?;
    let body = content.map(|piece| {
        piece
            .map(web::Bytes::from)
            .map_err(|error| std::io::Error::other(error.to_string()))
    });
    Ok(HttpResponse::Ok()
        .content_type(file.format.media_type())
        .insert_header(header::ContentDisposition::attachment(file.name.clone()))
        .insert_header((header::CONTENT_LENGTH, file.size))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CONTENT_SECURITY_POLICY, ARTIFACT_CSP))
        .streaming(body))
}

/// Delete a file, its chunks and its index entries. Refused with 409 `file_in_use` while a
/// dataset (or a dataset snapshot) holds it; the problem names them.
#[utoipa::path(
    tag = "Files",
    operation_id = "deleteFile",
    params(("file_id" = String, Path, description = "The file id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such file in the organization", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Still in a dataset or snapshot", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/files/{file_id}")]
pub async fn delete_file(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .knowledge
        .files
        .delete(&caller, &file_id(&path)?)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Delete up to 100 files; each is deleted or refused on its own (unknown: 404, held by a
/// dataset: 409 `file_in_use`), as `DELETE /v1/files/{file_id}` would.
#[utoipa::path(
    tag = "Files",
    operation_id = "bulkDeleteFiles",
    request_body = BulkDelete,
    responses(
        (status = 200, description = "What was deleted and what was not", body = BulkDeleteOut),
        (status = 422, description = "No ids, or more than 100", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/files/bulk-delete")]
pub async fn bulk_delete_files(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<BulkDelete>,
) -> Result<web::Json<BulkDeleteOut>, ApiError> {
    let mut out = BulkDeleteOut {
        deleted: Vec::new(),
        failed: Vec::new(),
    };
    for text in body.file_ids {
        let result = match file_id(&text) {
            Ok(id) => state
                .knowledge
                .files
                .delete(&caller, &id)
                .await
                .map_err(ApiError::from),
            Err(error) => Err(ApiError::from(error)),
        };
        match result {
            Ok(()) => out.deleted.push(text),
            Err(error) => {
                let body = error.body();
                out.failed.push(BulkDeleteFailure {
                    file_id: text,
                    status: error.status().as_u16(),
                    code: error.code.to_owned(),
                    detail: body["detail"].as_str().unwrap_or_default().to_owned(),
                });
            }
        }
    }
    Ok(web::Json(out))
}

/// Add the file to a dataset, making it searchable there once it is `ready`. Adding it
/// again changes nothing (200 instead of 201).
#[utoipa::path(
    tag = "Files",
    operation_id = "createFileAssociation",
    params(("file_id" = String, Path, description = "The file id")),
    request_body = CreateAssociation,
    responses(
        (status = 201, description = "Added; the dataset's version was incremented", body = DatasetMembershipOut),
        (status = 200, description = "Already in the dataset", body = DatasetMembershipOut),
        (status = 404, description = "No such file or dataset in the organization", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request, or a dataset that expired (`expired`)", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/files/{file_id}/associations")]
pub async fn create_association(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<CreateAssociation>,
) -> Result<HttpResponse, ApiError> {
    let file = file_id(&path)?;
    let dataset: DatasetId = path_id(&body.dataset_id, "dataset")?;
    let (dataset, added) = state
        .knowledge
        .datasets
        .add_file(&caller, &dataset, &file)
        .await?;
    let out = DatasetMembershipOut {
        file_id: file.to_string(),
        dataset_id: dataset.id.to_string(),
        dataset_version: dataset.version,
    };
    Ok(if added {
        HttpResponse::Created()
            .insert_header((
                header::LOCATION,
                format!("/v1/files/{file}/associations/{}", dataset.id),
            ))
            .json(out)
    } else {
        HttpResponse::Ok().json(out)
    })
}

/// Remove the file from a dataset (the file stays).
#[utoipa::path(
    tag = "Files",
    operation_id = "deleteFileAssociation",
    params(
        ("file_id" = String, Path, description = "The file id"),
        ("dataset_id" = String, Path, description = "The dataset id")
    ),
    responses(
        (status = 204, description = "Removed; the dataset's version was incremented"),
        (status = 404, description = "No such dataset, or the file is not in it", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/files/{file_id}/associations/{dataset_id}")]
pub async fn delete_association(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (file, dataset) = path.into_inner();
    let file = file_id(&file)?;
    let dataset: DatasetId = path_id(&dataset, "dataset")?;
    state
        .knowledge
        .datasets
        .remove_file(&caller, &dataset, &file)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}
