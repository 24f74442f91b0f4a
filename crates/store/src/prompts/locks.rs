//! Row locks of the prompt transactions: the one place where the backends differ.
//!
//! Deleting a particle must not race with placing it (the port checks "not placed now"
//! atomically). On PostgreSQL (READ COMMITTED) a deletion locks the particle's row
//! `FOR UPDATE` before it looks for current placements, and every new placement locks its
//! particle `FOR SHARE` and requires it undeleted: whichever comes second waits for the first
//! and then sees its outcome. SQLite needs no row locks: its write transactions begin
//! IMMEDIATE (`with_transaction!`) and so run one at a time.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::rows::ParticleLock;
use crate::{database::SqliteConn, schema::particles};

/// How a transaction locks the particles it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LockMode {
    /// Against any change: the transaction is about to delete the particle.
    Update,
    /// Against deletion: the transaction is about to place the particle.
    Share,
}

/// Reads particles (deleted or not) and locks their rows until the transaction ends.
pub(super) trait LockParticles {
    fn lock_particles(
        &mut self,
        ids: &[String],
        mode: LockMode,
    ) -> impl Future<Output = QueryResult<Vec<ParticleLock>>> + Send;
}

impl LockParticles for AsyncPgConnection {
    async fn lock_particles(
        &mut self,
        ids: &[String],
        mode: LockMode,
    ) -> QueryResult<Vec<ParticleLock>> {
        // Rows are locked in id order, so two transactions never wait for each other in a circle.
        let query = particles::table
            .filter(particles::id.eq_any(ids))
            .order(particles::id.asc())
            .select(ParticleLock::as_select());
        match mode {
            LockMode::Update => query.for_update().load(self).await,
            LockMode::Share => query.for_share().load(self).await,
        }
    }
}

impl LockParticles for SqliteConn {
    async fn lock_particles(
        &mut self,
        ids: &[String],
        _mode: LockMode,
    ) -> QueryResult<Vec<ParticleLock>> {
        particles::table
            .filter(particles::id.eq_any(ids))
            .order(particles::id.asc())
            .select(ParticleLock::as_select())
            .load(self)
            .await
    }
}
