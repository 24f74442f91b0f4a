//! The example service runs as its own binary: the first completion is answered by the
//! embedded engine, the second refused by the spent budget.

use std::process::Command;

#[test]
fn answers_then_refuses_once_the_budget_is_spent() {
    let output = Command::new(env!("CARGO_BIN_EXE_chat-service"))
        .arg("--model")
        .arg(tessera_llm_local::testing::model_path())
        .args(["--budget", "1", "What is the capital of France?"])
        .env("CANDLE_NUM_THREADS", "1")
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("answer: ") && lines[0].len() > "answer: ".len(),
        "{stdout}"
    );
    assert!(lines[1].starts_with("usage: "), "{stdout}");
    assert!(lines[2].starts_with("refused: "), "{stdout}");
    assert!(lines[2].ends_with(" of 1 credits used"), "{stdout}");
}
