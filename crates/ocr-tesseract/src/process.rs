//! Running one command to its end or to a deadline, whichever comes first.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How a command ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// It exited with success; what it printed, and wrote to standard error (warnings).
    Done { stdout: String, stderr: String },
    /// It exited with a failure.
    Failed { status: ExitStatus, stderr: String },
    /// It was still running at the deadline and was killed.
    TimedOut,
    /// It could not be started (not installed, not executable).
    NotStarted(std::io::Error),
}

/// The most of a command's output (each stream) kept.
const MAX_OUTPUT: u64 = 16 * 1024;

/// Runs `command` with no input, its output collected in files of `folder` (a pipe left
/// unread could fill and stall it), killing it at `deadline`.
pub(crate) fn run(command: &mut Command, folder: &Path, deadline: Instant) -> Outcome {
    let (stdout_file, stdout) = match capture(folder) {
        Ok(capture) => capture,
        Err(error) => return Outcome::NotStarted(error),
    };
    let (stderr_file, stderr) = match capture(folder) {
        Ok(capture) => capture,
        Err(error) => return Outcome::NotStarted(error),
    };
    let mut child = match command
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
    {
        Ok(child) => child,
        Err(error) => return Outcome::NotStarted(error),
    };
    // Poll: short at first (most pages take well under a second), then every 20 ms.
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Outcome::TimedOut;
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(error) => {
                let _ = child.kill();
                let _ = child.wait();
                return Outcome::NotStarted(error);
            }
        }
    };
    let stderr = read_back(stderr_file);
    if status.success() {
        Outcome::Done {
            stdout: read_back(stdout_file),
            stderr,
        }
    } else {
        Outcome::Failed { status, stderr }
    }
}

/// An anonymous file in `folder`, and a handle of it for a child's stream.
fn capture(folder: &Path) -> std::io::Result<(File, Stdio)> {
    let file = tempfile::tempfile_in(folder)?;
    let stream = Stdio::from(file.try_clone()?);
    Ok((file, stream))
}

fn read_back(mut file: File) -> String {
    let mut bytes = Vec::new();
    let _ = file.seek(SeekFrom::Start(0));
    let _ = file.take(MAX_OUTPUT).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_command_past_its_deadline_is_killed() {
        let folder = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let outcome = run(
            Command::new("sleep").arg("30"),
            folder.path(),
            Instant::now() + Duration::from_millis(100),
        );
        assert!(matches!(outcome, Outcome::TimedOut), "{outcome:?}");
        // Killed, not waited for: far less than the 30 s it asked for.
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn failures_keep_their_complaint_and_missing_programs_do_not_start() {
        let folder = tempfile::tempdir().unwrap();
        let later = Instant::now() + Duration::from_secs(30);
        let outcome = run(
            Command::new("sh").args(["-c", "echo broken >&2; exit 3"]),
            folder.path(),
            later,
        );
        match outcome {
            Outcome::Failed { status, stderr } => {
                assert_eq!(status.code(), Some(3));
                assert_eq!(stderr.trim(), "broken");
            }
            other => panic!("{other:?}"),
        }
        let outcome = run(
            &mut Command::new("/nonexistent/tesseract"),
            folder.path(),
            later,
        );
        assert!(matches!(outcome, Outcome::NotStarted(_)), "{outcome:?}");
    }
}
