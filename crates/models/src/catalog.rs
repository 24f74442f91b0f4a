//! The base-model catalog: system models declared in TOML (`catalog.toml` in this crate is
//! the default; operators point `models.catalog_file` at their own). A model whose provider
//! needs an API key that is not set is listed with `enabled: false`.

use std::collections::BTreeMap;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::{Capabilities, Timeouts};

const BUILTIN: &str = include_str!("../catalog.toml");

/// Pricing tier: premium models need a pro or enterprise plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelTier {
    #[default]
    Standard,
    Premium,
}

impl ModelTier {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelTier::Standard => "standard",
            ModelTier::Premium => "premium",
        }
    }
}

/// Where a provider is reached.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct ProviderSettings {
    /// `openai` (any OpenAI-compatible API), `anthropic` (the Messages API) or `local` (the
    /// embedded engine).
    pub kind: String,
    /// Base URL of the API, e.g. `https://api.openai.com/v1`; required for `openai`, for
    /// `anthropic` Anthropic's own (`https://api.anthropic.com/v1`) when unset.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Environment variable holding the API key; when set but empty or missing, the
    /// provider's models are disabled.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// How a JSON-schema response format is sent: `json_schema` (OpenAI's
    /// `{"type": "json_schema", "json_schema": {…}}`, the default) or `json_object`
    /// (`{"type": "json_object", "schema": {…}}`: the llama-cpp-python server, Together,
    /// Fireworks).
    #[serde(default)]
    pub json_schema_style: JsonSchemaStyle,
    /// Timeouts of this provider's deployments (each may override them).
    #[serde(default)]
    pub timeouts: TimeoutSettings,
}

/// Timeouts in milliseconds; an absent one keeps the value it overrides (the provider's,
/// or the defaults of [`Timeouts`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutSettings {
    pub connect_ms: Option<u64>,
    pub first_token_ms: Option<u64>,
    pub idle_ms: Option<u64>,
    pub total_ms: Option<u64>,
}

impl TimeoutSettings {
    /// `base` with these overrides applied.
    pub fn apply(&self, base: Timeouts) -> Timeouts {
        let or = |ms: Option<u64>, default| ms.map_or(default, Duration::from_millis);
        Timeouts {
            connect: or(self.connect_ms, base.connect),
            first_token: or(self.first_token_ms, base.first_token),
            idle: or(self.idle_ms, base.idle),
            total: or(self.total_ms, base.total),
        }
    }

    fn check(&self) -> Result<(), &'static str> {
        let all = [
            self.connect_ms,
            self.first_token_ms,
            self.idle_ms,
            self.total_ms,
        ];
        if all.contains(&Some(0)) {
            return Err("timeouts must be at least 1 ms");
        }
        Ok(())
    }
}

/// One place a model is served from: a provider and its name for the model.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentSettings {
    /// Unique within the model; the provider's key when absent.
    #[serde(default)]
    pub name: Option<String>,
    /// A key of the catalog's `providers`.
    pub provider: String,
    /// The provider's own identifier of the model.
    pub model_name: String,
    /// Share of traffic among healthy deployments of equal priority (at least 1).
    #[serde(default = "one")]
    pub weight: u32,
    /// Deployments of a lower priority are tried first.
    #[serde(default)]
    pub priority: u32,
    /// Overrides of the provider's timeouts.
    #[serde(default)]
    pub timeouts: TimeoutSettings,
}

impl DeploymentSettings {
    /// The name routes and health show.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.provider)
    }
}

/// The two shapes OpenAI-compatible servers accept a response schema in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JsonSchemaStyle {
    /// `{"type": "json_schema", "json_schema": {"name", "strict", "schema"}}`.
    #[default]
    JsonSchema,
    /// `{"type": "json_object", "schema": {…}}`.
    JsonObject,
}

/// A system model organizations build on.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct BaseModel {
    /// Stable id, e.g. `local/smollm2-135m`.
    pub id: String,
    pub display_name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// A key of the catalog's `providers`: the (first) deployment's provider. Give either
    /// `provider` and `model_name`, or `deployments`.
    #[serde(default)]
    pub provider: String,
    /// The provider's own identifier of the model (of the first deployment).
    #[serde(default)]
    pub model_name: String,
    /// Where the model is served from, when more than one place: tried by priority, then
    /// weighted among the healthy ones, falling back before the first token.
    #[serde(default)]
    pub deployments: Vec<DeploymentSettings>,
    pub context_window: u32,
    #[serde(default)]
    pub max_tokens_per_request: Option<u32>,
    #[serde(default)]
    pub capabilities: Capabilities,
    /// Credits per token (an integer, as the interface has it; 0 for free models).
    #[serde(default = "one")]
    pub credit_multiplier: u32,
    #[serde(default)]
    pub tier: ModelTier,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub end_of_life_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub replacement_model_id: Option<String>,
    #[serde(default)]
    pub deprecation_message: Option<String>,
    #[serde(default)]
    pub is_recommended: bool,
}

/// Fills `deployments` from `provider` and `model_name` (the one-deployment form), or
/// `provider` and `model_name` from the first deployment.
fn deployments_of(model: &mut BaseModel) -> Result<(), String> {
    match (model.deployments.first(), model.provider.is_empty()) {
        (None, true) => Err("give `provider` and `model_name`, or `deployments`".into()),
        (None, false) => {
            if model.model_name.is_empty() {
                return Err("`model_name` is required with `provider`".into());
            }
            model.deployments.push(DeploymentSettings {
                name: None,
                provider: model.provider.clone(),
                model_name: model.model_name.clone(),
                weight: 1,
                priority: 0,
                timeouts: TimeoutSettings::default(),
            });
            Ok(())
        }
        (Some(first), true) => {
            model.provider = first.provider.clone();
            model.model_name = first.model_name.clone();
            Ok(())
        }
        (Some(_), false) => {
            Err("give either `provider` and `model_name`, or `deployments`, not both".into())
        }
    }
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    #[serde(default)]
    providers: BTreeMap<String, ProviderSettings>,
    #[serde(default)]
    models: Vec<BaseModel>,
}

/// Why a catalog was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("model catalog: {0}")]
pub struct CatalogError(String);

/// The validated catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    providers: BTreeMap<String, ProviderSettings>,
    models: Vec<BaseModel>,
}

impl Catalog {
    /// The catalog shipped in this crate (the embedded local model).
    pub fn builtin(env: impl Fn(&str) -> Option<String>) -> Result<Self, CatalogError> {
        Self::parse(BUILTIN, env)
    }

    /// Parses and checks a catalog; `env` reads provider keys (models of a provider whose
    /// key is absent are disabled).
    pub fn parse(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Self, CatalogError> {
        let file: CatalogFile = toml::from_str(text).map_err(|e| CatalogError(e.to_string()))?;
        let mut models = file.models;
        let mut seen = std::collections::HashSet::new();
        for model in &mut models {
            let id = model.id.clone();
            let problem = |what: &str| CatalogError(format!("model `{id}`: {what}"));
            if model.id.is_empty()
                || !model
                    .id
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_./:".contains(&b))
            {
                return Err(problem(
                    "id must be lowercase letters, digits and - _ . / :",
                ));
            }
            if !seen.insert(model.id.clone()) {
                return Err(problem("id is used twice"));
            }
            if model.context_window == 0 {
                return Err(problem("context_window must be at least 1"));
            }
            deployments_of(model).map_err(|what| problem(&what))?;
            let mut names = std::collections::HashSet::new();
            let mut served = false;
            for deployment in &model.deployments {
                let Some(provider) = file.providers.get(&deployment.provider) else {
                    return Err(problem(&format!(
                        "unknown provider `{}`",
                        deployment.provider
                    )));
                };
                if !names.insert(deployment.name().to_owned()) {
                    return Err(problem(&format!(
                        "deployment `{}` is named twice (give each a `name`)",
                        deployment.name()
                    )));
                }
                if deployment.weight == 0 {
                    return Err(problem("a deployment's weight must be at least 1"));
                }
                deployment.timeouts.check().map_err(problem)?;
                served |= provider
                    .api_key_env
                    .as_ref()
                    .is_none_or(|variable| env(variable).is_some_and(|key| !key.trim().is_empty()));
            }
            // Deployments whose provider has no key are left out; with none left, the
            // model is disabled.
            model.enabled &= served;
        }
        for model in &models {
            if let Some(replacement) = &model.replacement_model_id
                && !seen.contains(replacement)
            {
                return Err(CatalogError(format!(
                    "model `{}`: replacement `{replacement}` is not in the catalog",
                    model.id
                )));
            }
        }
        for (name, provider) in &file.providers {
            if !matches!(provider.kind.as_str(), "openai" | "anthropic" | "local") {
                return Err(CatalogError(format!(
                    "provider `{name}`: kind must be `openai`, `anthropic` or `local`"
                )));
            }
            if provider.kind == "openai" && provider.base_url.is_none() {
                return Err(CatalogError(format!(
                    "provider `{name}`: base_url is required"
                )));
            }
            provider
                .timeouts
                .check()
                .map_err(|what| CatalogError(format!("provider `{name}`: {what}")))?;
        }
        Ok(Self {
            providers: file.providers,
            models,
        })
    }

    /// Disables every enabled model that `served` says no provider can run (e.g. the embedded
    /// engine without its model file), so the catalog never offers what cannot answer.
    pub fn disable_unserved(&mut self, served: impl Fn(&str) -> bool) -> Vec<String> {
        let mut disabled = Vec::new();
        for model in self.models.iter_mut().filter(|model| model.enabled) {
            if !served(&model.id) {
                model.enabled = false;
                disabled.push(model.id.clone());
            }
        }
        disabled
    }

    pub fn models(&self) -> &[BaseModel] {
        &self.models
    }

    pub fn get(&self, id: &str) -> Option<&BaseModel> {
        self.models.iter().find(|model| model.id == id)
    }

    pub fn provider(&self, name: &str) -> Option<&ProviderSettings> {
        self.providers.get(name)
    }

    /// A deployment's timeouts: the defaults, its provider's, then its own.
    pub fn timeouts(&self, deployment: &DeploymentSettings) -> Timeouts {
        let provider = self
            .provider(&deployment.provider)
            .map_or(Timeouts::default(), |p| {
                p.timeouts.apply(Timeouts::default())
            });
        deployment.timeouts.apply(provider)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CATALOG: &str = r#"
        [providers.local]
        kind = "local"
        [providers.openai]
        kind = "openai"
        base_url = "https://api.openai.com/v1"
        api_key_env = "OPENAI_API_KEY"

        [[models]]
        id = "local/smollm2-135m"
        display_name = "SmolLM2 135M"
        provider = "local"
        model_name = "SmolLM2-135M-Instruct.Q4_1.gguf"
        context_window = 2048
        capabilities = { streaming = true, json_schema = true }

        [[models]]
        id = "openai/gpt-4o-mini"
        display_name = "GPT-4o mini"
        provider = "openai"
        model_name = "gpt-4o-mini"
        context_window = 128000
        tier = "premium"
        credit_multiplier = 3
        replacement_model_id = "local/smollm2-135m"
    "#;

    #[test]
    fn models_of_providers_without_a_key_are_disabled() {
        let without = Catalog::parse(CATALOG, |_| None).unwrap();
        assert!(without.get("local/smollm2-135m").unwrap().enabled);
        assert!(!without.get("openai/gpt-4o-mini").unwrap().enabled);
        let with = Catalog::parse(CATALOG, |name| {
            (name == "OPENAI_API_KEY").then(|| "sk-test".to_owned())
        })
        .unwrap();
        let gpt = with.get("openai/gpt-4o-mini").unwrap();
        assert!(gpt.enabled);
        assert_eq!((gpt.tier, gpt.credit_multiplier), (ModelTier::Premium, 3));
    }

    #[test]
    fn a_provider_may_ask_for_the_json_object_schema_style() {
        let default = Catalog::parse(CATALOG, |_| None).unwrap();
        assert_eq!(
            default.provider("openai").unwrap().json_schema_style,
            JsonSchemaStyle::JsonSchema
        );
        let styled = CATALOG.replace(
            "api_key_env = \"OPENAI_API_KEY\"",
            "api_key_env = \"OPENAI_API_KEY\"\njson_schema_style = \"json_object\"",
        );
        let catalog = Catalog::parse(&styled, |_| None).unwrap();
        assert_eq!(
            catalog.provider("openai").unwrap().json_schema_style,
            JsonSchemaStyle::JsonObject
        );
        let unknown = styled.replace("\"json_object\"", "\"yaml\"");
        assert!(Catalog::parse(&unknown, |_| None).is_err());
    }

    #[test]
    fn inconsistent_catalogs_are_refused() {
        for (broken, needle) in [
            (
                CATALOG.replace("provider = \"local\"", "provider = \"nope\""),
                "unknown provider",
            ),
            (
                CATALOG.replace("context_window = 2048", "context_window = 0"),
                "context_window",
            ),
            (
                CATALOG.replace("id = \"openai/gpt-4o-mini\"", "id = \"local/smollm2-135m\""),
                "used twice",
            ),
            (
                CATALOG.replace(
                    "replacement_model_id = \"local/smollm2-135m\"",
                    "replacement_model_id = \"gone\"",
                ),
                "replacement",
            ),
            (
                CATALOG.replace("id = \"local/smollm2-135m\"\n", "id = \"Local Model\"\n"),
                "lowercase",
            ),
        ] {
            assert_refused(&broken, needle);
        }
    }

    fn assert_refused(catalog: &str, needle: &str) {
        let error = Catalog::parse(catalog, |_| None).unwrap_err();
        assert!(error.to_string().contains(needle), "{error}");
    }

    const TWO_DEPLOYMENTS: &str = r#"
        [providers.primary]
        kind = "openai"
        base_url = "http://127.0.0.1:9001/v1"
        timeouts = { first_token_ms = 5000 }
        [providers.backup]
        kind = "openai"
        base_url = "http://127.0.0.1:9002/v1"
        api_key_env = "BACKUP_KEY"

        [[models]]
        id = "acme/chat"
        display_name = "Chat"
        context_window = 8192

        [[models.deployments]]
        provider = "primary"
        model_name = "chat-large"
        weight = 3
        timeouts = { idle_ms = 2000 }

        [[models.deployments]]
        provider = "backup"
        model_name = "chat-large-v2"
        priority = 1
    "#;

    #[test]
    fn a_model_may_list_several_deployments() {
        let catalog = Catalog::parse(TWO_DEPLOYMENTS, |_| None).unwrap();
        let model = catalog.get("acme/chat").unwrap();
        // The first deployment is the model's provider; a keyless backup does not disable it.
        assert!(model.enabled);
        assert_eq!(
            (model.provider.as_str(), model.model_name.as_str()),
            ("primary", "chat-large")
        );
        let names: Vec<_> = model
            .deployments
            .iter()
            .map(|d| (d.name(), d.weight, d.priority))
            .collect();
        assert_eq!(names, [("primary", 3, 0), ("backup", 1, 1)]);
        let timeouts = catalog.timeouts(&model.deployments[0]);
        assert_eq!(timeouts.first_token, Duration::from_secs(5));
        assert_eq!(timeouts.idle, Duration::from_secs(2));
        assert_eq!(timeouts.total, Timeouts::default().total);
    }

    #[test]
    fn the_one_provider_form_is_one_deployment() {
        let catalog = Catalog::parse(CATALOG, |_| None).unwrap();
        let local = catalog.get("local/smollm2-135m").unwrap();
        assert_eq!(local.deployments.len(), 1);
        assert_eq!(local.deployments[0].name(), "local");
        assert_eq!(
            local.deployments[0].model_name,
            "SmolLM2-135M-Instruct.Q4_1.gguf"
        );
    }

    #[test]
    fn inconsistent_deployments_are_refused() {
        for (broken, needle) in [
            (
                TWO_DEPLOYMENTS.replace(
                    "context_window = 8192",
                    "provider = \"primary\"\nmodel_name = \"x\"\ncontext_window = 8192",
                ),
                "not both",
            ),
            (
                TWO_DEPLOYMENTS.replace("provider = \"backup\"", "provider = \"primary\""),
                "named twice",
            ),
            (
                TWO_DEPLOYMENTS.replace("weight = 3", "weight = 0"),
                "weight",
            ),
            (
                TWO_DEPLOYMENTS.replace("idle_ms = 2000", "idle_ms = 0"),
                "at least 1 ms",
            ),
            (
                TWO_DEPLOYMENTS.replace("provider = \"backup\"", "provider = \"nope\""),
                "unknown provider",
            ),
            (
                TWO_DEPLOYMENTS
                    .split("[[models.deployments]]")
                    .next()
                    .unwrap()
                    .to_owned(),
                "or `deployments`",
            ),
        ] {
            assert_refused(&broken, needle);
        }
    }

    #[test]
    fn unserved_models_are_disabled() {
        let mut catalog = Catalog::parse(CATALOG, |_| Some("key".into())).unwrap();
        let disabled = catalog.disable_unserved(|id| id == "openai/gpt-4o-mini");
        assert_eq!(disabled, ["local/smollm2-135m"]);
        assert!(!catalog.get("local/smollm2-135m").unwrap().enabled);
        assert!(catalog.get("openai/gpt-4o-mini").unwrap().enabled);
    }

    #[test]
    fn the_builtin_catalog_has_the_embedded_model() {
        let catalog = Catalog::builtin(|_| None).unwrap();
        let local = catalog
            .models()
            .iter()
            .find(|m| {
                catalog
                    .provider(&m.provider)
                    .is_some_and(|p| p.kind == "local")
            })
            .unwrap();
        assert!(local.enabled);
        assert!(local.is_recommended);
        // Claude through the Messages API, disabled until its key is set.
        let claude = |env: fn(&str) -> Option<String>| {
            Catalog::builtin(env)
                .unwrap()
                .models()
                .iter()
                .find(|m| m.id == "anthropic/claude-sonnet-4-5")
                .map(|m| (m.enabled, m.provider.clone()))
                .unwrap()
        };
        assert_eq!(claude(|_| None), (false, "anthropic".to_owned()));
        assert!(claude(|name| (name == "ANTHROPIC_API_KEY").then(|| "sk-ant".into())).0);
    }

    #[test]
    fn providers_are_of_a_known_kind_and_openai_ones_have_a_base_url() {
        let catalog = |kind: &str, base_url: &str| {
            format!(
                "[providers.p]\nkind = \"{kind}\"\n{base_url}\n[[models]]\nid = \"p/m\"\n\
                 display_name = \"M\"\nprovider = \"p\"\nmodel_name = \"m\"\ncontext_window = 1000\n"
            )
        };
        // Anthropic's own API is the default base URL of `anthropic`.
        Catalog::parse(&catalog("anthropic", ""), |_| None).unwrap();
        Catalog::parse(
            &catalog("anthropic", "base_url = \"http://127.0.0.1:1/v1\""),
            |_| None,
        )
        .unwrap();
        assert_refused(&catalog("openai", ""), "base_url is required");
        assert_refused(
            &catalog("gemini", ""),
            "kind must be `openai`, `anthropic` or `local`",
        );
    }
}
