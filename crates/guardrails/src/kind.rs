//! What a guardrail looks for: the PII kinds the detectors know ([`PiiKind`]) and the kind
//! of check any decision names ([`CheckKind`]: a PII kind, a deny list, the input size or
//! the external hook), with the labels masks and placeholders carry.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A kind of personal or secret data a detector finds. The national ids are one kind per
/// country, each validated as `crate::detect` documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiiKind {
    Email,
    Phone,
    PaymentCard,
    Iban,
    IpAddress,
    Secret,
    /// United States Social Security number.
    UsSsn,
    /// United Kingdom National Insurance number.
    UkNino,
    /// French NIR (numéro de sécurité sociale).
    FrNir,
    /// Spanish DNI and NIE.
    EsDni,
    /// Italian codice fiscale of a person.
    ItCodiceFiscale,
    /// Dutch BSN (burgerservicenummer).
    NlBsn,
    /// Indian Aadhaar number.
    InAadhaar,
    /// German tax identification number (Steuer-IdNr).
    DeTaxId,
}

impl PiiKind {
    pub const ALL: [PiiKind; 14] = [
        Self::Email,
        Self::Phone,
        Self::PaymentCard,
        Self::Iban,
        Self::IpAddress,
        Self::Secret,
        Self::UsSsn,
        Self::UkNino,
        Self::FrNir,
        Self::EsDni,
        Self::ItCodiceFiscale,
        Self::NlBsn,
        Self::InAadhaar,
        Self::DeTaxId,
    ];

    /// The name in policies and records (`payment_card`), as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::Phone => "phone",
            Self::PaymentCard => "payment_card",
            Self::Iban => "iban",
            Self::IpAddress => "ip_address",
            Self::Secret => "secret",
            Self::UsSsn => "us_ssn",
            Self::UkNino => "uk_nino",
            Self::FrNir => "fr_nir",
            Self::EsDni => "es_dni",
            Self::ItCodiceFiscale => "it_codice_fiscale",
            Self::NlBsn => "nl_bsn",
            Self::InAadhaar => "in_aadhaar",
            Self::DeTaxId => "de_tax_id",
        }
    }

    /// The label in masks and placeholders (`[REDACTED:CARD]`, `⟦CARD_1⟧`): upper-case ASCII
    /// letters and underscores only, so a placeholder is never itself a finding.
    pub fn label(self) -> &'static str {
        match self {
            Self::Email => "EMAIL",
            Self::Phone => "PHONE",
            Self::PaymentCard => "CARD",
            Self::Iban => "IBAN",
            Self::IpAddress => "IP",
            Self::Secret => "SECRET",
            Self::UsSsn => "US_SSN",
            Self::UkNino => "UK_NINO",
            Self::FrNir => "FR_NIR",
            Self::EsDni => "ES_DNI",
            Self::ItCodiceFiscale => "IT_CF",
            Self::NlBsn => "NL_BSN",
            Self::InAadhaar => "IN_AADHAAR",
            Self::DeTaxId => "DE_TAX_ID",
        }
    }
}

impl fmt::Display for PiiKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a string names no PII kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown kind `{0}`")]
pub struct UnknownKind(pub String);

impl FromStr for PiiKind {
    type Err = UnknownKind;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| UnknownKind(text.to_owned()))
    }
}

/// The kind of check behind a decision: a PII kind, a deny list's entry, the maximum input
/// size, or the external hook. Written as one string (`email`, `denied`, `input_size`,
/// `hook`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CheckKind {
    Pii(PiiKind),
    Denied,
    InputSize,
    Hook,
}

impl CheckKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pii(kind) => kind.as_str(),
            Self::Denied => "denied",
            Self::InputSize => "input_size",
            Self::Hook => "hook",
        }
    }

    /// The label in masks and placeholders (`DENIED` for deny lists).
    pub fn label(self) -> &'static str {
        match self {
            Self::Pii(kind) => kind.label(),
            Self::Denied => "DENIED",
            Self::InputSize => "INPUT_SIZE",
            Self::Hook => "HOOK",
        }
    }
}

impl From<PiiKind> for CheckKind {
    fn from(kind: PiiKind) -> Self {
        Self::Pii(kind)
    }
}

impl fmt::Display for CheckKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CheckKind {
    type Err = UnknownKind;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "denied" => Ok(Self::Denied),
            "input_size" => Ok(Self::InputSize),
            "hook" => Ok(Self::Hook),
            other => other.parse().map(Self::Pii),
        }
    }
}

impl Serialize for CheckKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CheckKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_names_are_the_documented_names() {
        for kind in PiiKind::ALL {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, serde_json::json!(kind.as_str()));
            assert_eq!(kind.as_str().parse::<PiiKind>(), Ok(kind));
            let check = CheckKind::from(kind);
            assert_eq!(serde_json::to_value(check).unwrap(), json);
            assert_eq!(serde_json::from_value::<CheckKind>(json).unwrap(), check);
        }
        for check in [CheckKind::Denied, CheckKind::InputSize, CheckKind::Hook] {
            let json = serde_json::to_value(check).unwrap();
            assert_eq!(serde_json::from_value::<CheckKind>(json).unwrap(), check);
        }
        assert!(serde_json::from_value::<CheckKind>(serde_json::json!("passport")).is_err());
    }

    #[test]
    fn labels_are_upper_case_letters_and_underscores() {
        for kind in PiiKind::ALL {
            assert!(
                kind.label()
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b == b'_'),
                "{kind}"
            );
        }
    }
}
