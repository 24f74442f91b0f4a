//! The filters every search and change runs with, evaluated by the engine.

use qdrant_edge::{Condition, FieldCondition, Filter, Match};
use tessera_kernel::OrganizationId;
use tessera_knowledge::{DatasetId, FileId, IndexError};

use super::config::json_path;
use crate::fields::{DATASET_IDS, FILE_ID, ORGANIZATION_ID};

/// Every chunk of one file of one organization.
pub(crate) fn file_filter(
    organization: &OrganizationId,
    file_id: &FileId,
) -> Result<Filter, IndexError> {
    Ok(all_of(vec![
        equals(ORGANIZATION_ID, organization.as_str())?,
        equals(FILE_ID, file_id.as_str())?,
    ]))
}

/// The chunks a search may see: the organization's, in the dataset (the list contains it)
/// and among the files, each when given.
pub(crate) fn search_filter(
    organization: &OrganizationId,
    dataset: Option<&DatasetId>,
    files: Option<&[FileId]>,
) -> Result<Filter, IndexError> {
    let mut conditions = vec![equals(ORGANIZATION_ID, organization.as_str())?];
    if let Some(dataset) = dataset {
        conditions.push(equals(DATASET_IDS, dataset.as_str())?);
    }
    if let Some(files) = files {
        let ids: Vec<String> = files.iter().map(|id| id.as_str().to_owned()).collect();
        conditions.push(Condition::Field(FieldCondition::new_match(
            json_path(FILE_ID)?,
            Match::from(ids),
        )));
    }
    Ok(all_of(conditions))
}

/// A keyword condition; on an array field it holds when any element equals the value.
fn equals(field: &str, value: &str) -> Result<Condition, IndexError> {
    Ok(Condition::Field(FieldCondition::new_match(
        json_path(field)?,
        Match::from(value.to_owned()),
    )))
}

fn all_of(conditions: Vec<Condition>) -> Filter {
    Filter {
        must: Some(conditions),
        ..Filter::default()
    }
}
