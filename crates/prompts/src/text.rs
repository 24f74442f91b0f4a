//! Validated text fields of prompt records.

/// Why a text field was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    #[error("must not be empty")]
    Empty,
    #[error("must be at most {max} characters, got {got}")]
    TooLong { max: usize, got: usize },
}

fn check(text: &str, min: usize, max: usize) -> Result<(), TextError> {
    let chars = text.chars().count();
    if chars < min || (min > 0 && text.trim().is_empty()) {
        Err(TextError::Empty)
    } else if chars > max {
        Err(TextError::TooLong { max, got: chars })
    } else {
        Ok(())
    }
}

macro_rules! bounded_text {
    ($(#[$meta:meta])* $name:ident, $min:expr, $max:expr) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name(String);

        impl $name {
            pub const MAX_CHARS: usize = $max;

            pub fn parse(text: &str) -> Result<Self, TextError> {
                check(text, $min, $max).map(|()| Self(text.to_owned()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_inner(self) -> String {
                self.0
            }
        }
    };
}

bounded_text!(
    /// A display name: 1 to 255 characters, not only whitespace.
    Name, 1, 255
);

bounded_text!(
    /// A description: at most 1000 characters (may be empty).
    Description, 0, 1000
);

bounded_text!(
    /// A particle's content: not blank, at most 32 768 characters. Stored verbatim.
    Content, 1, 32_768
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_bounded_and_not_blank() {
        assert_eq!(Name::parse(""), Err(TextError::Empty));
        assert_eq!(Name::parse("   "), Err(TextError::Empty));
        assert!(Name::parse(&"n".repeat(255)).is_ok());
        assert_eq!(
            Name::parse(&"n".repeat(256)),
            Err(TextError::TooLong { max: 255, got: 256 })
        );
        // Characters, not bytes.
        assert!(Name::parse(&"é".repeat(255)).is_ok());
    }

    #[test]
    fn descriptions_may_be_empty() {
        assert!(Description::parse("").is_ok());
        assert!(Description::parse(&"d".repeat(1001)).is_err());
    }

    #[test]
    fn content_is_kept_verbatim() {
        let content = Content::parse("  You are helpful.\n").unwrap();
        assert_eq!(content.as_str(), "  You are helpful.\n");
        assert_eq!(Content::parse("\n\t "), Err(TextError::Empty));
    }
}
