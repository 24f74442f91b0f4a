//! The sender against real HTTP listeners on loopback: what a receiver gets, which answers
//! count, the failures that are errors (refused connection, no answer in time), and targets
//! on the service's own network refused at delivery, by name or by address.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use tessera_webhooks::{OutgoingRequest, TargetPolicy, WebhookSender};
use tessera_webhooks_http::HttpWebhookSender;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
    sync::oneshot,
};

/// Accepts one connection, reads one request (head and `Content-Length` body), answers
/// with `status_line` and hands the raw request text back.
async fn receiver(status_line: &'static str) -> (String, oneshot::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks/tessera", listener.local_addr().unwrap());
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buffer = [0_u8; 4096];
        loop {
            let read = socket.read(&mut buffer).await.unwrap();
            request.extend_from_slice(&buffer[..read]);
            let text = String::from_utf8_lossy(&request).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .find_map(|line| {
                        let (name, value) = line.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if request.len() >= end + 4 + length || read == 0 {
                    break;
                }
            }
        }
        let answer = format!("{status_line}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        socket.write_all(answer.as_bytes()).await.unwrap();
        let _ = tx.send(String::from_utf8_lossy(&request).to_string());
    });
    (url, rx)
}

/// These receivers listen on loopback, which the default policy refuses.
const LOOPBACK_ALLOWED: TargetPolicy = TargetPolicy {
    allow_private_targets: true,
};

fn request(url: String) -> OutgoingRequest {
    OutgoingRequest {
        url,
        headers: vec![
            ("Tessera-Event", "file.ready".into()),
            ("Tessera-Signature", "t=1,v1=ab".into()),
        ],
        body: "{\"type\":\"file.ready\",\"data\":{\"name\":\"r\u{e9}sum\u{e9}.pdf\"}}".into(),
    }
}

#[tokio::test]
async fn the_receiver_gets_the_body_and_headers_and_its_status_is_returned() {
    let (url, received) = receiver("HTTP/1.1 202 Accepted").await;
    let sender = HttpWebhookSender::new(Duration::from_secs(5), LOOPBACK_ALLOWED).unwrap();
    let status = sender.post(&request(url)).await.unwrap();
    assert_eq!(status, 202);
    let raw = received.await.unwrap();
    let lower = raw.to_ascii_lowercase();
    assert!(raw.starts_with("POST /hooks/tessera HTTP/1.1\r\n"), "{raw}");
    assert!(
        lower.contains("content-type: application/json\r\n"),
        "{raw}"
    );
    assert!(lower.contains("tessera-event: file.ready\r\n"), "{raw}");
    assert!(lower.contains("tessera-signature: t=1,v1=ab\r\n"), "{raw}");
    assert!(lower.contains("user-agent: tessera-webhooks/"), "{raw}");
    assert!(
        raw.ends_with("{\"type\":\"file.ready\",\"data\":{\"name\":\"r\u{e9}sum\u{e9}.pdf\"}}")
    );
}

#[tokio::test]
async fn error_answers_are_answers_and_redirects_are_not_followed() {
    let (url, _received) = receiver("HTTP/1.1 500 Internal Server Error").await;
    let sender = HttpWebhookSender::new(Duration::from_secs(5), LOOPBACK_ALLOWED).unwrap();
    assert_eq!(sender.post(&request(url)).await.unwrap(), 500);

    let (url, _received) =
        receiver("HTTP/1.1 307 Temporary Redirect\r\nlocation: http://10.0.0.1/").await;
    assert_eq!(sender.post(&request(url)).await.unwrap(), 307);
}

#[tokio::test]
async fn a_refused_connection_and_a_silent_receiver_are_errors() {
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let sender = HttpWebhookSender::new(Duration::from_millis(500), LOOPBACK_ALLOWED).unwrap();
    let error = sender.post(&request(url)).await.unwrap_err();
    assert!(!error.0.is_empty());

    // Accepts the connection but never answers.
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", silent.local_addr().unwrap());
    let hold = tokio::spawn(async move {
        let (socket, _) = silent.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        drop(socket);
    });
    let error = sender.post(&request(url)).await.unwrap_err();
    assert_eq!(error.0, "the receiver did not answer in time");
    hold.abort();
}

#[tokio::test]
async fn private_targets_are_refused_at_delivery_by_name_and_by_address() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let sender = HttpWebhookSender::new(Duration::from_secs(2), TargetPolicy::default()).unwrap();
    // The sender does not judge names: `localhost` stands for any internal name, refused
    // because it resolves only to loopback addresses.
    for url in [
        format!("http://localhost:{port}/"),
        format!("http://127.0.0.1:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        // IPv6 forms carrying 127.0.0.1: IPv4-compatible, NAT64, 6to4.
        format!("http://[::127.0.0.1]:{port}/"),
        format!("http://[64:ff9b::7f00:1]:{port}/"),
        format!("http://[2002:7f00:1::]:{port}/"),
    ] {
        let error = sender.post(&request(url.clone())).await.unwrap_err();
        assert!(error.0.contains("private"), "{url}: {}", error.0);
    }
    // Nothing connected to the receiver.
    let accepted = tokio::time::timeout(Duration::from_millis(300), listener.accept()).await;
    assert!(accepted.is_err(), "a refused delivery reached the receiver");
}
