//! The OTLP exporter's HTTP client: the project's reqwest, driven on the service's Tokio
//! runtime. The SDK's batch processor exports from a thread of its own that is no Tokio
//! worker, so each export is spawned onto the runtime and awaited from there.

use async_trait::async_trait;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use tokio::runtime::Handle;

/// Gives up on a collector that does not answer, so a stuck export cannot hold spans forever.
const EXPORT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct OtlpHttpClient {
    client: reqwest::Client,
    runtime: Handle,
}

impl OtlpHttpClient {
    pub fn new(runtime: Handle) -> Result<Self, String> {
        // reqwest's rustls backend needs a process-wide crypto provider; keep the one the
        // process installed, or install the same one the API does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot build the OTLP HTTP client: {e}"))?;
        Ok(Self { client, runtime })
    }
}

#[async_trait]
impl HttpClient for OtlpHttpClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let (parts, body) = request.into_parts();
        let sending = async move {
            let mut outgoing = client
                .request(parts.method, parts.uri.to_string())
                .body(body);
            for (name, value) in &parts.headers {
                outgoing = outgoing.header(name, value);
            }
            let answer = outgoing.send().await?;
            let status = answer.status();
            let headers = answer.headers().clone();
            let body = answer.bytes().await?;
            Ok::<_, reqwest::Error>((status, headers, body))
        };
        let (status, headers, body) = self.runtime.spawn(sending).await??;
        let mut response = Response::builder().status(status.as_u16());
        for (name, value) in &headers {
            response = response.header(name.as_str(), value.as_bytes());
        }
        Ok(response.body(body)?)
    }
}
