//! Events: what happened, to whom, and the JSON body every receiver of it gets.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::json;
use tessera_kernel::OrganizationId;

tessera_kernel::entity_id!(
    /// One occurrence of an event; every delivery of it (one per subscribed webhook, each
    /// retried) carries the same id, so receivers can drop duplicates.
    EventId,
    "evt"
);

/// What a webhook subscribes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    /// A file finished processing and can be searched.
    FileReady,
    /// A file's processing failed for good; `data.error` says why.
    FileFailed,
    /// A dataset's content changed (a file added or removed); `data.version` is the new one.
    DatasetUpdated,
}

impl EventKind {
    pub const ALL: [EventKind; 3] = [Self::FileReady, Self::FileFailed, Self::DatasetUpdated];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::FileReady => "file.ready",
            Self::FileFailed => "file.failed",
            Self::DatasetUpdated => "dataset.updated",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }
}

/// How a dataset's content changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatasetChange {
    FileAdded,
    FileRemoved,
}

impl DatasetChange {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FileAdded => "file_added",
            Self::FileRemoved => "file_removed",
        }
    }
}

/// One event of an organization.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: EventId,
    pub organization: OrganizationId,
    pub kind: EventKind,
    pub created_at: DateTime<Utc>,
    /// The event's facts; the shape depends on `kind` (see the constructors).
    pub data: serde_json::Value,
}

/// The body of a delivery.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    organization_id: &'a str,
    created_at: String,
    data: &'a serde_json::Value,
}

impl Event {
    fn new(
        organization: &OrganizationId,
        kind: EventKind,
        at: DateTime<Utc>,
        data: serde_json::Value,
    ) -> Self {
        Self {
            id: EventId::generate(),
            organization: organization.clone(),
            kind,
            created_at: at,
            data,
        }
    }

    /// `file.ready`: `{fileId, name, chunkCount}`.
    pub fn file_ready(
        organization: &OrganizationId,
        file_id: &str,
        name: &str,
        chunk_count: u32,
        at: DateTime<Utc>,
    ) -> Self {
        let data = json!({ "fileId": file_id, "name": name, "chunkCount": chunk_count });
        Self::new(organization, EventKind::FileReady, at, data)
    }

    /// `file.failed`: `{fileId, name, error}`.
    pub fn file_failed(
        organization: &OrganizationId,
        file_id: &str,
        name: &str,
        error: &str,
        at: DateTime<Utc>,
    ) -> Self {
        let data = json!({ "fileId": file_id, "name": name, "error": error });
        Self::new(organization, EventKind::FileFailed, at, data)
    }

    /// `dataset.updated`: `{datasetId, version, change, fileId}`.
    pub fn dataset_updated(
        organization: &OrganizationId,
        dataset_id: &str,
        version: u64,
        change: DatasetChange,
        file_id: &str,
        at: DateTime<Utc>,
    ) -> Self {
        let data = json!({
            "datasetId": dataset_id,
            "version": version,
            "change": change.as_str(),
            "fileId": file_id,
        });
        Self::new(organization, EventKind::DatasetUpdated, at, data)
    }

    /// The JSON document POSTed to receivers: `{id, type, organizationId, createdAt, data}`.
    pub fn body(&self) -> String {
        let body = Body {
            id: self.id.as_str(),
            kind: self.kind.as_str(),
            organization_id: self.organization.as_str(),
            created_at: self.created_at.to_rfc3339_opts(SecondsFormat::Micros, true),
            data: &self.data,
        };
        serde_json::to_string(&body).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn kinds_round_trip_through_their_names() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(EventKind::parse("file.deleted"), None);
    }

    #[test]
    fn the_body_names_the_event_and_carries_its_data() {
        let organization = OrganizationId::generate();
        let at = Utc
            .with_ymd_and_hms(2026, 11, 24, 8, 30, 0)
            .single()
            .unwrap_or_default();
        let event = Event::dataset_updated(
            &organization,
            "ds_1",
            3,
            DatasetChange::FileRemoved,
            "file_1",
            at,
        );
        let body: serde_json::Value = serde_json::from_str(&event.body()).unwrap_or_default();
        assert_eq!(
            body,
            json!({
                "id": event.id.as_str(),
                "type": "dataset.updated",
                "organizationId": organization.as_str(),
                "createdAt": "2026-11-24T08:30:00.000000Z",
                "data": {"datasetId": "ds_1", "version": 3, "change": "file_removed", "fileId": "file_1"},
            })
        );
    }
}
