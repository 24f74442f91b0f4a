//! The vocabulary of a rule: its id ([`RuleId`]), what it does to a match ([`Action`]), and
//! which way it looks ([`AppliesTo`] a rule, [`Direction`] a check).

use std::{fmt, str::FromStr};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A rule's id, chosen by whoever writes the policy and named in every decision and refusal:
/// 1 to 64 characters of lower-case ASCII letters, digits, `-`, `_` and `.`, starting with a
/// letter or digit. Unique within a policy; two ids are reserved for the built-in checks
/// ([`RuleId::input_size`], [`RuleId::hook`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId(String);

/// Why a string is not a rule id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a rule id has 1 to {max} characters among a-z, 0-9, '-', '_' and '.', starting with a letter or digit",
    max = RuleId::MAX_CHARS
)]
pub struct RuleIdError;

impl RuleId {
    pub const MAX_CHARS: usize = 64;
    const INPUT_SIZE: &'static str = "max_input_chars";
    const HOOK: &'static str = "hook";

    /// The id of the maximum input size check.
    pub fn input_size() -> Self {
        Self(Self::INPUT_SIZE.to_owned())
    }

    /// The id of the external hook's check.
    pub fn hook() -> Self {
        Self(Self::HOOK.to_owned())
    }

    /// Whether this id belongs to a built-in check, so no written rule may take it.
    pub fn is_reserved(&self) -> bool {
        self.0 == Self::INPUT_SIZE || self.0 == Self::HOOK
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for RuleId {
    type Err = RuleIdError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b);
        let valid = !text.is_empty()
            && text.len() <= Self::MAX_CHARS
            && text.bytes().all(allowed)
            && text
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(RuleIdError)
        }
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for RuleId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for RuleId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What a rule does to what it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Refuse the request (input) or the answer (output), naming the rule, never the value.
    Block,
    /// Replace the value with a mask such as `[REDACTED:EMAIL]`, for good.
    Redact,
    /// Replace the value with a placeholder such as `⟦EMAIL_1⟧` before the provider sees it,
    /// and put the value back where the answer repeats the placeholder. Input only: on the
    /// output side of a rule that applies to both, it masks as [`Action::Redact`] does.
    Pseudonymise,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Block => "block",
            Self::Redact => "redact",
            Self::Pseudonymise => "pseudonymise",
        }
    }
}

/// Which way a check looks: at what is sent to the provider, or at what comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Input,
    Output,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Output => "output",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which directions a rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppliesTo {
    Input,
    Output,
    #[default]
    Both,
}

impl AppliesTo {
    pub fn includes(self, direction: Direction) -> bool {
        matches!(
            (self, direction),
            (Self::Both, _) | (Self::Input, Direction::Input) | (Self::Output, Direction::Output)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_short_lower_case_slugs() {
        for good in ["emails", "no-cards", "deny.codenames", "a", "9_lives"] {
            assert_eq!(good.parse::<RuleId>().unwrap().as_str(), good);
        }
        let too_long = "a".repeat(RuleId::MAX_CHARS + 1);
        for bad in ["", "Emails", "-x", "_x", "a b", "ü", too_long.as_str()] {
            assert!(bad.parse::<RuleId>().is_err(), "{bad:?}");
        }
        assert!(RuleId::hook().is_reserved() && RuleId::input_size().is_reserved());
        assert!(!"emails".parse::<RuleId>().unwrap().is_reserved());
    }

    #[test]
    fn applies_to_covers_its_directions() {
        assert!(AppliesTo::Both.includes(Direction::Input));
        assert!(AppliesTo::Both.includes(Direction::Output));
        assert!(AppliesTo::Input.includes(Direction::Input));
        assert!(!AppliesTo::Input.includes(Direction::Output));
        assert!(!AppliesTo::Output.includes(Direction::Input));
    }
}
