//! Files attached to user messages: what a message keeps of them, the port that reads them,
//! and how they reach the model. Documents are inlined as text ahead of the message's own
//! text; images go with the message as image inputs (vision models only). Attachments are
//! resolved again whenever the message is sent, so a continued chat still sees them; a file
//! deleted since is replaced by a note saying so.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tessera_kernel::{DomainError, FieldError, LocSegment, OrganizationId};
use tessera_models::{ChatMessage, ImageInput};

/// The most files one message may attach.
pub const MAX_ATTACHMENTS: usize = 10;

/// A file attached to a user message, as stored with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    pub file_id: String,
    pub file_name: String,
    pub kind: AttachmentKind,
    /// The file's media type, e.g. `application/pdf` or `image/png`.
    pub media_type: String,
}

/// How an attachment reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttachmentKind {
    /// Its extracted text is inlined into the message.
    Document,
    /// Sent as an image input (vision models only).
    Image,
}

impl AttachmentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Document => "document",
            Self::Image => "image",
        }
    }
}

/// What the model receives of an attachment.
#[derive(Debug, Clone, PartialEq)]
pub enum AttachmentContent {
    /// The document's extracted text.
    Text(String),
    Image(ImageInput),
}

/// An attachment read for sending.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedAttachment {
    pub attachment: Attachment,
    pub content: AttachmentContent,
}

/// Why a file cannot be attached.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AttachmentError {
    #[error("file {0} does not exist")]
    NotFound(String),
    #[error("file {0} is still being processed; attach it once its status is ready")]
    NotReady(String),
    #[error("file {file} failed processing ({reason}) and has no text to attach")]
    Failed { file: String, reason: String },
    #[error(
        "file {file} has {chars} or more characters of text, more than the model's context \
         window can hold (at most {max_chars})"
    )]
    TooLarge {
        file: String,
        chars: usize,
        max_chars: usize,
    },
    #[error(transparent)]
    Domain(#[from] DomainError),
}

impl AttachmentError {
    /// The validation error type for the API's `type` field.
    fn kind(&self) -> &'static str {
        match self {
            Self::NotFound(_) => "not_found",
            Self::NotReady(_) => "file_not_ready",
            Self::Failed { .. } => "file_failed",
            Self::TooLarge { .. } => "attachment_too_large",
            Self::Domain(_) => "internal_error",
        }
    }
}

/// Reads the files of an organization for attaching: the knowledge domain implements it.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait AttachmentSource: Send + Sync {
    /// The file as the model receives it: a document's text (at most `max_chars`
    /// characters, else [`AttachmentError::TooLarge`]) or an image.
    async fn resolve(
        &self,
        organization: &OrganizationId,
        file_id: &str,
        max_chars: usize,
    ) -> Result<ResolvedAttachment, AttachmentError>;
}

/// For deployments without files: every file is unknown.
pub struct NoAttachments;

#[async_trait]
impl AttachmentSource for NoAttachments {
    async fn resolve(
        &self,
        _: &OrganizationId,
        file_id: &str,
        _: usize,
    ) -> Result<ResolvedAttachment, AttachmentError> {
        Err(AttachmentError::NotFound(file_id.to_owned()))
    }
}

/// Characters of text per token of the context window that an attachment may have before it
/// is refused unread. Generous (English prose averages about 4): the exact token count of
/// the whole prompt decides afterwards; this only spares tokenizing what cannot fit.
pub const CHARS_PER_TOKEN_BOUND: usize = 16;

/// Resolves the attachments of this turn's messages (`(message index, file ids)`), with a
/// validation error at `body.messages[i].attachments[j].fileId` for every file that cannot
/// be attached.
pub(crate) async fn resolve_turn(
    source: &dyn AttachmentSource,
    organization: &OrganizationId,
    turn: &[(usize, &[String])],
    max_chars: usize,
    vision: bool,
) -> Result<(Vec<Vec<ResolvedAttachment>>, Vec<FieldError>), DomainError> {
    let mut resolved = Vec::with_capacity(turn.len());
    let mut invalid = Vec::new();
    for &(index, file_ids) in turn {
        let loc = |j: usize| {
            vec![
                LocSegment::Field("body".into()),
                LocSegment::Field("messages".into()),
                LocSegment::Index(index),
                LocSegment::Field("attachments".into()),
                LocSegment::Index(j),
                LocSegment::Field("fileId".into()),
            ]
        };
        let mut message = Vec::with_capacity(file_ids.len());
        for (j, file_id) in file_ids.iter().enumerate() {
            match source.resolve(organization, file_id, max_chars).await {
                Ok(attachment) => {
                    if attachment.attachment.kind == AttachmentKind::Image && !vision {
                        invalid.push(FieldError::new(
                            loc(j),
                            format!(
                                "file {file_id} is an image, and this model does not accept \
                                 images (supportsVision is false)"
                            ),
                            "vision_unsupported",
                        ));
                    }
                    message.push(attachment);
                }
                Err(AttachmentError::Domain(error)) => return Err(error),
                Err(error) => {
                    invalid.push(FieldError::new(loc(j), error.to_string(), error.kind()))
                }
            }
        }
        resolved.push(message);
    }
    Ok((resolved, invalid))
}

/// Resolves the attachments stored with an earlier message. A file that is gone or no
/// longer fits (or an image, for a model without `vision`) is replaced by a note, so the
/// conversation can go on without it.
pub(crate) async fn resolve_stored(
    source: &dyn AttachmentSource,
    organization: &OrganizationId,
    stored: &[Attachment],
    max_chars: usize,
    vision: bool,
) -> Result<Vec<ResolvedAttachment>, DomainError> {
    let mut resolved = Vec::with_capacity(stored.len());
    for attachment in stored {
        let content = match source
            .resolve(organization, &attachment.file_id, max_chars)
            .await
        {
            Ok(found) => match found.content {
                AttachmentContent::Image(_) if !vision => AttachmentContent::Text(
                    "(An image was attached here; this model does not read images.)".into(),
                ),
                content => content,
            },
            Err(AttachmentError::Domain(error)) => return Err(error),
            Err(error) => AttachmentContent::Text(format!(
                "(The attached file is no longer available: {error}.)"
            )),
        };
        resolved.push(ResolvedAttachment {
            attachment: attachment.clone(),
            content,
        });
    }
    Ok(resolved)
}

/// The message as the model receives it: each document's text ahead of the message's text,
/// each image as an image input.
pub(crate) fn attach(message: &mut ChatMessage, attachments: &[ResolvedAttachment]) {
    let mut documents = String::new();
    for resolved in attachments {
        match &resolved.content {
            AttachmentContent::Text(text) => {
                documents.push_str(&format!(
                    "<attachment name=\"{}\">\n{}\n</attachment>\n\n",
                    resolved.attachment.file_name.replace('"', "'"),
                    text.trim_end()
                ));
            }
            AttachmentContent::Image(image) => message.images.push(image.clone()),
        }
    }
    if !documents.is_empty() {
        documents.push_str(&message.content);
        message.content = documents;
    }
}

/// The stored records of resolved attachments.
pub(crate) fn records(resolved: &[ResolvedAttachment]) -> Vec<Attachment> {
    resolved.iter().map(|r| r.attachment.clone()).collect()
}

/// Shared image bytes, for sources that read a blob.
pub fn image(media_type: &str, data: Vec<u8>) -> ImageInput {
    ImageInput {
        media_type: media_type.to_owned(),
        data: Arc::from(data),
    }
}

#[cfg(test)]
mod tests {
    use tessera_models::Role;

    use super::*;

    fn document(name: &str, text: &str) -> ResolvedAttachment {
        ResolvedAttachment {
            attachment: Attachment {
                file_id: "fil_1".into(),
                file_name: name.into(),
                kind: AttachmentKind::Document,
                media_type: "text/plain".into(),
            },
            content: AttachmentContent::Text(text.into()),
        }
    }

    #[test]
    fn documents_come_before_the_text_and_images_after_it() {
        let png = image("image/png", vec![1, 2, 3]);
        let picture = ResolvedAttachment {
            attachment: Attachment {
                file_id: "fil_2".into(),
                file_name: "cat.png".into(),
                kind: AttachmentKind::Image,
                media_type: "image/png".into(),
            },
            content: AttachmentContent::Image(png.clone()),
        };
        let mut message = ChatMessage::new(Role::User, "Summarise.");
        attach(
            &mut message,
            &[
                document("a \"b\".txt", "Alpha.\n\n"),
                picture,
                document("c.md", "Gamma"),
            ],
        );
        assert_eq!(
            message.content,
            "<attachment name=\"a 'b'.txt\">\nAlpha.\n</attachment>\n\n\
             <attachment name=\"c.md\">\nGamma\n</attachment>\n\nSummarise."
        );
        assert_eq!(message.images, vec![png]);
    }

    #[test]
    fn a_message_without_attachments_is_unchanged() {
        let mut message = ChatMessage::new(Role::User, "Hi");
        attach(&mut message, &[]);
        assert_eq!(message, ChatMessage::new(Role::User, "Hi"));
    }

    #[tokio::test]
    async fn every_unusable_file_is_reported_where_it_is() {
        let mut source = MockAttachmentSource::new();
        source.expect_resolve().returning(|_, id, _| match id {
            "fil_doc" => Ok(document("doc.txt", "text")),
            "fil_img" => Ok(ResolvedAttachment {
                attachment: Attachment {
                    file_id: id.into(),
                    file_name: "x.png".into(),
                    kind: AttachmentKind::Image,
                    media_type: "image/png".into(),
                },
                content: AttachmentContent::Image(image("image/png", vec![0])),
            }),
            "fil_busy" => Err(AttachmentError::NotReady(id.into())),
            _ => Err(AttachmentError::NotFound(id.into())),
        });
        let organization: OrganizationId = "acme".parse().unwrap();
        let first = vec!["fil_doc".to_owned(), "fil_busy".to_owned()];
        let second = vec!["fil_img".to_owned(), "fil_nope".to_owned()];
        let (_, errors) = resolve_turn(
            &source,
            &organization,
            &[(0, &first), (2, &second)],
            1000,
            false,
        )
        .await
        .unwrap();
        let found: Vec<(String, &str)> = errors
            .iter()
            .map(|e| (e.to_string(), e.kind.as_str()))
            .map(|(shown, kind)| (shown.split_once(": ").unwrap().0.to_owned(), kind))
            .collect();
        assert_eq!(
            found,
            vec![
                (
                    "body.messages.0.attachments.1.fileId".into(),
                    "file_not_ready"
                ),
                (
                    "body.messages.2.attachments.0.fileId".into(),
                    "vision_unsupported"
                ),
                ("body.messages.2.attachments.1.fileId".into(), "not_found"),
            ]
        );
        let (resolved, errors) =
            resolve_turn(&source, &organization, &[(0, &second[..1])], 1000, true)
                .await
                .unwrap();
        assert!(errors.is_empty());
        assert_eq!(resolved[0][0].attachment.kind, AttachmentKind::Image);
    }

    #[tokio::test]
    async fn a_file_gone_from_history_becomes_a_note() {
        let mut source = MockAttachmentSource::new();
        source
            .expect_resolve()
            .returning(|_, id, _| Err(AttachmentError::NotFound(id.into())));
        let organization: OrganizationId = "acme".parse().unwrap();
        let stored = vec![document("gone.pdf", "").attachment];
        let resolved = resolve_stored(&source, &organization, &stored, 1000, true)
            .await
            .unwrap();
        assert_eq!(resolved[0].attachment, stored[0]);
        assert!(matches!(
            &resolved[0].content,
            AttachmentContent::Text(note) if note.contains("no longer available")
        ));
    }
}
