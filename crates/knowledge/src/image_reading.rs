//! Which uploaded images are read by OCR: an image goes through processing like a document
//! only where the service can read its format (the OCR engine says which, through
//! [`TextRecognizer::reads_image`](crate::TextRecognizer::reads_image)) and its organization
//! opted in, which the [`ImageReadingPolicy`] port says. Every other image is stored `ready`
//! at once, for vision chats, as without OCR.

use async_trait::async_trait;
use tessera_kernel::{DomainError, OrganizationId};

use crate::FileFormat;

/// Whether an organization's uploaded images are read by OCR. Asked once per upload of an
/// image the service could read, before its content is received.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ImageReadingPolicy: Send + Sync {
    async fn reads_images(&self, organization: &OrganizationId) -> Result<bool, DomainError>;
}

/// The policy and the image formats the service can read: what
/// [`FileService::with_image_reading`](crate::FileService::with_image_reading) keeps.
#[derive(Clone)]
pub(crate) struct ImageReading {
    pub policy: std::sync::Arc<dyn ImageReadingPolicy>,
    pub formats: Vec<FileFormat>,
}

impl ImageReading {
    /// Whether an upload of `format` by `organization` is processed: documents always; an
    /// image when its format is readable here and the organization opted in (asked only
    /// then).
    pub async fn processes(
        reading: Option<&Self>,
        organization: &OrganizationId,
        format: FileFormat,
    ) -> Result<bool, DomainError> {
        if !format.is_image() {
            return Ok(true);
        }
        match reading {
            Some(reading) if reading.formats.contains(&format) => {
                reading.policy.reads_images(organization).await
            }
            _ => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::MockImageReadingPolicy;

    fn reading(opted_in: bool, asked: usize) -> ImageReading {
        let mut policy = MockImageReadingPolicy::new();
        policy
            .expect_reads_images()
            .times(asked)
            .returning(move |_| Ok(opted_in));
        ImageReading {
            policy: Arc::new(policy),
            formats: vec![FileFormat::Png],
        }
    }

    /// Whether an upload of `format` is processed, given what is wired.
    async fn processes(reading: Option<ImageReading>, format: FileFormat) -> bool {
        let acme: OrganizationId = "org_acme".parse().unwrap();
        ImageReading::processes(reading.as_ref(), &acme, format)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn documents_always_and_images_only_when_readable_and_opted_in() {
        assert!(processes(Some(reading(false, 0)), FileFormat::Pdf).await);
        assert!(processes(None, FileFormat::Md).await);
        assert!(processes(Some(reading(true, 1)), FileFormat::Png).await);
        assert!(!processes(Some(reading(false, 1)), FileFormat::Png).await);
        // A format the engine does not read is not asked about.
        assert!(!processes(Some(reading(true, 0)), FileFormat::Webp).await);
        assert!(!processes(None, FileFormat::Png).await, "no OCR here");
    }
}
