//! The status changes that end a chat's generation, as `chats` columns: the chat store's
//! when a turn finishes or fails, and the lease sweep's when a generation's runner stopped.

/// The status change of a finished generation.
macro_rules! finished_at {
    ($at:expr) => {
        (
            $crate::schema::chats::status.eq(None::<String>),
            $crate::schema::chats::error.eq(None::<String>),
            $crate::schema::chats::updated_at.eq($at),
        )
    };
}
pub(crate) use finished_at;

/// The status change of a failed generation.
macro_rules! failed_with {
    ($error:expr, $at:expr) => {
        (
            $crate::schema::chats::status.eq(tessera_chats::ChatStatus::Error.as_str()),
            $crate::schema::chats::error.eq($error),
            $crate::schema::chats::updated_at.eq($at),
        )
    };
}
pub(crate) use failed_with;
