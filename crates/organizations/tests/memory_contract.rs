//! The `OrganizationStore` contract on the in-memory reference store.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tessera_organizations::memory::InMemoryOrganizationStore;

tessera_organizations::organization_store_contract!(|| async {
    (InMemoryOrganizationStore::new(), ())
});
