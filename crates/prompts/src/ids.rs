//! Identifiers of prompt records.

tessera_kernel::entity_id!(
    /// A particle's id.
    ParticleId,
    "par"
);

tessera_kernel::entity_id!(
    /// One immutable version of a particle's content.
    ParticleVersionId,
    "pav"
);

tessera_kernel::entity_id!(
    /// A system prompt's id.
    SystemPromptId,
    "spr"
);

tessera_kernel::entity_id!(
    /// The placement of a particle in a system prompt.
    AssociationId,
    "spa"
);
