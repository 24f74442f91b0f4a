//! Table definitions shared by both backends; columns use types both databases support.

diesel::table! {
    organizations (id) {
        id -> Text,
        name -> Text,
        plan -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}
