use std::{fmt, ops::RangeInclusive, str::FromStr};

use serde::{Deserialize, Serialize};

/// What part of a system prompt a particle fills. The declaration order is the
/// composition order: identity first, output formatting last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Who the assistant is.
    Role,
    /// How it communicates.
    Tone,
    /// Safety constraints.
    Guardrails,
    /// Operational limits.
    Constraints,
    /// How answers are formatted.
    Format,
}

impl Category {
    pub const ALL: [Category; 5] = [
        Category::Role,
        Category::Tone,
        Category::Guardrails,
        Category::Constraints,
        Category::Format,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Role => "role",
            Category::Tone => "tone",
            Category::Guardrails => "guardrails",
            Category::Constraints => "constraints",
            Category::Format => "format",
        }
    }

    /// The recommended size of one particle of this category, in tokens (guidance only).
    pub fn recommended_tokens(self) -> RangeInclusive<u32> {
        match self {
            Category::Role => 50..=100,
            Category::Tone => 25..=50,
            Category::Guardrails => 50..=150,
            Category::Constraints => 25..=75,
            Category::Format => 25..=50,
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a string is not a category.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown category `{0}`; expected role, tone, guardrails, constraints or format")]
pub struct CategoryError(pub String);

impl FromStr for Category {
    type Err = CategoryError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Category::ALL
            .into_iter()
            .find(|category| category.as_str() == text)
            .ok_or_else(|| CategoryError(text.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declaration_order_is_composition_order() {
        let mut shuffled = vec![
            Category::Format,
            Category::Role,
            Category::Constraints,
            Category::Tone,
            Category::Guardrails,
        ];
        shuffled.sort();
        assert_eq!(shuffled, Category::ALL);
    }

    #[test]
    fn names_round_trip() {
        for category in Category::ALL {
            assert_eq!(category.as_str().parse::<Category>(), Ok(category));
        }
        assert!("Role".parse::<Category>().is_err());
    }
}
