//! The id of an organization's own model (`mdl_…`), apart from the model so that errors
//! and records can name one without depending on the model's definition.

tessera_kernel::entity_id!(
    /// A user model's id.
    ModelId,
    "mdl"
);
