//! The `ClientStore` and `ApiKeyStore` contracts, for anyone implementing the ports: each
//! function checks promises of a trait against a fresh, empty store (a [`ClientStores`] or
//! an [`ApiKeyStores`]), and [`client_store_contract!`](crate::client_store_contract) and
//! [`api_key_store_contract!`](crate::api_key_store_contract) turn them into tests. Tessera
//! runs them against the in-memory reference stores (`crate::memory`) and both SQL stores.
//! The record builders are public, for an adapter's own checks beyond the contracts.
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod api_keys;
mod clients;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, TimeZone, Utc};
use tessera_kernel::OrganizationId;

pub use self::{api_keys::*, clients::*};
use crate::{
    ApiKeyStore, ClientStore,
    memory::{InMemoryApiKeyStore, InMemoryClientStore},
};

/// Runs every check of the `ClientStore` contract as a `#[tokio::test]` of the calling
/// crate, each on its own store made by `$factory`: an expression that, called with no
/// argument, gives a future of `(stores, guard)`, `stores` a
/// [`ClientStores`](crate::contract::ClientStores) (the guard, e.g. a throwaway database,
/// lives until the test ends).
#[macro_export]
macro_rules! client_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            inserted_clients_authenticate_with_their_hash,
            client_get_is_tenant_scoped,
            client_list_is_tenant_scoped_ordered_and_paged,
            replace_secret_changes_only_active_clients_of_the_organization,
            client_revocation_is_tenant_scoped_and_happens_once,
            duplicate_client_ids_conflict,
            concurrent_lookups_each_get_their_client,
        );
    };
}

/// Runs every check of the `ApiKeyStore` contract as a `#[tokio::test]` of the calling
/// crate, each on its own store made by `$factory`: an expression that, called with no
/// argument, gives a future of `(stores, guard)`, `stores` an
/// [`ApiKeyStores`](crate::contract::ApiKeyStores) (the guard, e.g. a throwaway database,
/// lives until the test ends).
#[macro_export]
macro_rules! api_key_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            inserted_keys_are_found_by_their_hash,
            key_hashes_and_ids_are_unique,
            get_list_and_count_are_tenant_scoped_and_skip_revoked_keys,
            last_use_is_written_at_most_once_per_interval,
            concurrent_touches_write_once,
        );
    };
}

/// What the `ClientStore` checks run on: a client store over one empty state, and a way to
/// make an organization exist before clients refer to it (where foreign keys need it).
#[async_trait]
pub trait ClientStores: Send + Sync {
    fn store(&self) -> Arc<dyn ClientStore>;

    /// Makes the organization `id` (named `name`) exist, e.g. stores it where clients refer
    /// to it; nothing for stores that keep no organizations. Panics if it cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);
}

/// What the `ApiKeyStore` checks run on: a key store over one empty state, and a way to make
/// an organization exist before keys refer to it (where foreign keys need it).
#[async_trait]
pub trait ApiKeyStores: Send + Sync {
    fn store(&self) -> Arc<dyn ApiKeyStore>;

    /// Makes the organization `id` (named `name`) exist, e.g. stores it where keys refer to
    /// it; nothing for stores that keep no organizations. Panics if it cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);
}

/// The in-memory reference, which keeps no organizations.
#[async_trait]
impl ClientStores for Arc<InMemoryClientStore> {
    fn store(&self) -> Arc<dyn ClientStore> {
        self.clone()
    }

    async fn organization_exists(&self, _id: &OrganizationId, _name: &str) {}
}

/// The in-memory reference, which keeps no organizations.
#[async_trait]
impl ApiKeyStores for Arc<InMemoryApiKeyStore> {
    fn store(&self) -> Arc<dyn ApiKeyStore> {
        self.clone()
    }

    async fn organization_exists(&self, _id: &OrganizationId, _name: &str) {}
}

/// The instant the records are made at: microsecond precision, as the domain's clock gives.
pub fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap() + Duration::microseconds(123_456)
}
