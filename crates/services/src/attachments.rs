//! Chat attachments from uploaded files: the chats domain's [`AttachmentSource`] over the
//! knowledge domain's files. A document is attached once processed (`ready`), as its
//! extracted text; an image as it was uploaded.

use async_trait::async_trait;
use tessera_chats::{
    Attachment, AttachmentContent, AttachmentError, AttachmentKind, AttachmentSource,
    ResolvedAttachment, image,
};
use tessera_kernel::OrganizationId;
use tessera_knowledge::{DocumentText, FileId, FileService, FileStatus};

/// The organization's uploaded files, as attachments.
pub struct FileAttachments(pub FileService);

#[async_trait]
impl AttachmentSource for FileAttachments {
    async fn resolve(
        &self,
        organization: &OrganizationId,
        file_id: &str,
        max_chars: usize,
    ) -> Result<ResolvedAttachment, AttachmentError> {
        let not_found = || AttachmentError::NotFound(file_id.to_owned());
        let id: FileId = file_id.parse().map_err(|_| not_found())?;
        let file = self
            .0
            .find(organization, &id)
            .await?
            .ok_or_else(not_found)?;
        let attachment = |kind| Attachment {
            file_id: file.id.to_string(),
            file_name: file.name.clone(),
            kind,
            media_type: file.format.media_type().to_owned(),
        };
        if file.format.is_image() {
            let data = self.0.bytes(&file).await?;
            return Ok(ResolvedAttachment {
                attachment: attachment(AttachmentKind::Image),
                content: AttachmentContent::Image(image(file.format.media_type(), data)),
            });
        }
        match file.status {
            FileStatus::Processing => return Err(AttachmentError::NotReady(file_id.to_owned())),
            FileStatus::Failed => {
                return Err(AttachmentError::Failed {
                    file: file_id.to_owned(),
                    reason: file
                        .error
                        .clone()
                        .unwrap_or_else(|| "no reason recorded".into()),
                });
            }
            FileStatus::Ready => {}
        }
        match self.0.document_text(&file, max_chars).await? {
            DocumentText::Text(text) => Ok(ResolvedAttachment {
                attachment: attachment(AttachmentKind::Document),
                content: AttachmentContent::Text(text),
            }),
            DocumentText::TooLong { chars } => Err(AttachmentError::TooLarge {
                file: file_id.to_owned(),
                chars,
                max_chars,
            }),
        }
    }
}
