//! The tool choice of a completion request, one shape for every surface: `"auto"` (the
//! default: the model decides), `"none"` (no tool call), `"required"` (at least one call) or
//! one function by name, written as chat completions write it
//! (`{"type": "function", "function": {"name": …}}`, also `/v1/chats`) or as the Responses
//! API does (`{"type": "function", "name": …}`); either form is accepted everywhere, since
//! clients built for one API are pointed at the other.

use serde::Deserialize;
use serde_json::Value;
use tessera_models::ToolChoice;
use utoipa::ToSchema;

/// Whether the model must call a tool: `auto` (default), `none`, `required`, or a function.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ToolChoiceIn {
    Mode(ToolChoiceMode),
    Function(FunctionChoice),
}

/// `auto`: the model decides; `none`: it answers without calling a tool; `required`: it
/// calls at least one.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    Auto,
    None,
    Required,
}

/// A call of one function: `{"type": "function", "function": {"name"}}` (or, as the
/// Responses API writes it, `{"type": "function", "name"}`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FunctionChoice {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: FunctionChoiceType,
    pub function: Option<FunctionName>,
    /// The Responses API's spelling of `function.name`.
    pub name: Option<String>,
}

/// Only functions are chosen by name.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FunctionChoiceType {
    Function,
}

/// The function to call.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FunctionName {
    pub name: String,
}

/// What the messages of a refused choice say it may be.
pub const EXPECTED: &str = "must be `auto`, `none`, `required` or \
    {\"type\": \"function\", \"function\": {\"name\": …}}";

impl ToolChoiceIn {
    /// The domain's choice; a function named twice, differently, or not at all is refused.
    pub fn choice(self) -> Result<ToolChoice, String> {
        match self {
            ToolChoiceIn::Mode(ToolChoiceMode::Auto) => Ok(ToolChoice::Auto),
            ToolChoiceIn::Mode(ToolChoiceMode::None) => Ok(ToolChoice::None),
            ToolChoiceIn::Mode(ToolChoiceMode::Required) => Ok(ToolChoice::Required),
            ToolChoiceIn::Function(FunctionChoice { function, name, .. }) => {
                match (function.map(|f| f.name), name) {
                    (Some(name), None) | (None, Some(name)) => Ok(ToolChoice::Function(name)),
                    (Some(inner), Some(outer)) if inner == outer => Ok(ToolChoice::Function(inner)),
                    _ => Err(format!("{EXPECTED}: name the function once")),
                }
            }
        }
    }

    /// A choice as a JSON value of a request, e.g. OpenAI's `tool_choice`, whose other
    /// forms (`allowed_tools`, built-in tools) are refused with what it may be.
    pub fn parse(value: &Value) -> Result<ToolChoice, String> {
        serde_json::from_value::<ToolChoiceIn>(value.clone())
            .map_err(|_| EXPECTED.to_owned())?
            .choice()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_form_of_both_apis_is_read_and_anything_else_is_refused() {
        let parse = |value| ToolChoiceIn::parse(&value);
        assert_eq!(parse(json!("auto")), Ok(ToolChoice::Auto));
        assert_eq!(parse(json!("none")), Ok(ToolChoice::None));
        assert_eq!(parse(json!("required")), Ok(ToolChoice::Required));
        let named = Ok(ToolChoice::Function("get_weather".into()));
        assert_eq!(
            parse(json!({"type": "function", "function": {"name": "get_weather"}})),
            named
        );
        assert_eq!(
            parse(json!({"type": "function", "name": "get_weather"})),
            named
        );
        for refused in [
            json!("any"),
            json!({"type": "function"}),
            json!({"type": "function", "name": "a", "function": {"name": "b"}}),
            json!({"type": "allowed_tools", "mode": "auto", "tools": []}),
            json!({"type": "file_search"}),
            json!(true),
        ] {
            assert!(parse(refused.clone()).is_err(), "{refused}");
        }
    }
}
