//! `/openai/v1/files`: OpenAI's file API over the knowledge domain's files (the same
//! records as `/v1/files`, processed for search the same way). An upload names its
//! `purpose` (`assistants`, `user_data` or `batch`) before or after the content; a refused or missing
//! purpose stores nothing. A file a vector store (dataset) holds is not deleted (409).

use actix_multipart::Multipart;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, web};
use futures_util::TryStreamExt;
use tessera_kernel::FieldError;
use tessera_knowledge::{FilePurpose, StoredFile};
use tessera_wire::openai::{
    error::OpenAiError,
    files::{Deleted, ListFilesQuery, OpenAiFile, OpenAiList},
};
use tessera_wire::v1::files::FileBytes;

use crate::{
    caller::Caller,
    extract::ValidQuery,
    problem::ApiError,
    routes::files::{file_id, multipart_error, upload_error, upload_of},
    state::AppState,
};

/// The longest `purpose` part read.
const MAX_PURPOSE_BYTES: usize = 64;

fn field_error(field: &str, msg: impl Into<String>, kind: &str) -> ApiError {
    ApiError::validation(vec![FieldError::new(
        ["body".into(), field.into()],
        msg,
        kind,
    )])
}

/// A `purpose` part's text, parsed.
async fn read_purpose(field: actix_multipart::Field) -> Result<FilePurpose, ApiError> {
    let mut bytes = Vec::new();
    let mut field = field;
    while let Some(piece) = field.try_next().await.map_err(multipart_error)? {
        bytes.extend_from_slice(&piece);
        if bytes.len() > MAX_PURPOSE_BYTES {
            return Err(field_error(
                "purpose",
                "the purpose is too long",
                "string_length",
            ));
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    FilePurpose::parse(text.trim())
        .filter(|purpose| *purpose != FilePurpose::BatchOutput)
        .ok_or_else(|| {
            field_error(
                "purpose",
                format!(
                    "`{}` is not accepted: `assistants`, `user_data` or `batch`",
                    text.trim()
                ),
                "enum",
            )
        })
}

/// Upload a file for vector stores (`assistants`), model input (`user_data`) or a batch's
/// requests (`batch`, a `.jsonl` file, stored as it is). Documents for the first two are
/// processed in the background: `status` is `uploaded`, then `processed` or `error`.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCreateFile",
    request_body(content = tessera_wire::v1::files::UploadForm, content_type = "multipart/form-data", description = "A `file` part with a file name and a `purpose` part"),
    responses(
        (status = 200, description = "Stored; processing has started", body = OpenAiFile),
        (status = 400, description = "No `file` or `purpose`, an unaccepted purpose, a batch file not named `.jsonl`, an empty file, an interrupted upload, a file larger than its format's limit (`file_too_large`), an extension not accepted or content not matching it (`unsupported_file_type`, `content_mismatch`), or a body that is not multipart: OpenAI's statuses make each a 400", body = OpenAiError)
    )
)]
#[post("/openai/v1/files")]
pub async fn create_file(
    caller: Caller,
    state: web::Data<AppState>,
    request: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let mut form = Multipart::new(request.headers(), payload);
    let mut purpose: Option<Result<FilePurpose, ApiError>> = None;
    let mut stored: Option<StoredFile> = None;
    while let Some(field) = form.try_next().await.map_err(multipart_error)? {
        match field.name() {
            Some("purpose") if purpose.is_none() => purpose = Some(read_purpose(field).await),
            Some("file") if stored.is_none() => {
                // A purpose already refused stores nothing.
                if let Some(Err(error)) = purpose {
                    return Err(error);
                }
                let known = purpose
                    .as_ref()
                    .and_then(|read| read.as_ref().ok())
                    .copied();
                let upload = upload_of(field, known)?;
                stored = Some(
                    state
                        .knowledge
                        .upload(&caller, upload)
                        .await
                        .map_err(upload_error)?,
                );
            }
            // Other parts (and repeated ones) are drained, not refused.
            _ => continue,
        }
    }
    let Some(mut file) = stored else {
        return Err(field_error(
            "file",
            "the form has no part named `file`",
            "missing",
        ));
    };
    let purpose = match purpose {
        Some(Ok(purpose)) => purpose,
        refused => {
            // The purpose came after the content and is missing or refused: nothing stays.
            state.knowledge.files.delete(&caller, &file.id).await?;
            return Err(refused.and_then(Result::err).unwrap_or_else(|| {
                field_error("purpose", "the form has no part named `purpose`", "missing")
            }));
        }
    };
    if let Err(refused) = purpose.check_name(&file.name) {
        state.knowledge.files.delete(&caller, &file.id).await?;
        return Err(ApiError::validation(vec![refused]));
    }
    if file.purpose != Some(purpose) {
        state
            .knowledge
            .files
            .set_purpose(&caller, &file.id, purpose)
            .await?;
        file.purpose = Some(purpose);
    }
    Ok(HttpResponse::Ok().json(OpenAiFile::from(&file)))
}

/// The organization's files, newest first (those uploaded through `/v1/files` too).
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiListFiles",
    params(ListFilesQuery),
    responses(
        (status = 200, description = "A page of files", body = OpenAiList<OpenAiFile>),
        (status = 400, description = "Invalid limit, order, purpose or `after`", body = OpenAiError)
    )
)]
#[get("/openai/v1/files")]
pub async fn list_files(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<ListFilesQuery>,
) -> Result<web::Json<OpenAiList<OpenAiFile>>, ApiError> {
    let invalid = |error: FieldError| ApiError::validation(vec![error]);
    let page = query.paging().page().map_err(invalid)?;
    let purpose = query.purpose().map_err(invalid)?;
    let files = state
        .knowledge
        .files
        .list_after(&caller, None, purpose, page)
        .await?;
    Ok(web::Json(OpenAiList::of(
        files,
        |file| OpenAiFile::from(&file),
        |file| file.id.clone(),
    )))
}

/// A file.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiRetrieveFile",
    params(("file_id" = String, Path, description = "The file id")),
    responses(
        (status = 200, description = "The file", body = OpenAiFile),
        (status = 404, description = "No such file in the organization", body = OpenAiError)
    )
)]
#[get("/openai/v1/files/{file_id}")]
pub async fn retrieve_file(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<OpenAiFile>, ApiError> {
    let file = state.knowledge.files.get(&caller, &file_id(&path)?).await?;
    Ok(web::Json(OpenAiFile::from(&file)))
}

/// A file's content, as uploaded.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiRetrieveFileContent",
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
        (status = 404, description = "No such file in the organization", body = OpenAiError)
    )
)]
#[get("/openai/v1/files/{file_id}/content")]
pub async fn retrieve_file_content(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    crate::routes::files::content_response(&state, &caller, &path).await
}

/// Delete a file, its chunks and its index entries. Refused (409 `file_in_use`) while a
/// vector store or a dataset snapshot holds it: delete it from the vector store first.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiDeleteFile",
    params(("file_id" = String, Path, description = "The file id")),
    responses(
        (status = 200, description = "Deleted", body = Deleted),
        (status = 404, description = "No such file in the organization", body = OpenAiError),
        (status = 409, description = "Still in a vector store or a snapshot", body = OpenAiError)
    )
)]
#[delete("/openai/v1/files/{file_id}")]
pub async fn delete_file(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<Deleted>, ApiError> {
    let id = file_id(&path)?;
    state.knowledge.files.delete(&caller, &id).await?;
    Ok(web::Json(Deleted::of(id, "file")))
}
