use std::{fmt, str::FromStr};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_kernel::OrganizationId;

/// An organization's subscription plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    #[default]
    Free,
    Pro,
    Enterprise,
}

/// Why a plan name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown plan `{0}`; expected free, pro or enterprise")]
pub struct PlanError(pub String);

impl Plan {
    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Pro => "pro",
            Plan::Enterprise => "enterprise",
        }
    }

    /// Premium models are for paying plans only.
    pub fn includes_premium_models(self) -> bool {
        matches!(self, Plan::Pro | Plan::Enterprise)
    }
}

impl FromStr for Plan {
    type Err = PlanError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "free" => Ok(Plan::Free),
            "pro" => Ok(Plan::Pro),
            "enterprise" => Ok(Plan::Enterprise),
            other => Err(PlanError(other.to_owned())),
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an organization name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrganizationNameError {
    #[error("name must not be blank")]
    Blank,
    #[error("name must be at most {max} characters, got {0}", max = OrganizationName::MAX_LEN)]
    TooLong(usize),
}

/// A display name: 1 to 255 characters after trimming surrounding whitespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct OrganizationName(String);

impl OrganizationName {
    pub const MAX_LEN: usize = 255;

    pub fn parse(text: &str) -> Result<Self, OrganizationNameError> {
        let trimmed = text.trim();
        let len = trimmed.chars().count();
        if len == 0 {
            return Err(OrganizationNameError::Blank);
        }
        if len > Self::MAX_LEN {
            return Err(OrganizationNameError::TooLong(len));
        }
        Ok(Self(trimmed.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What is needed to create an organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOrganization {
    pub name: OrganizationName,
    pub plan: Plan,
}

/// A tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    pub id: OrganizationId,
    pub name: String,
    pub plan: Plan,
    /// Whether its uploaded images are read by OCR (where the service has OCR), so their
    /// text is chunked and searchable like a document's. Off until an administrator turns
    /// it on.
    pub image_ocr: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A change of an organization's settings: each `None` keeps its setting as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OrganizationChange {
    pub image_ocr: Option<bool>,
}

impl OrganizationChange {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.image_ocr.is_none()
    }

    /// `organization` with the change applied, stamped `updated_at`.
    pub fn apply(&self, organization: &Organization, updated_at: DateTime<Utc>) -> Organization {
        Organization {
            image_ocr: self.image_ocr.unwrap_or(organization.image_ocr),
            updated_at,
            ..organization.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(
            OrganizationName::parse("  Acme ").map(|n| n.as_str().to_owned()),
            Ok("Acme".to_owned())
        );
        assert_eq!(
            OrganizationName::parse("   "),
            Err(OrganizationNameError::Blank)
        );
        assert!(OrganizationName::parse(&"é".repeat(255)).is_ok());
        assert_eq!(
            OrganizationName::parse(&"x".repeat(256)),
            Err(OrganizationNameError::TooLong(256))
        );
    }

    #[test]
    fn plans_round_trip_and_gate_premium() {
        for plan in [Plan::Free, Plan::Pro, Plan::Enterprise] {
            assert_eq!(plan.as_str().parse::<Plan>(), Ok(plan));
        }
        assert!("gold".parse::<Plan>().is_err());
        assert!(!Plan::Free.includes_premium_models());
        assert!(Plan::Pro.includes_premium_models());
    }
}
