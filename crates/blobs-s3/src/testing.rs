//! A real S3-compatible server for tests: moto's (PyPI `moto[server]`), installed into
//! `~/.cache/tessera-venvs/moto` (or `$TESSERA_MOTO_VENV`) when missing by
//! `tests/moto/setup.sh`, started on a free loopback port, killed when dropped. When it
//! cannot be installed or started, [`start`] panics with the reason: a test never passes
//! without having talked to the server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    os::unix::process::CommandExt,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// A running moto S3 server on loopback; killed when dropped.
pub struct Moto {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl Drop for Moto {
    /// Kills the process group (`timeout` and the `moto_server` it runs): killing `timeout`
    /// alone would leave its child running.
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where moto is installed: `$TESSERA_MOTO_VENV`, or `~/.cache/tessera-venvs/moto`.
pub fn venv() -> PathBuf {
    std::env::var_os("TESSERA_MOTO_VENV").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/tessera-venvs/moto"),
        PathBuf::from,
    )
}

/// A raw HTTP request to moto (no TLS, no signing: moto accepts it), returning the status.
pub async fn http(port: u16, method: &str, path: &str) -> Option<u16> {
    let mut socket = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    socket.write_all(request.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    socket.read_to_end(&mut answer).await.ok()?;
    String::from_utf8_lossy(&answer)
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
}

/// Installs moto when missing and starts its server; panics with the reason when it cannot.
pub async fn start() -> Moto {
    let venv = venv();
    let setup = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/moto/setup.sh");
    let status = Command::new("bash")
        .arg(setup)
        .arg(&venv)
        .status()
        .expect("S3 tests FAILED: cannot run tests/moto/setup.sh");
    assert!(
        status.success(),
        "S3 tests FAILED: moto[server] could not be installed into {} (is PyPI reachable?)",
        venv.display()
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let child = Command::new("timeout")
        .args(["--kill-after=5s", "600s"])
        .arg(venv.join("bin/moto_server"))
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("S3 tests FAILED: cannot start moto_server");
    let moto = Moto { child, port };
    let deadline = Instant::now() + Duration::from_secs(60);
    while http(port, "GET", "/").await.is_none() {
        assert!(
            Instant::now() < deadline,
            "S3 tests FAILED: moto_server did not start within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    moto
}

impl Moto {
    /// The endpoint URL (`http://127.0.0.1:<port>`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Creates a bucket (moto accepts unsigned requests).
    pub async fn create_bucket(&self, bucket: &str) {
        assert_eq!(
            http(self.port, "PUT", &format!("/{bucket}")).await,
            Some(200),
            "moto did not create bucket {bucket}"
        );
    }
}
