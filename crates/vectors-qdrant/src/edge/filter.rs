//! The shared scopes ([`crate::scope`]) as qdrant-edge filters, evaluated by the engine.

use qdrant_edge::{Condition, FieldCondition, Filter, Match};
use tessera_kernel::OrganizationId;
use tessera_knowledge::{FileId, IndexError};

use super::config::json_path;
use crate::scope::{Keyword, file_scope};

/// Every chunk of one file of one organization.
pub(crate) fn file_filter(
    organization: &OrganizationId,
    file_id: &FileId,
) -> Result<Filter, IndexError> {
    filter(file_scope(organization, file_id))
}

/// A filter on which every condition must hold.
pub(crate) fn filter(scope: Vec<Keyword>) -> Result<Filter, IndexError> {
    let conditions = scope
        .into_iter()
        .map(|keyword| {
            let (field, matching) = match keyword {
                Keyword::Equals(field, value) => (field, Match::from(value)),
                Keyword::AnyOf(field, values) => (field, Match::from(values)),
            };
            Ok(Condition::Field(FieldCondition::new_match(
                json_path(field)?,
                matching,
            )))
        })
        .collect::<Result<Vec<_>, IndexError>>()?;
    Ok(Filter {
        must: Some(conditions),
        ..Filter::default()
    })
}
