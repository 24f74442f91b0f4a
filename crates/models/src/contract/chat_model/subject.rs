//! What the `ChatModel` checks run on: the adapter, the model name its requests carry, what
//! its backend is declared to do beyond the port's capability flags, and what a check
//! concluded (it held, or it was skipped and why).

use std::{sync::Arc, time::Duration};

use crate::ChatModel;

/// One adapter, ready to be checked.
#[derive(Clone)]
pub struct ChatModelUnderTest {
    pub model: Arc<dyn ChatModel>,
    /// The `model` of every request (the backend's own name for the model).
    pub model_name: String,
    pub backend: Backend,
    /// The longest any one answer may take (they are all short), the first event of a
    /// stream included: a check that waits longer fails instead of hanging.
    pub answer_within: Duration,
}

impl ChatModelUnderTest {
    /// `model` asked for `model_name`, each answer within 30 s.
    pub fn new(model: Arc<dyn ChatModel>, model_name: impl Into<String>, backend: Backend) -> Self {
        Self {
            model,
            model_name: model_name.into(),
            backend,
            answer_within: Duration::from_secs(30),
        }
    }
}

impl std::fmt::Debug for ChatModelUnderTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatModelUnderTest")
            .field("capabilities", &self.model.capabilities())
            .field("model_name", &self.model_name)
            .field("backend", &self.backend)
            .field("answer_within", &self.answer_within)
            .finish()
    }
}

/// What the backend behind the adapter does with a request, where the port's capability
/// flags do not say: a check that depends on something declared absent is skipped, by name
/// and with the field that made it so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    /// A generation stops at `max_tokens` (a real model does; a scripted answer, such as a
    /// proxy's mock response, is the same whatever the limit).
    pub honours_max_tokens: bool,
    /// A generation stops before the first of the request's stop strings.
    pub honours_stop_sequences: bool,
    /// The same request at temperature 0 gets the same answer every time: a real model
    /// decoded greedily on one machine, or a scripted answer. Hosted models often do not.
    pub repeats_greedy_answers: bool,
    /// A model name the backend serves no model under, whose request must be refused as
    /// invalid; `None` for a backend that answers any name with its one model.
    pub unknown_model: Option<String>,
    /// The context window in tokens, when a prompt longer than it must be refused as
    /// invalid; `None` when the backend has none (a scripted answer) or it is not known.
    pub context_window: Option<u32>,
}

impl Backend {
    /// A real model: it honours `max_tokens` and stop strings and, at temperature 0,
    /// repeats its answers; no unknown model name or context window declared.
    pub fn real_model() -> Self {
        Self {
            honours_max_tokens: true,
            honours_stop_sequences: true,
            repeats_greedy_answers: true,
            unknown_model: None,
            context_window: None,
        }
    }

    /// A scripted answer (a mock or a stub behind a real server): the same every time,
    /// whatever `max_tokens` or the stop strings say; no unknown model name declared.
    pub fn scripted() -> Self {
        Self {
            honours_max_tokens: false,
            honours_stop_sequences: false,
            repeats_greedy_answers: true,
            unknown_model: None,
            context_window: None,
        }
    }
}

/// What one check concluded (a broken promise is a panic, not a verdict).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The promises it states held.
    Held,
    /// It did not run: the model or its backend is declared not to do what it checks.
    Skipped(String),
}

/// Skipped because `reason`.
pub(crate) fn skipped(reason: impl Into<String>) -> Verdict {
    Verdict::Skipped(reason.into())
}
