//! Which chunks a change or a search may touch, as keyword conditions on the indexed payload
//! fields. Every adapter turns these into its engine's filter (all must hold), so tenant,
//! dataset and file isolation is decided once, here, and always evaluated by the engine.

use tessera_kernel::OrganizationId;
use tessera_knowledge::{DatasetId, FileId};

use crate::fields::{DATASET_IDS, FILE_ID, ORGANIZATION_ID};

/// One condition on a keyword field. On an array field (`dataset_ids`) a condition holds
/// when any element matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Keyword {
    /// The field equals the value.
    Equals(&'static str, String),
    /// The field equals one of the values (never empty: callers answer "nothing" first).
    AnyOf(&'static str, Vec<String>),
}

/// Every chunk of one file of one organization.
pub(crate) fn file_scope(organization: &OrganizationId, file_id: &FileId) -> Vec<Keyword> {
    vec![
        Keyword::Equals(ORGANIZATION_ID, organization.as_str().to_owned()),
        Keyword::Equals(FILE_ID, file_id.as_str().to_owned()),
    ]
}

/// The chunks a search may see: the organization's, in the dataset (the list contains it)
/// and among the files, each when given. Repeated file ids are given once.
pub(crate) fn search_scope(
    organization: &OrganizationId,
    dataset: Option<&DatasetId>,
    files: Option<&[FileId]>,
) -> Vec<Keyword> {
    let mut conditions = vec![Keyword::Equals(
        ORGANIZATION_ID,
        organization.as_str().to_owned(),
    )];
    if let Some(dataset) = dataset {
        conditions.push(Keyword::Equals(DATASET_IDS, dataset.as_str().to_owned()));
    }
    if let Some(files) = files {
        let mut ids: Vec<String> = Vec::with_capacity(files.len());
        for id in files {
            if !ids.iter().any(|seen| seen == id.as_str()) {
                ids.push(id.as_str().to_owned());
            }
        }
        conditions.push(Keyword::AnyOf(FILE_ID, ids));
    }
    conditions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_scope_names_each_given_restriction_once() -> Result<(), Box<dyn std::error::Error>> {
        let org: OrganizationId = "org_a".parse()?;
        let file = FileId::generate();
        assert_eq!(
            search_scope(&org, None, None),
            vec![Keyword::Equals(ORGANIZATION_ID, "org_a".into())]
        );
        let dataset = DatasetId::generate();
        let scope = search_scope(&org, Some(&dataset), Some(&[file.clone(), file.clone()]));
        assert_eq!(
            scope,
            vec![
                Keyword::Equals(ORGANIZATION_ID, "org_a".into()),
                Keyword::Equals(DATASET_IDS, dataset.as_str().into()),
                Keyword::AnyOf(FILE_ID, vec![file.as_str().into()]),
            ]
        );
        Ok(())
    }
}
