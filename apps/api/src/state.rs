use tessera_kernel::CursorCodec;
use tessera_organizations::OrganizationService;
use tessera_store::Database;

/// What handlers share: the database and the domain services built over it.
#[derive(Clone)]
pub struct AppState {
    pub database: Database,
    pub organizations: OrganizationService,
    pub cursors: CursorCodec,
}
