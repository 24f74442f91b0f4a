//! The caller's own organization. Its body is `tessera_wire::v1::organization`.

use actix_web::{get, web};
use tessera_wire::v1::organization::OrganizationOut;

use crate::{access::Caller, problem::ApiError, state::AppState};

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
        .get(&caller.0.organization_id)
        .await
        .map_err(tessera_kernel::DomainError::from)?;
    Ok(web::Json(organization.into()))
}
