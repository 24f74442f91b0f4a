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

diesel::table! {
    clients (id) {
        id -> Text,
        organization_id -> Text,
        name -> Text,
        scopes -> Text,
        secret_hash -> Text,
        secret_generation -> Integer,
        revoked_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}
