//! Delivery signatures: `Tessera-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>` over
//! `"<t>.<body>"` with the webhook's secret as the key, so a receiver can prove a delivery
//! came from us and refuse replays older than its tolerance.

use chrono::{DateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::WebhookSecret;

/// The header that carries the signature.
pub const SIGNATURE_HEADER: &str = "Tessera-Signature";
/// The header that names the event type, e.g. `file.ready`.
pub const EVENT_HEADER: &str = "Tessera-Event";
/// The header with the event id (the same in every delivery and retry of one event).
pub const EVENT_ID_HEADER: &str = "Tessera-Event-Id";
/// The header with the delivery id (one per webhook and event, the same across retries).
pub const DELIVERY_HEADER: &str = "Tessera-Delivery";

fn mac(secret: &WebhookSecret, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    // HMAC accepts keys of any length, so this never falls back.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.expose().as_bytes())
        .unwrap_or_else(|_| <Hmac<Sha256> as KeyInit>::new(&Default::default()));
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The signature header's value for `body` sent at `timestamp` (Unix seconds).
pub fn sign(secret: &WebhookSecret, timestamp: i64, body: &[u8]) -> String {
    let digest = mac(secret, timestamp, body).finalize().into_bytes();
    format!("t={timestamp},v1={}", hex(&digest))
}

/// Whether `header` is a valid signature of `body` made within `tolerance_secs` of `now`:
/// what a receiver checks (the comparison takes constant time).
pub fn verify(
    secret: &WebhookSecret,
    header: &str,
    body: &[u8],
    now: DateTime<Utc>,
    tolerance_secs: i64,
) -> bool {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => signatures.extend(unhex(value)),
            _ => {}
        }
    }
    let Some(timestamp) = timestamp else {
        return false;
    };
    if (now.timestamp() - timestamp).abs() > tolerance_secs {
        return false;
    }
    signatures
        .iter()
        .any(|signature| mac(secret, timestamp, body).verify_slice(signature).is_ok())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.timestamp_opt(1_795_000_000, 0)
            .single()
            .unwrap_or_default()
    }

    #[test]
    fn a_signature_verifies_with_its_secret_and_body_only() {
        let secret = WebhookSecret::generate();
        let header = sign(&secret, now().timestamp(), b"{\"a\":1}");
        assert!(header.starts_with("t=1795000000,v1="));
        assert!(verify(&secret, &header, b"{\"a\":1}", now(), 300));
        assert!(!verify(&secret, &header, b"{\"a\":2}", now(), 300));
        assert!(!verify(
            &WebhookSecret::generate(),
            &header,
            b"{\"a\":1}",
            now(),
            300
        ));
    }

    #[test]
    fn old_or_malformed_signatures_are_refused() {
        let secret = WebhookSecret::generate();
        let header = sign(&secret, now().timestamp() - 301, b"x");
        assert!(!verify(&secret, &header, b"x", now(), 300));
        assert!(!verify(&secret, "v1=00", b"x", now(), 300));
        assert!(!verify(&secret, "t=1795000000,v1=zz", b"x", now(), 300));
        assert!(!verify(&secret, "", b"x", now(), 300));
    }

    #[test]
    fn the_digest_is_the_standard_hmac_sha256() {
        // Computed independently: Python's hmac.new(b"Jefe", b"0.what do ya want for
        // nothing?", hashlib.sha256).hexdigest().
        let header = sign(
            &WebhookSecret::stored("Jefe"),
            0,
            b"what do ya want for nothing?",
        );
        assert_eq!(
            header,
            "t=0,v1=37f471929915ccd2cbbe79feb84ffcff4f2bb25e15fc41c2506687331ae179cc"
        );
    }
}
