//! The chat models a deployment can reach: built at start-up from the catalog, with the
//! health of the deployments that serve them (`resolution` turns a user model into what a
//! chat needs).

use std::{collections::HashMap, sync::Arc};

use crate::{ChatModel, CircuitPhase, CircuitState, RoutedChatModel};

/// Chat models by base-model id, built at start-up from the catalog, and the routing of
/// those served by deployments (for their health).
#[derive(Clone, Default)]
pub struct Providers {
    models: HashMap<String, Arc<dyn ChatModel>>,
    routed: HashMap<String, Arc<RoutedChatModel>>,
}

/// One deployment of a catalog model and its circuit, as an operator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentHealth {
    pub name: String,
    pub provider: String,
    pub model_name: String,
    pub weight: u32,
    pub priority: u32,
    pub circuit: CircuitState,
    /// The circuit's phase when it was read.
    pub phase: CircuitPhase,
}

impl Providers {
    pub fn insert(&mut self, base_model_id: impl Into<String>, model: Arc<dyn ChatModel>) {
        self.models.insert(base_model_id.into(), model);
    }

    /// Keeps `routed` for its health; `model` is what generates (it may wrap `routed`).
    pub fn insert_routed(
        &mut self,
        base_model_id: impl Into<String>,
        routed: Arc<RoutedChatModel>,
        model: Arc<dyn ChatModel>,
    ) {
        let id = base_model_id.into();
        self.routed.insert(id.clone(), routed);
        self.models.insert(id, model);
    }

    pub fn get(&self, base_model_id: &str) -> Option<Arc<dyn ChatModel>> {
        self.models.get(base_model_id).cloned()
    }

    /// The deployments of a routed model with their circuits, in catalog order.
    pub async fn health(&self, base_model_id: &str) -> Option<Vec<DeploymentHealth>> {
        let routed = self.routed.get(base_model_id)?;
        let health = routed.health().await;
        Some(
            health
                .into_iter()
                .map(|(deployment, circuit, phase)| DeploymentHealth {
                    name: deployment.name.clone(),
                    provider: deployment.provider.clone(),
                    model_name: deployment.model_name.clone(),
                    weight: deployment.weight,
                    priority: deployment.priority,
                    circuit,
                    phase,
                })
                .collect(),
        )
    }
}
