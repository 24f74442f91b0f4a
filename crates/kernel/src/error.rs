use std::fmt;

/// One step of the path to an invalid value: a field name or an array index.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum LocSegment {
    Field(String),
    Index(usize),
}

impl From<&str> for LocSegment {
    fn from(field: &str) -> Self {
        Self::Field(field.to_owned())
    }
}

impl From<String> for LocSegment {
    fn from(field: String) -> Self {
        Self::Field(field)
    }
}

impl From<usize> for LocSegment {
    fn from(index: usize) -> Self {
        Self::Index(index)
    }
}

/// Where an invalid value sits in a request, e.g. `["body", "particles", 0, "order"]`.
pub type Loc = Vec<LocSegment>;

/// One invalid value: where it is, what is wrong, and a stable machine-readable type.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldError {
    pub loc: Loc,
    pub msg: String,
    #[serde(rename = "type")]
    pub kind: String,
}

impl FieldError {
    pub fn new(
        loc: impl IntoIterator<Item = LocSegment>,
        msg: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Self {
            loc: loc.into_iter().collect(),
            msg: msg.into(),
            kind: kind.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path: Vec<String> = self
            .loc
            .iter()
            .map(|segment| match segment {
                LocSegment::Field(name) => name.clone(),
                LocSegment::Index(index) => index.to_string(),
            })
            .collect();
        write!(f, "{}: {}", path.join("."), self.msg)
    }
}

/// The error kinds every Tessera crate maps its own errors into. The HTTP layer turns each
/// kind into one status and problem type in one place; domain crates never see HTTP.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    /// The record does not exist, or belongs to another organization (never revealed).
    #[error("{resource} {id} was not found")]
    NotFound { resource: &'static str, id: String },
    /// The request conflicts with the current state (e.g. a record still in use).
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// The record existed but is retired for good (e.g. a model past its end of life).
    #[error("{message}")]
    Gone { code: &'static str, message: String },
    /// The input is invalid; each entry says where and why.
    #[error("invalid input: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Validation(Vec<FieldError>),
    /// The caller could not be authenticated (missing, invalid, expired or revoked credentials).
    #[error("{message}")]
    Unauthenticated { code: &'static str, message: String },
    /// The principal is authenticated but not allowed to do this.
    #[error("{message}")]
    Forbidden { code: &'static str, message: String },
    /// A dependency (database, provider, vector store) cannot be reached right now.
    #[error("{message}")]
    Unavailable { message: String },
    /// A bug or an unexpected state; the message is logged, not shown to clients.
    #[error("{message}")]
    Internal { message: String },
}

impl DomainError {
    pub fn not_found(resource: &'static str, id: impl fmt::Display) -> Self {
        Self::NotFound {
            resource,
            id: id.to_string(),
        }
    }

    pub fn invalid(
        loc: impl IntoIterator<Item = LocSegment>,
        msg: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Self::Validation(vec![FieldError::new(loc, msg, kind)])
    }

    pub fn internal(message: impl fmt::Display) -> Self {
        Self::Internal {
            message: message.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_error_names_every_location() {
        let error = DomainError::Validation(vec![
            FieldError::new(
                ["body".into(), "name".into()],
                "too long",
                "string_too_long",
            ),
            FieldError::new(
                ["body".into(), "items".into(), 2.into()],
                "required",
                "missing",
            ),
        ]);
        assert_eq!(
            error.to_string(),
            "invalid input: body.name: too long; body.items.2: required"
        );
    }

    #[test]
    fn loc_serializes_names_and_indexes() {
        let error = FieldError::new(["query".into(), 0.into()], "bad", "value_error");
        let json = serde_json::to_value(&error).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"loc": ["query", 0], "msg": "bad", "type": "value_error"})
        );
    }
}
