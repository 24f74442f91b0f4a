//! Identity and access for Tessera: the API clients an organization creates (machine
//! credentials with assigned scopes and a hashed, rotatable secret), the claims of the access
//! tokens issued to them, and the `IdentityService` that issues tokens for the client
//! credentials grant and turns a presented token back into a `Principal`. Pure domain: hashing,
//! signing and storage are ports (`SecretHasher`, `TokenSigner`, `TokenVerifier`,
//! `ClientStore`, and `SessionVerifier` for session tokens of external identity providers)
//! implemented by adapters (`tessera-auth`, `tessera-store`).

mod claims;
mod client;
mod ports;
mod service;

pub use claims::{AccessClaims, SessionClaims, TokenError, unverified_issuer};
pub use client::{Client, ClientId, ClientName, ClientSecret, NewClient, SecretHash, StoredClient};
pub use ports::{ClientStore, SecretHasher, SessionVerifier, TokenSigner, TokenVerifier};
#[cfg(any(test, feature = "mocks"))]
pub use ports::{
    MockClientStore, MockSecretHasher, MockSessionVerifier, MockTokenSigner, MockTokenVerifier,
};
pub use service::{IdentityError, IdentityService, IssuedToken, TokenSettings};
