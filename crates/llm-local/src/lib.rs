//! Embedded CPU inference of a GGUF chat model behind the `ChatModel` port: the llama
//! architecture's forward pass in `llama` (SmolLM2-135M-Instruct is the model this is built
//! and tested for; candle reads the file and samples), with the model's tokenizer rebuilt
//! from the GGUF metadata and its ChatML chat template.
//!
//! Each [`LocalEngine`] owns one model on a dedicated thread that serves requests one at a
//! time from a bounded queue (a full queue answers `ProviderError::Unavailable` with a retry
//! delay), so the async runtime is never blocked. Tokens stream back as text deltas cut on
//! character boundaries; dropping the stream cancels the generation before the next token.
//! Generation stops on `<|im_end|>`, on the request's stop strings, at `max_tokens` or at the
//! end of the context window, and finishes with exact token usage.
//!
//! A `json_schema` response format is enforced by constrained decoding (`constraint`: the
//! schema compiled by llguidance masks every token that cannot continue a conforming
//! document), so such answers always parse and validate. The document is written compactly,
//! integers with at most 16 digits and numbers within ±(2⁵³ − 1) with at most 6 decimals,
//! and objects that name their properties closed to others unless the schema opens them (as
//! LangChain's tools leave them), so a small model cannot spend `max_tokens` on whitespace,
//! endless digits or invented keys (50 random schemas
//! in `tests/random_schemas.rs`). An answer the token limit cuts off anyway ends with
//! `FinishReason::Length`, a tool call as far as it was written.
//!
//! Tools work the same way: with tools, an answer to a user turn is constrained to one call
//! `{"name", "arguments"}` of one of them and returned as tool-call events (`tools`); an
//! answer after tool results is text. The request's tool choice overrides that: `required`
//! forces a call of one of the tools and a named function a call of that one (its arguments
//! constrained by its parameters) after any turn; `none` offers no tool, so the answer is
//! text.
//!
//! Prompts reuse the keys and values of earlier ones (`prefix_cache`): a chat's next turn,
//! or chats sharing a system prompt, only run the tokens after the longest prefix seen
//! recently (within [`LocalEngineOptions::prefix_cache_bytes`]), with answers identical to
//! those computed without it; usage reports the reused tokens as `cached_input_tokens`.
//!
//! Not in this slice: interpreting the Jinja `tokenizer.chat_template` (ChatML is
//! hard-coded; only the template's default system prompt is read). Weights stay in the
//! file's quantization (Q4_1 and Q8_0 products run on AVX2 kernels over f32 activations;
//! see `llama`).
//!
//! The engine computes on a pool of its own ([`LocalEngineOptions::threads`], by default
//! `CANDLE_NUM_THREADS` or the available parallelism); on a busy 2-core machine one thread
//! can beat two, so measure both.

mod constraint;
mod error;
mod files;
mod llama;
mod prefix_cache;
mod sampling;
mod template;
#[cfg(feature = "testing")]
pub mod testing;
mod text;
mod tokenizer;
mod tools;

pub use error::LoadError;
pub use files::find_model_file;
pub use llama::InstructionSet;

use std::{
    fs::File,
    io::BufReader,
    path::Path,
    sync::{
        Arc,
        mpsc::{Receiver, SyncSender, TrySendError, sync_channel},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use async_trait::async_trait;
use candle_core::quantized::gguf_file;
use sampling::Sampler;
use tessera_models::{
    Capabilities, ChatEvent, ChatModel, ChatRequest, ChatStream, FinishReason, ProviderError, Usage,
};
use tessera_prompts::TokenCounter;
use tokio::sync::mpsc;

pub use crate::tokenizer::LocalTokenCounter;
use crate::{
    constraint::{Grammars, mask_logits},
    llama::Llama,
    prefix_cache::PrefixCache,
    text::{Step, TextOutput},
    tokenizer::GgufTokenizer,
};

/// [`LocalEngineOptions::prefix_cache_bytes`]'s default: 256 MiB, about 5,800 positions of
/// SmolLM2-135M (46 KB each).
pub const DEFAULT_PREFIX_CACHE_BYTES: usize = 256 << 20;

/// The token that ends an assistant turn in ChatML.
const END_OF_TURN: &str = "<|im_end|>";

/// Options of a [`LocalEngine`].
#[derive(Debug, Clone)]
pub struct LocalEngineOptions {
    /// Compute threads of the engine's pool; `None`: `CANDLE_NUM_THREADS` when set (the
    /// variable the engine has always read), else the machine's available parallelism.
    pub threads: Option<usize>,
    /// Tokens of the generation when the request sets no `max_tokens`.
    pub default_max_tokens: u32,
    /// Context window (prompt + generation); `None`: the model's trained length.
    pub context_length: Option<usize>,
    /// Requests that may wait while one is generated; beyond that `stream` answers
    /// `Unavailable`.
    pub queue_capacity: usize,
    /// The delay suggested to callers when the queue is full.
    pub retry_after: Duration,
    /// Memory for the keys and values of recent prompts kept for reuse by later prompts
    /// that start the same way (besides the running one's); 0 turns reuse off.
    pub prefix_cache_bytes: usize,
    /// The widest instruction set the kernels may use (`None`: the widest this CPU has);
    /// a narrower one is for comparing the kernels on one machine.
    pub max_instruction_set: Option<InstructionSet>,
}

impl Default for LocalEngineOptions {
    fn default() -> Self {
        Self {
            threads: None,
            default_max_tokens: 256,
            context_length: None,
            queue_capacity: 4,
            retry_after: Duration::from_secs(1),
            prefix_cache_bytes: DEFAULT_PREFIX_CACHE_BYTES,
            max_instruction_set: None,
        }
    }
}

/// One generation handed to the worker thread.
struct Job {
    prompt: Vec<u32>,
    /// Structured output: only tokens that keep the answer valid against the schema.
    constraint: Option<llguidance::Matcher>,
    max_tokens: usize,
    sampling: Sampler,
    stops: Vec<String>,
    /// `ChatRequest::cache_scope`: whose earlier prompts this one may reuse.
    cache_scope: Option<String>,
    events: mpsc::UnboundedSender<Result<ChatEvent, ProviderError>>,
}

/// A GGUF chat model running on its own thread.
pub struct LocalEngine {
    jobs: SyncSender<Job>,
    tokenizer: Arc<GgufTokenizer>,
    grammars: Arc<Grammars>,
    default_system: Option<String>,
    context_length: usize,
    options: LocalEngineOptions,
}

impl std::fmt::Debug for LocalEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEngine")
            .field("context_length", &self.context_length)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl LocalEngine {
    /// Loads a GGUF model and starts its inference thread. Blocking (reads the file): call it
    /// at startup or from `spawn_blocking`.
    pub fn load(path: impl AsRef<Path>, options: LocalEngineOptions) -> Result<Self, LoadError> {
        let mut reader = BufReader::new(File::open(path.as_ref())?);
        let content = gguf_file::Content::read(&mut reader)?;
        let tokenizer = Arc::new(GgufTokenizer::from_gguf(&content)?);
        let end_of_turn = tokenizer
            .token_id(END_OF_TURN)
            .ok_or_else(|| LoadError::Metadata(format!("no {END_OF_TURN} token")))?;
        let grammars =
            Arc::new(Grammars::new(&tokenizer, end_of_turn).map_err(LoadError::Metadata)?);
        let default_system = match content.metadata.get("tokenizer.chat_template") {
            Some(value) => value
                .to_string()
                .ok()
                .and_then(|t| template::default_system_prompt(t)),
            None => Some(template::FALLBACK_SYSTEM_PROMPT.to_owned()),
        };
        let trained = content
            .metadata
            .get("llama.context_length")
            .and_then(|v| v.to_u32().ok())
            .map_or(2048, |n| n as usize);
        let context_length = options.context_length.unwrap_or(trained).min(trained);

        let threads = options.threads.unwrap_or_else(default_threads);
        let isa = InstructionSet::widest(options.max_instruction_set);
        tracing::info!(
            kernels = isa.name(),
            threads,
            "the embedded chat model is loaded"
        );
        let model = Llama::load(&content, &mut reader, threads, isa)?;

        let (jobs, queue) = sync_channel(options.queue_capacity);
        let worker = Worker {
            model,
            prefixes: PrefixCache::new(options.prefix_cache_bytes),
            tokenizer: tokenizer.clone(),
            end_of_turn,
        };
        std::thread::Builder::new()
            .name("tessera-llm-local".into())
            .spawn(move || worker.run(queue))
            .map_err(|e| LoadError::Thread(e.to_string()))?;
        Ok(Self {
            jobs,
            tokenizer,
            grammars,
            default_system,
            context_length,
            options,
        })
    }

    /// The context window (prompt and generation together), in tokens.
    pub fn context_length(&self) -> usize {
        self.context_length
    }

    /// The model's tokenizer.
    pub fn token_counter(&self) -> LocalTokenCounter {
        LocalTokenCounter {
            tokenizer: self.tokenizer.clone(),
        }
    }
}

#[async_trait]
impl ChatModel for LocalEngine {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            streaming: true,
            tools: true,
            vision: false,
            reasoning: false,
            json_schema: true,
        }
    }

    fn tokenizer(&self) -> Arc<dyn TokenCounter> {
        Arc::new(self.token_counter())
    }

    async fn stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError> {
        let (offered, calls_tool) = tools::plan(&request)?;
        let schema = if calls_tool {
            Some(tools::call_schema(offered))
        } else {
            request.response_format.as_ref().map(|f| f.schema.clone())
        };
        let constraint = schema
            .map(|schema| self.grammars.json_schema(&schema))
            .transpose()
            .map_err(ProviderError::InvalidRequest)?;
        let text = template::render(&request.messages, self.default_system.as_deref(), offered);
        let prompt = self
            .tokenizer
            .encode(&text)
            .map_err(|message| ProviderError::Upstream {
                status: None,
                message,
            })?;
        if prompt.len() >= self.context_length {
            return Err(ProviderError::InvalidRequest(format!(
                "the prompt has {} tokens; the context window is {}",
                prompt.len(),
                self.context_length
            )));
        }
        let requested = request
            .max_tokens
            .unwrap_or(self.options.default_max_tokens) as usize;
        let max_tokens = requested.min(self.context_length - prompt.len());
        let temperature = request.temperature.filter(|t| *t > 0.0).map(f64::from);
        let top_p = request
            .top_p
            .filter(|p| *p > 0.0 && *p < 1.0)
            .map(f64::from);
        let seed = request.seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        let (events, mut receiver) = mpsc::unbounded_channel();
        let job = Job {
            prompt,
            constraint,
            max_tokens,
            sampling: Sampler::new(seed, temperature, top_p),
            stops: request.stop,
            cache_scope: request.cache_scope,
            events,
        };
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                return Err(ProviderError::Unavailable {
                    message: "the local model is busy".into(),
                    retry_after: Some(self.options.retry_after),
                });
            }
            Err(TrySendError::Disconnected(_)) => {
                return Err(ProviderError::Unavailable {
                    message: "the local model stopped".into(),
                    retry_after: None,
                });
            }
        }
        let events = futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx));
        if calls_tool {
            return Ok(tools::as_tool_call(events, seed));
        }
        Ok(Box::pin(events))
    }
}

/// `CANDLE_NUM_THREADS` when it is a positive number, else the available parallelism.
fn default_threads() -> usize {
    std::env::var("CANDLE_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The model and what it needs, owned by the inference thread.
struct Worker {
    model: Llama,
    prefixes: PrefixCache,
    tokenizer: Arc<GgufTokenizer>,
    end_of_turn: u32,
}

impl Worker {
    fn run(mut self, queue: Receiver<Job>) {
        while let Ok(mut job) = queue.recv() {
            if job.events.is_closed() {
                continue;
            }
            let result = self.generate(&mut job);
            if let Err(e) = result {
                tracing::warn!(error = %e, "local generation failed");
                let _ = job.events.send(Err(ProviderError::Upstream {
                    status: None,
                    message: e.to_string(),
                }));
            }
        }
    }

    /// Runs one generation; returns early (without error) when the stream was dropped.
    fn generate(&mut self, job: &mut Job) -> candle_core::Result<()> {
        let mut output = TextOutput::new(&job.stops);
        let reuse = self
            .prefixes
            .prepare(&mut self.model, job.cache_scope.as_deref(), &job.prompt)
            .map_err(candle_core::Error::Msg)?;
        let mut logits = match self
            .model
            .forward(&job.prompt[reuse.cached..], reuse.cached)
        {
            Ok(logits) => logits,
            Err(message) => {
                self.prefixes.forget_working();
                return Err(candle_core::Error::Msg(message));
            }
        };
        tracing::debug!(
            prompt = job.prompt.len(),
            cached = reuse.cached,
            saved_bytes = self.prefixes.bytes(),
            "prompt prefix reused"
        );
        let mut position = job.prompt.len();
        let mut generated = 0usize;
        let mut stopped_by_string = false;
        let reason = loop {
            if generated >= job.max_tokens {
                break FinishReason::Length;
            }
            if let Some(matcher) = job.constraint.as_mut() {
                mask_logits(matcher, &mut logits).map_err(candle_core::Error::Msg)?;
            }
            let token = job
                .sampling
                .sample(&logits)
                .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
            generated += 1;
            if token == self.end_of_turn {
                break FinishReason::Stop;
            }
            let mut complete = false;
            if let Some(matcher) = job.constraint.as_mut() {
                matcher
                    .consume_token(token)
                    .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
                complete = matcher.is_stopped();
            }
            let step = if self.tokenizer.is_special(token) {
                Step::Continue(String::new())
            } else {
                output.push(self.tokenizer.token_bytes(token))
            };
            match step {
                Step::Continue(text) => {
                    if !text.is_empty() && job.events.send(Ok(ChatEvent::TextDelta(text))).is_err()
                    {
                        return Ok(());
                    }
                }
                Step::Stopped(text) => {
                    if !text.is_empty() {
                        let _ = job.events.send(Ok(ChatEvent::TextDelta(text)));
                    }
                    stopped_by_string = true;
                    break FinishReason::Stop;
                }
            }
            if job.events.is_closed() {
                return Ok(());
            }
            if complete {
                break FinishReason::Stop;
            }
            if generated >= job.max_tokens {
                break FinishReason::Length;
            }
            logits = self
                .model
                .forward(&[token], position)
                .map_err(candle_core::Error::Msg)?;
            position += 1;
        };
        if !stopped_by_string {
            // Text held back as a possible stop string, or an unfinished character.
            let rest = output.finish();
            if !rest.is_empty() {
                let _ = job.events.send(Ok(ChatEvent::TextDelta(rest)));
            }
        }
        let usage = Usage {
            input_tokens: u32::try_from(job.prompt.len()).unwrap_or(u32::MAX),
            output_tokens: u32::try_from(generated).unwrap_or(u32::MAX),
            reasoning_tokens: 0,
            cached_input_tokens: u32::try_from(reuse.cached).unwrap_or(u32::MAX),
        };
        let _ = job.events.send(Ok(ChatEvent::Finish { reason, usage }));
        Ok(())
    }
}
