//! The hook client against real HTTP services on loopback: what a service is sent, each
//! verdict it can give, and each way it can fail (an error status, a body that is no
//! verdict, no answer in time, a refused connection), and services on the deployment's
//! own network refused unless the target policy allows them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use tessera_guardrails::{
    AppliesTo, Direction, FailMode, GuardrailHook, HookError, HookRequest, HookSettings,
    HookVerdict,
};
use tessera_guardrails_http::HttpGuardrailHook;
use tessera_kernel::TargetPolicy;
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::TcpListener,
    sync::oneshot,
};

/// A service that answers one request with `status` and `body` after `delay`, and hands
/// back the request's head and body.
async fn service(
    status: &'static str,
    body: &'static str,
    delay: Duration,
) -> (String, oneshot::Receiver<(String, String)>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/check", listener.local_addr().unwrap());
    let (sent, received) = oneshot::channel();
    tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        let mut socket = BufReader::new(socket);
        let mut head = String::new();
        let mut length = 0;
        loop {
            let mut line = String::new();
            socket.read_line(&mut line).await.unwrap();
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
            let end = line == "\r\n";
            head.push_str(&line);
            if end {
                break;
            }
        }
        let mut payload = vec![0; length];
        socket.read_exact(&mut payload).await.unwrap();
        let _ = sent.send((head, String::from_utf8(payload).unwrap()));
        tokio::time::sleep(delay).await;
        let answer = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = socket.get_mut().write_all(answer.as_bytes()).await;
    });
    (url, received)
}

/// These services listen on loopback, which the default policy refuses.
const LOOPBACK_ALLOWED: TargetPolicy = TargetPolicy {
    allow_private_targets: true,
};

fn settings(url: &str, timeout: Duration) -> HookSettings {
    HookSettings {
        url: url.to_owned(),
        timeout,
        fail_mode: FailMode::Closed,
        applies_to: AppliesTo::Both,
    }
}

async fn ask(
    hook: &HttpGuardrailHook,
    url: &str,
    timeout: Duration,
) -> Result<HookVerdict, HookError> {
    let texts = ["Write to ⟦EMAIL_1⟧", "and [REDACTED:PHONE]"];
    let request = HookRequest {
        direction: Direction::Input,
        texts: &texts,
    };
    hook.check(&settings(url, timeout), request).await
}

const SECONDS: Duration = Duration::from_secs(5);

#[tokio::test]
async fn the_service_gets_the_texts_and_its_verdict_is_returned() {
    let hook = HttpGuardrailHook::new(LOOPBACK_ALLOWED).unwrap();
    let (url, received) = service("200 OK", r#"{"action":"allow"}"#, Duration::ZERO).await;
    assert_eq!(ask(&hook, &url, SECONDS).await, Ok(HookVerdict::Allow));
    let (head, body) = received.await.unwrap();
    assert!(head.starts_with("POST /check HTTP/1.1\r\n"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json\r\n"),
        "{head}"
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap(),
        serde_json::json!({"direction": "input", "texts": ["Write to ⟦EMAIL_1⟧", "and [REDACTED:PHONE]"]})
    );

    let (url, _) = service(
        "200 OK",
        r#"{"action":"block","reason":"off-topic request"}"#,
        Duration::ZERO,
    )
    .await;
    assert_eq!(
        ask(&hook, &url, SECONDS).await,
        Ok(HookVerdict::Block {
            reason: "off-topic request".into()
        })
    );
    let (url, _) = service("200 OK", r#"{"action":"block"}"#, Duration::ZERO).await;
    assert_eq!(
        ask(&hook, &url, SECONDS).await,
        Ok(HookVerdict::Block {
            reason: String::new()
        }),
        "the reason is optional"
    );
}

#[tokio::test]
async fn an_error_status_or_a_body_that_is_no_verdict_is_a_failure() {
    let hook = HttpGuardrailHook::new(LOOPBACK_ALLOWED).unwrap();
    let (url, _) = service("503 Service Unavailable", "{}", Duration::ZERO).await;
    let error = ask(&hook, &url, SECONDS).await.unwrap_err();
    assert!(
        matches!(&error, HookError::Unavailable(why) if why.contains("503")),
        "{error:?}"
    );
    for nonsense in [r#"{"action":"maybe"}"#, "allow", r#"{"verdict":"allow"}"#] {
        let (url, _) = service("200 OK", nonsense, Duration::ZERO).await;
        let error = ask(&hook, &url, SECONDS).await.unwrap_err();
        assert!(
            matches!(error, HookError::InvalidAnswer(_)),
            "{nonsense}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_service_that_does_not_answer_in_time_or_at_all_is_a_failure() {
    let hook = HttpGuardrailHook::new(LOOPBACK_ALLOWED).unwrap();
    let (url, _) = service("200 OK", r#"{"action":"allow"}"#, Duration::from_secs(3)).await;
    let error = ask(&hook, &url, Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(error, HookError::Timeout);

    // Nothing listens on a port just released.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/check", closed.local_addr().unwrap());
    drop(closed);
    let error = ask(&hook, &url, SECONDS).await.unwrap_err();
    assert!(matches!(error, HookError::Unavailable(_)), "{error:?}");
}

#[tokio::test]
async fn services_on_the_deployments_own_network_are_refused_by_default() {
    let hook = HttpGuardrailHook::new(TargetPolicy::default()).unwrap();
    let (url, received) = service("200 OK", r#"{"action":"allow"}"#, Duration::ZERO).await;
    let error = ask(&hook, &url, SECONDS).await.unwrap_err();
    assert!(
        matches!(&error, HookError::Unavailable(why) if why.contains("private")),
        "{error:?}"
    );
    let by_name = url.replace("127.0.0.1", "localhost");
    let error = ask(&hook, &by_name, SECONDS).await.unwrap_err();
    assert!(
        matches!(&error, HookError::Unavailable(why) if why.contains("private")),
        "{error:?}"
    );
    drop(received);
}
