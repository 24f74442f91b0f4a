//! Real MCP servers as child processes on free loopback ports, killed on drop: the Python
//! SDK's server (tests/mcp/tool_server.py) and the npm `@modelcontextprotocol/server-everything`.

use std::{
    net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::Once,
    time::{Duration, Instant},
};

use tessera_kernel::TargetPolicy;
use tessera_mcp::Endpoint;
use tessera_mcp_http::HttpMcpClient;

/// How long a server may take to start listening.
const STARTUP: Duration = Duration::from_secs(60);

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The process's crypto provider, as the binary installs it at start-up.
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A client that may reach loopback servers (the tests' servers are all on 127.0.0.1).
pub fn open_client() -> HttpMcpClient {
    install_crypto_provider();
    HttpMcpClient::new(TargetPolicy {
        allow_private_targets: true,
    })
    .unwrap()
}

pub fn endpoint(url: &str, timeout: Duration) -> Endpoint {
    Endpoint {
        url: url.to_owned(),
        headers: Vec::new(),
        timeout,
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server process, killed when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
    name: &'static str,
}

impl Server {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn start(name: &'static str, mut command: Command, port: u16) -> Self {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = command
            .spawn()
            .unwrap_or_else(|error| panic!("could not start {name}: {error}"));
        let mut server = Self { child, port, name };
        server.wait_until_listening();
        server
    }

    fn wait_until_listening(&mut self) {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let started = Instant::now();
        loop {
            if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("{} exited before listening: {status}", self.name);
            }
            if started.elapsed() > STARTUP {
                panic!(
                    "{} did not listen on {address} within {STARTUP:?}",
                    self.name
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Python that has the `mcp` SDK: TESSERA_MCP_PYTHON (set by `just test`), else
/// `python3` if it imports `mcp`; anything else fails the test with what to do.
fn mcp_python() -> String {
    let (python, from_env) = match std::env::var("TESSERA_MCP_PYTHON") {
        Ok(python) if !python.is_empty() => (python, true),
        _ => ("python3".to_owned(), false),
    };
    let imports = Command::new(&python)
        .args(["-c", "import mcp.server.mcpserver"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    assert!(
        imports,
        "{python} cannot import the MCP Python SDK ({}); run `just test`, which makes the venv \
         ~/.cache/tessera-venvs/mcp from tests/mcp/requirements.txt and exports \
         TESSERA_MCP_PYTHON, or set TESSERA_MCP_PYTHON to a Python that has it",
        if from_env {
            "from TESSERA_MCP_PYTHON"
        } else {
            "TESSERA_MCP_PYTHON is not set"
        }
    );
    python
}

/// tests/mcp/tool_server.py (the Python SDK), `page_size` tools a page (0: one page).
pub fn python_server(page_size: usize) -> Server {
    let port = free_port();
    let mut command = Command::new(mcp_python());
    command
        .arg(repo_root().join("tests/mcp/tool_server.py"))
        .args([
            "--port",
            &port.to_string(),
            "--page-size",
            &page_size.to_string(),
        ]);
    Server::start("tool_server.py", command, port)
}

/// `@modelcontextprotocol/server-everything` in Streamable HTTP mode.
pub fn everything_server() -> Server {
    let script = repo_root()
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        script.exists(),
        "{} is missing: run `npm ci --prefix tests/mcp` (`just test` does)",
        script.display()
    );
    let port = free_port();
    let mut command = Command::new("node");
    command
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    Server::start("server-everything", command, port)
}
