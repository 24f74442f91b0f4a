//! The bodies of `/v1/organization`: the caller's organization (tenant) as answered, and the
//! change of its settings an administrator sends (`PATCH`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_organizations::{Organization, OrganizationChange};
use utoipa::ToSchema;
use validator::Validate;

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
    /// Whether uploaded images (PNG and JPEG; GIF and WebP where the server's OCR engine reads
    /// them) are read by OCR, so their text is chunked and found by dataset search like a
    /// document's. Off by default; without OCR on the server, images are never read.
    pub image_ocr: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Organization> for OrganizationOut {
    fn from(org: Organization) -> Self {
        Self {
            id: org.id.to_string(),
            name: org.name,
            plan: org.plan.to_string(),
            image_ocr: org.image_ocr,
            created_at: org.created_at,
            updated_at: org.updated_at,
        }
    }
}

/// Changes the organization's settings (`imageOcr` is also accepted as `image_ocr`).
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateOrganization {
    /// Read uploaded images by OCR from now on (`true`), or stop (`false`). Images uploaded
    /// before keep what they had.
    #[serde(alias = "image_ocr")]
    pub image_ocr: bool,
}

impl From<UpdateOrganization> for OrganizationChange {
    fn from(body: UpdateOrganization) -> Self {
        OrganizationChange {
            image_ocr: Some(body.image_ocr),
        }
    }
}
