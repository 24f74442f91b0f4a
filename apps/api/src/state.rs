use std::ops::Deref;

use tessera_services::Services;

/// What handlers share: the domain services (read through [`Deref`], as `state.chats`) and
/// what only the HTTP surface needs.
#[derive(Clone)]
pub struct AppState {
    pub services: Services,
    pub limits: crate::rate_limit::Limits,
    /// Set once SIGTERM arrived: completions are refused while running ones finish.
    pub draining: crate::drain::Draining,
}

impl Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}
