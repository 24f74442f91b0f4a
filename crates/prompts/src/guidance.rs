//! Recommended sizes: reported as warnings beside a response, never enforced.

use std::ops::RangeInclusive;

use serde::Serialize;

use crate::Category;

/// The recommended size of a whole composition, in tokens.
pub const RECOMMENDED_COMPOSITION_TOKENS: RangeInclusive<u32> = 175..=425;

/// A non-blocking note about a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// `particle_size` or `composition_size`.
    pub code: &'static str,
    pub message: String,
}

fn outside(range: &RangeInclusive<u32>, tokens: u32) -> Option<&'static str> {
    if tokens < *range.start() {
        Some("below")
    } else if tokens > *range.end() {
        Some("above")
    } else {
        None
    }
}

/// A warning when a particle is outside its category's recommended size.
pub fn particle_warnings(category: Category, tokens: u32) -> Vec<Warning> {
    let range = category.recommended_tokens();
    outside(&range, tokens)
        .map(|side| Warning {
            code: "particle_size",
            message: format!(
                "{tokens} tokens is {side} the recommended {}-{} for a {category} particle",
                range.start(),
                range.end()
            ),
        })
        .into_iter()
        .collect()
}

/// A warning when a composition is outside the recommended total size. An empty
/// composition gets none: there is nothing to size yet.
pub fn composition_warnings(particle_count: u32, tokens: u32) -> Vec<Warning> {
    let range = RECOMMENDED_COMPOSITION_TOKENS;
    if particle_count == 0 {
        return Vec::new();
    }
    outside(&range, tokens)
        .map(|side| Warning {
            code: "composition_size",
            message: format!(
                "{tokens} tokens is {side} the recommended {}-{} for a system prompt",
                range.start(),
                range.end()
            ),
        })
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn particles_inside_their_range_get_no_warning() {
        assert!(particle_warnings(Category::Role, 50).is_empty());
        assert!(particle_warnings(Category::Role, 100).is_empty());
        assert!(particle_warnings(Category::Tone, 25).is_empty());
    }

    #[test]
    fn particles_outside_their_range_are_warned_about() {
        let below = particle_warnings(Category::Role, 49);
        assert_eq!(below.len(), 1);
        assert_eq!(below[0].code, "particle_size");
        assert!(below[0].message.contains("below the recommended 50-100"));
        let above = particle_warnings(Category::Format, 51);
        assert!(above[0].message.contains("above the recommended 25-50"));
    }

    #[test]
    fn compositions_are_sized_once_they_have_particles() {
        assert!(composition_warnings(0, 0).is_empty());
        assert!(composition_warnings(3, 175).is_empty());
        assert!(composition_warnings(3, 425).is_empty());
        assert_eq!(composition_warnings(1, 174)[0].code, "composition_size");
        assert!(composition_warnings(9, 426)[0].message.contains("above"));
    }
}
