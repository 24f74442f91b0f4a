//! The caller's own organization.

use actix_web::{get, web};
use chrono::{DateTime, Utc};
use serde::Serialize;
use tessera_organizations::Organization;
use utoipa::ToSchema;

use crate::{access::Caller, problem::ApiError, state::AppState};

/// An organization (tenant).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationOut {
    #[schema(example = "org_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub id: String,
    pub name: String,
    /// `free`, `pro` or `enterprise`.
    #[schema(example = "pro")]
    pub plan: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Organization> for OrganizationOut {
    fn from(org: Organization) -> Self {
        Self {
            id: org.id.to_string(),
            name: org.name,
            plan: org.plan.to_string(),
            created_at: org.created_at,
            updated_at: org.updated_at,
        }
    }
}

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
