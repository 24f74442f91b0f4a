//! The caller's own organization: read it, and (with `org:admin`) change its settings. Its
//! bodies are `tessera_wire::v1::organization`.

use actix_web::{get, patch, web};
use tessera_kernel::DomainError;
use tessera_wire::v1::organization::{OrganizationOut, UpdateOrganization};

use crate::{
    caller::Caller,
    extract::ValidJson,
    problem::{ApiError, ValidationProblem},
    state::AppState,
};

/// The organization the token acts for.
#[utoipa::path(
    tag = "Organization",
    operation_id = "getOrganization",
    responses(
        (status = 200, description = "The caller's organization", body = OrganizationOut),
        (status = 401, description = "Missing, invalid or expired token", body = crate::problem::Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/organization")]
pub async fn get_organization(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<web::Json<OrganizationOut>, ApiError> {
    let organization = state
        .organizations
        .get(caller.organization())
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(organization.into()))
}

/// Change the organization's settings: `imageOcr` turns OCR of uploaded images on or off
/// for the images uploaded from now on. Audited as `organization.update`.
#[utoipa::path(
    tag = "Organization",
    operation_id = "updateOrganization",
    request_body = UpdateOrganization,
    responses(
        (status = 200, description = "The caller's organization, changed", body = OrganizationOut),
        (status = 422, description = "No `imageOcr`, not a boolean, or an unknown field", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[patch("/v1/organization")]
pub async fn update_organization(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<UpdateOrganization>,
) -> Result<web::Json<OrganizationOut>, ApiError> {
    let organization = state
        .organizations
        .update(caller.organization(), body.into(), caller.actor())
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(organization.into()))
}
