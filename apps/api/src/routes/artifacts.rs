//! Artifacts: rich content found in assistant answers (markdown documents, code, HTML
//! pages, SVG images, Mermaid diagrams), versioned per chat, listed and served for the
//! chats the caller sees. Content is served inert: HTML and SVG under a sandboxing
//! Content-Security-Policy, everything with `nosniff`. Its bodies are
//! `tessera_wire::v1::artifacts`.

use actix_web::{HttpResponse, get, http::header, web};
use tessera_chats::{Artifact, ArtifactId, ArtifactKind, ChatId};
use tessera_wire::page::PageOf;
use tessera_wire::v1::artifacts::{ArtifactOut, ArtifactPage, ListArtifacts, summary};

use crate::{
    caller::Caller,
    extract::ValidQuery,
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};
use tessera_wire::parse::{page_limit, path_id};

/// No scripts, no plugins, no requests anywhere but inline styles and embedded images,
/// and a unique origin (`sandbox`): an artifact cannot act on the service's origin.
pub const ARTIFACT_CSP: &str = "sandbox; default-src 'none'; style-src 'unsafe-inline'; \
    img-src data:; font-src data:; media-src data:; form-action 'none'; frame-ancestors 'none'";

/// Artifacts of the caller's chats (every chat of the organization with `chats:admin`),
/// newest first; of one chat with `chatId`.
#[utoipa::path(
    tag = "Artifacts",
    operation_id = "listArtifacts",
    params(ListArtifacts),
    responses(
        (status = 200, description = "A page of artifacts", body = ArtifactPage),
        (status = 404, description = "No such chat of the caller", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/artifacts")]
pub async fn list_artifacts(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<ListArtifacts>,
) -> Result<web::Json<ArtifactPage>, ApiError> {
    let chat_id = query
        .chat_id
        .as_deref()
        .map(|text| path_id::<ChatId>(text, "chat"))
        .transpose()?;
    let page = state
        .artifacts
        .list(
            &caller,
            chat_id,
            page_limit(query.limit)?,
            query.cursor.as_deref(),
        )
        .await?;
    Ok(web::Json(PageOf::of(page, |item| summary(&item))))
}

async fn artifact(state: &AppState, caller: &Caller, id: &str) -> Result<Artifact, ApiError> {
    let id: ArtifactId = path_id(id, "artifact")?;
    Ok(state.artifacts.get(caller, &id).await?)
}

/// An artifact with its content.
#[utoipa::path(
    tag = "Artifacts",
    operation_id = "getArtifact",
    params(("artifact_id" = String, Path, description = "The artifact id")),
    responses(
        (status = 200, description = "The artifact", body = ArtifactOut),
        (status = 404, description = "No such artifact of the caller", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/artifacts/{artifact_id}")]
pub async fn get_artifact(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<ArtifactOut>, ApiError> {
    let artifact = artifact(&state, &caller, &path).await?;
    Ok(web::Json(ArtifactOut {
        artifact: summary(&artifact),
        content: artifact.content,
    }))
}

/// The artifact's content with its media type (`text/html` for pages, `image/svg+xml`
/// for images, text types otherwise), safe to open in a browser: HTML and SVG are
/// sandboxed by `Content-Security-Policy` (no scripts, no outside requests).
#[utoipa::path(
    tag = "Artifacts",
    operation_id = "getArtifactContent",
    params(("artifact_id" = String, Path, description = "The artifact id")),
    responses(
        (status = 200, description = "The content", content(
            (String = "text/markdown"), (String = "text/plain"), (String = "text/html"),
            (String = "image/svg+xml"), (String = "text/vnd.mermaid")
        )),
        (status = 404, description = "No such artifact of the caller", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/artifacts/{artifact_id}/content")]
pub async fn get_artifact_content(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let artifact = artifact(&state, &caller, &path).await?;
    let extension = match artifact.kind {
        ArtifactKind::Markdown => "md",
        ArtifactKind::Html => "html",
        ArtifactKind::Svg => "svg",
        ArtifactKind::Mermaid => "mmd",
        ArtifactKind::Code => "txt",
    };
    Ok(HttpResponse::Ok()
        .content_type(artifact.kind.media_type())
        .insert_header((header::CONTENT_SECURITY_POLICY, ARTIFACT_CSP))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header(("Cross-Origin-Resource-Policy", "same-origin"))
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!(
                "inline; filename=\"{}-v{}.{extension}\"",
                artifact.identifier, artifact.version
            ),
        ))
        .body(artifact.content))
}
