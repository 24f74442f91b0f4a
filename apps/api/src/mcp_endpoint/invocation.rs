//! What the MCP route attaches to each request for the server's tools and resources: the
//! app and the authenticated caller.

use actix_web::web;

use crate::{caller::Caller, state::AppState};

/// The app and the authenticated caller of one MCP request.
#[derive(Clone)]
pub struct Invocation {
    pub state: web::Data<AppState>,
    pub caller: Caller,
}
