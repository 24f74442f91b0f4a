use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// Why a string is not a valid organization id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrganizationIdError {
    #[error("organization id must be 1 to 64 characters, got {0}")]
    Length(usize),
    #[error("organization id may contain only ASCII letters, digits and . _ : -")]
    Character,
}

/// The tenant every record belongs to: 1 to 64 characters of `[A-Za-z0-9._:-]`.
///
/// Ids Tessera creates are `org_<uuidv7 hex>`; ids taken from an external identity
/// provider's claim may be any string of the allowed form.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct OrganizationId(String);

impl OrganizationId {
    pub const MAX_LEN: usize = 64;

    pub fn generate() -> Self {
        Self(format!("org_{}", uuid::Uuid::now_v7().simple()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for OrganizationId {
    type Err = OrganizationIdError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let len = text.chars().count();
        if !(1..=Self::MAX_LEN).contains(&len) {
            return Err(OrganizationIdError::Length(len));
        }
        if !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
        {
            return Err(OrganizationIdError::Character);
        }
        Ok(Self(text.to_owned()))
    }
}

impl fmt::Display for OrganizationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for OrganizationId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_valid() {
        let id = OrganizationId::generate();
        assert_eq!(id.as_str().parse::<OrganizationId>(), Ok(id.clone()));
        assert!(id.as_str().len() <= OrganizationId::MAX_LEN);
    }

    #[test]
    fn bounds_and_characters_are_enforced() {
        assert_eq!(
            "".parse::<OrganizationId>(),
            Err(OrganizationIdError::Length(0))
        );
        assert!("a".repeat(64).parse::<OrganizationId>().is_ok());
        assert_eq!(
            "a".repeat(65).parse::<OrganizationId>(),
            Err(OrganizationIdError::Length(65))
        );
        assert_eq!(
            "acme corp".parse::<OrganizationId>(),
            Err(OrganizationIdError::Character)
        );
        assert_eq!(
            "ac/me".parse::<OrganizationId>(),
            Err(OrganizationIdError::Character)
        );
        assert!("tenant-42.eu:prod_x".parse::<OrganizationId>().is_ok());
    }
}
