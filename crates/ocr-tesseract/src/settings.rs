//! Where the commands are, which languages to read, and how long a page may take; and the
//! check at start-up that all of it is there.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::process::{Outcome, run};

/// How OCR runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TesseractSettings {
    /// The `tesseract` command (a name looked up on `PATH`, or a path).
    pub tesseract: PathBuf,
    /// poppler's `pdftoppm` command.
    pub pdftoppm: PathBuf,
    /// Tesseract's language codes joined by `+` (`eng`, `eng+deu`); each must be installed.
    pub languages: String,
    /// The most time rendering and reading one page may take; the page is skipped beyond.
    pub page_timeout: Duration,
    /// A page is rendered to fit this many pixels on its longer side (about 300 dpi for
    /// A4 and Letter), which also bounds the memory an outsized page can take.
    pub max_side_pixels: u32,
}

impl Default for TesseractSettings {
    fn default() -> Self {
        Self {
            tesseract: PathBuf::from("tesseract"),
            pdftoppm: PathBuf::from("pdftoppm"),
            languages: "eng".to_owned(),
            page_timeout: Duration::from_secs(60),
            max_side_pixels: 3300,
        }
    }
}

/// Why OCR cannot run here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OcrUnavailable {
    #[error("{command} could not run: {reason}")]
    Command { command: String, reason: String },
    #[error("the OCR languages {missing} are not installed (installed: {installed})")]
    Languages { missing: String, installed: String },
    #[error("no OCR language is configured")]
    NoLanguage,
}

/// How long the start-up checks may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs both commands and lists tesseract's languages; the engine's version line.
pub(crate) fn check(settings: &TesseractSettings) -> Result<String, OcrUnavailable> {
    let wanted: Vec<&str> = settings
        .languages
        .split('+')
        .map(str::trim)
        .filter(|language| !language.is_empty())
        .collect();
    if wanted.is_empty() {
        return Err(OcrUnavailable::NoLanguage);
    }
    let folder = tempfile::tempdir().map_err(|error| OcrUnavailable::Command {
        command: "OCR".to_owned(),
        reason: format!("no temporary folder: {error}"),
    })?;
    // `pdftoppm -v` prints its version to standard error and exits with success.
    output(Command::new(&settings.pdftoppm).arg("-v"), &folder)?;
    let version = output(Command::new(&settings.tesseract).arg("--version"), &folder)?;
    let listed = output(
        Command::new(&settings.tesseract).arg("--list-langs"),
        &folder,
    )?;
    // The first line names the data folder; each further line is one language.
    let installed: Vec<&str> = listed.lines().skip(1).map(str::trim).collect();
    let missing: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|language| !installed.contains(language))
        .collect();
    if !missing.is_empty() {
        return Err(OcrUnavailable::Languages {
            missing: missing.join(", "),
            installed: installed.join(", "),
        });
    }
    Ok(version
        .lines()
        .next()
        .unwrap_or("tesseract")
        .trim()
        .to_owned())
}

/// What a short command printed (both streams: these commands print versions to either).
fn output(command: &mut Command, folder: &tempfile::TempDir) -> Result<String, OcrUnavailable> {
    let program = command.get_program().to_string_lossy().into_owned();
    let failed = |reason: String| OcrUnavailable::Command {
        command: program.clone(),
        reason,
    };
    match run(command, folder.path(), Instant::now() + CHECK_TIMEOUT) {
        Outcome::Done { stdout, stderr } => Ok(format!("{stdout}{stderr}")),
        Outcome::Failed { status, stderr } => Err(failed(format!("{status}: {}", stderr.trim()))),
        Outcome::TimedOut => Err(failed(format!(
            "no answer within {} s",
            CHECK_TIMEOUT.as_secs()
        ))),
        Outcome::NotStarted(error) => Err(failed(error.to_string())),
    }
}
