//! The body of `/v1/organization`: the caller's organization (tenant) as answered.

use chrono::{DateTime, Utc};
use serde::Serialize;
use tessera_organizations::Organization;
use utoipa::ToSchema;

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
