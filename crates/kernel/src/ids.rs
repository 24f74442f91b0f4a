//! Sortable entity ids: a short type prefix and a UUIDv7 in lowercase hex, e.g.
//! `prt_0190f5c1a3e27c3d9b1e4a0c5d6e7f80`. UUIDv7 starts with the creation time in
//! milliseconds, so ids sort by creation and serve as stable keyset-pagination keys.

/// Why a string is not a valid id of the expected type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected an id of the form {prefix}_<32 lowercase hex digits>")]
pub struct IdError {
    pub prefix: &'static str,
}

/// Defines an entity id newtype with the given prefix.
///
/// ```
/// tessera_kernel::entity_id!(
///     /// A widget's id.
///     WidgetId, "wdg"
/// );
/// let id = WidgetId::generate();
/// assert!(id.as_str().starts_with("wdg_"));
/// assert_eq!(id.as_str().parse::<WidgetId>(), Ok(id.clone()));
/// ```
#[macro_export]
macro_rules! entity_id {
    ($(#[$meta:meta])* $name:ident, $prefix:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            #[allow(dead_code)]
            pub const PREFIX: &'static str = $prefix;

            /// A new id, sorted after every id generated before it.
            pub fn generate() -> Self {
                Self(format!("{}_{}", $prefix, $crate::__private::uuid::Uuid::now_v7().simple()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::IdError;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                let valid = text
                    .strip_prefix($prefix)
                    .and_then(|rest| rest.strip_prefix('_'))
                    .is_some_and(|hex| {
                        hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                    });
                if valid { Ok(Self(text.to_owned())) } else { Err($crate::IdError { prefix: $prefix }) }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl $crate::__private::serde::Serialize for $name {
            fn serialize<S: $crate::__private::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> $crate::__private::serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::__private::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <String as $crate::__private::serde::Deserialize>::deserialize(deserializer)?;
                text.parse().map_err(<D::Error as $crate::__private::serde::de::Error>::custom)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    crate::entity_id!(
        /// A test id.
        ThingId,
        "thg"
    );

    #[test]
    fn generated_ids_sort_by_creation() {
        let ids: Vec<ThingId> = (0..50).map(|_| ThingId::generate()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
    }

    #[test]
    fn parsing_rejects_wrong_prefix_length_and_case() {
        let id = ThingId::generate();
        assert_eq!(id.as_str().parse::<ThingId>(), Ok(id.clone()));
        for bad in [
            "",
            "thg_",
            "xyz_0190f5c1a3e27c3d9b1e4a0c5d6e7f80",
            "thg_0190F5C1A3E27C3D9B1E4A0C5D6E7F80",
            "thg_0190f5c1",
        ] {
            assert!(bad.parse::<ThingId>().is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn deserializing_validates() {
        let ok: Result<ThingId, _> =
            serde_json::from_str("\"thg_0190f5c1a3e27c3d9b1e4a0c5d6e7f80\"");
        assert!(ok.is_ok());
        let bad: Result<ThingId, _> = serde_json::from_str("\"nope\"");
        assert!(bad.is_err());
    }
}
