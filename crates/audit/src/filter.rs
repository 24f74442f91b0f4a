//! Which events a listing returns: a time range and exact matches on actor, resource and
//! action, checked once here so the HTTP API and the admin CLI refuse the same things.

use chrono::{DateTime, Datelike, Utc};
use tessera_kernel::{ActorKind, FieldError, text};

/// The filters as asked for (query parameters, CLI options), not yet checked.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// Events at or after this instant.
    pub from: Option<DateTime<Utc>>,
    /// Events before this instant.
    pub to: Option<DateTime<Utc>>,
    /// `user`, `client`, `api_key`, `operator`, `system` or `anonymous`.
    pub actor_kind: Option<String>,
    pub actor_id: Option<String>,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    /// e.g. `particle.create`.
    pub action: Option<String>,
    /// The changes one request made.
    pub request_id: Option<String>,
}

/// Checked filters; every `Some` must match exactly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub actor_kind: Option<ActorKind>,
    pub actor_id: Option<String>,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    pub action: Option<String>,
    pub request_id: Option<String>,
}

/// The longest value a text filter may have (the longest any stored column holds).
const MAX_FILTER_CHARS: usize = 255;

fn invalid(field: &str, msg: impl Into<String>, kind: &str) -> FieldError {
    FieldError::new(["query".into(), field.into()], msg, kind)
}

fn text_filter(field: &str, value: Option<String>, errors: &mut Vec<FieldError>) -> Option<String> {
    let value = value?;
    if !text::is_storable(&value) {
        errors.push(text::nul_error(["query".into(), field.into()]));
    } else if value.is_empty() || value.chars().count() > MAX_FILTER_CHARS {
        errors.push(invalid(
            field,
            format!("must be 1 to {MAX_FILTER_CHARS} characters"),
            "value_error",
        ));
    }
    Some(value)
}

impl AuditQuery {
    /// The filter, or every reason the query is refused (located at `query.<field>`).
    pub fn check(self) -> Result<AuditFilter, Vec<FieldError>> {
        let mut errors = Vec::new();
        // Both databases store years 1 to 9999 (PostgreSQL refuses some others outright).
        for (field, at) in [("from", self.from), ("to", self.to)] {
            if at.is_some_and(|at| !(1..=9999).contains(&at.year())) {
                errors.push(invalid(
                    field,
                    "must lie in the years 1 to 9999",
                    "value_error",
                ));
            }
        }
        if let (Some(from), Some(to)) = (self.from, self.to)
            && from >= to
        {
            errors.push(invalid("to", "must be later than `from`", "value_error"));
        }
        let actor_kind = match self.actor_kind.as_deref() {
            None => None,
            Some(text) => {
                let kind = ActorKind::parse(text);
                if kind.is_none() {
                    let known: Vec<&str> = ActorKind::ALL.iter().map(|k| k.as_str()).collect();
                    errors.push(invalid(
                        "actorKind",
                        format!("must be one of {}", known.join(", ")),
                        "enum",
                    ));
                }
                kind
            }
        };
        let filter = AuditFilter {
            from: self.from,
            to: self.to,
            actor_kind,
            actor_id: text_filter("actorId", self.actor_id, &mut errors),
            resource_type: text_filter("resourceType", self.resource_type, &mut errors),
            resource_id: text_filter("resourceId", self.resource_id, &mut errors),
            action: text_filter("action", self.action, &mut errors),
            request_id: text_filter("requestId", self.request_id, &mut errors),
        };
        if errors.is_empty() {
            Ok(filter)
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn an_empty_query_matches_everything() {
        assert_eq!(AuditQuery::default().check(), Ok(AuditFilter::default()));
    }

    #[test]
    fn bad_filters_are_located() {
        let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let errors = AuditQuery {
            from: Some(at),
            to: Some(at),
            actor_kind: Some("root".into()),
            action: Some(String::new()),
            resource_id: Some("a\0b".into()),
            ..AuditQuery::default()
        }
        .check()
        .unwrap_err();
        let locs: Vec<String> = errors.iter().map(|e| format!("{:?}", e.loc)).collect();
        assert_eq!(errors.len(), 4, "{locs:?}");
        for field in ["to", "actorKind", "action", "resourceId"] {
            assert!(locs.iter().any(|l| l.contains(field)), "{field}: {locs:?}");
        }
    }

    #[test]
    fn actor_kinds_are_parsed() {
        let filter = AuditQuery {
            actor_kind: Some("api_key".into()),
            ..AuditQuery::default()
        }
        .check()
        .unwrap();
        assert_eq!(filter.actor_kind, Some(ActorKind::ApiKey));
    }
}
