use crate::{Category, Layout, ParticleId, ParticleVersionId, TokenCounter};

/// The separator between particles in a composed prompt: one blank line.
const SEPARATOR: &str = "\n\n";

/// One particle as it went into a composition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComposedParticle {
    pub id: ParticleId,
    pub category: Category,
    pub version: u32,
    pub version_id: ParticleVersionId,
    pub token_count: u32,
}

/// A system prompt rendered to text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Composition {
    pub text: String,
    /// Tokens of `text` itself (separators included), not the sum of the particles'.
    pub total_tokens: u32,
    pub particles: Vec<ComposedParticle>,
}

/// Renders a layout: each particle's content without surrounding whitespace, in layout
/// order, separated by one blank line. The same layout always gives the same bytes.
pub fn compose(layout: &Layout, counter: &dyn TokenCounter) -> Composition {
    let mut text = String::new();
    let mut particles = Vec::with_capacity(layout.entries().len());
    for entry in layout.entries() {
        if !text.is_empty() {
            text.push_str(SEPARATOR);
        }
        text.push_str(entry.version.content.trim());
        particles.push(ComposedParticle {
            id: entry.association.particle_id.clone(),
            category: entry.category,
            version: entry.version.number,
            version_id: entry.version.id.clone(),
            token_count: entry.version.token_count,
        });
    }
    let total_tokens = counter.count(&text);
    Composition {
        text,
        total_tokens,
        particles,
    }
}
