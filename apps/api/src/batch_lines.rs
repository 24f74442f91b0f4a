//! A batch's lines answered by the same code as their endpoints, without HTTP: each body is
//! parsed and checked as the endpoint's JSON body is, then runs as the batch's creator
//! through `/openai/v1/chat/completions`', `/openai/v1/embeddings`' or
//! `/openai/v1/responses`' pipeline (scopes, budgets, usage, audit alike). A failure is
//! kept as the OpenAI error the endpoint would have answered; once the creator's API key or
//! client is revoked or expires, the remaining lines are refused as its requests would be. While the process drains for
//! shutdown no line runs: the batch is taken up again after the restart.

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Map, Value};
use tessera_batches::{BatchEndpoint, LineExecutor, LineResponse};
use tessera_identity::{IdentityError, TokenError};
use tessera_kernel::{DomainError, Principal, Scope};
use tessera_wire::{openai::error::render, parse};

use crate::{
    caller::Caller,
    problem::ApiError,
    routes::openai::{chat, embeddings, responses},
    state::AppState,
};

/// The serving process's pipelines, as a batch runner's line executor.
pub struct PipelineLines(pub AppState);

#[async_trait]
impl LineExecutor for PipelineLines {
    async fn execute(
        &self,
        owner: &Principal,
        endpoint: BatchEndpoint,
        body: Map<String, Value>,
    ) -> Option<LineResponse> {
        if self.0.draining.is_draining() {
            return None;
        }
        let caller = Caller::from(owner.clone());
        let answered = match self.standing(owner).await? {
            Err(refused) => Err(refused),
            // The scope every batch endpoint's route asks for.
            Ok(()) => match caller.require(&Scope::CHATS_INVOKE) {
                Err(refused) => Err(refused.into()),
                Ok(()) => self.answer(&caller, endpoint, &Value::Object(body)).await,
            },
        };
        Some(match answered {
            Ok(body) => LineResponse {
                status_code: 200,
                body,
            },
            Err(problem) => {
                let (status, error) = render(&problem.parts());
                LineResponse {
                    status_code: status,
                    body: serde_json::to_value(&error).unwrap_or(Value::Null),
                }
            }
        })
    }

    fn stopping(&self) -> bool {
        self.0.draining.is_draining()
    }
}

impl PipelineLines {
    /// Whether the batch's creator still stands, checked before every line as the access
    /// middleware checks every request: a revoked or expired API key or client answers its
    /// remaining lines 401 `invalid_token`. `None` when that cannot be told now (the store
    /// is unavailable): the line is not run, and the batch is taken up again later.
    async fn standing(&self, owner: &Principal) -> Option<Result<(), ApiError>> {
        match self.0.identity.still_stands(owner).await {
            Ok(()) => Some(Ok(())),
            Err(IdentityError::InvalidToken(TokenError::Unavailable))
            | Err(IdentityError::Domain(_)) => None,
            Err(error) => Some(Err(DomainError::Unauthenticated {
                code: "invalid_token",
                message: format!("the batch's creator no longer authenticates: {error}"),
            }
            .into())),
        }
    }

    async fn answer(
        &self,
        caller: &Caller,
        endpoint: BatchEndpoint,
        body: &Value,
    ) -> Result<Value, ApiError> {
        // The endpoint's own parsing and checks, on the line's body as bytes.
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        let state = &self.0;
        match endpoint {
            BatchEndpoint::ChatCompletions => {
                let request = parse::json(&bytes)?;
                json_of(&chat::complete_whole(state, caller, request).await?)
            }
            BatchEndpoint::Embeddings => {
                let request = parse::json(&bytes)?;
                json_of(&embeddings::embed(state, caller, request).await?)
            }
            BatchEndpoint::Responses => {
                let request = parse::json(&bytes)?;
                responses::respond_whole(state, caller, request).await
            }
        }
    }
}

fn json_of(answer: &impl Serialize) -> Result<Value, ApiError> {
    serde_json::to_value(answer).map_err(|error| {
        ApiError::from(DomainError::internal(format!(
            "a batch line's answer: {error}"
        )))
    })
}
