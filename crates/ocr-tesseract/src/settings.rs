//! Where the commands are, which languages to read, and how long a page may take; and the
//! check at start-up that all of it is there.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use tessera_knowledge::FileFormat;

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
    /// The most time rendering and reading one page, or reading one uploaded image, may
    /// take; the page is skipped (the image fails) beyond.
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

/// What the start-up checks found: the engine's version line and the image formats it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Detected {
    pub version: String,
    pub image_formats: Vec<FileFormat>,
}

/// Runs both commands and lists tesseract's languages.
pub(crate) fn check(settings: &TesseractSettings) -> Result<Detected, OcrUnavailable> {
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
    Ok(Detected {
        version: version
            .lines()
            .next()
            .unwrap_or("tesseract")
            .trim()
            .to_owned(),
        image_formats: image_formats(&version),
    })
}

/// The uploaded image formats the engine reads, from its `--version` output, which lists the
/// image libraries leptonica was built with (`libgif 5.2.1 : libjpeg 6b … : libwebp 1.2.4`):
/// PNG and JPEG always (every build Tesseract supports reads them), GIF and WebP when their
/// library is listed.
pub(crate) fn image_formats(version: &str) -> Vec<FileFormat> {
    let listed = |library: &str| {
        version
            .split([':', '\n'])
            .any(|entry| entry.trim().starts_with(library))
    };
    let mut formats = vec![FileFormat::Png, FileFormat::Jpeg];
    if listed("libgif") {
        formats.push(FileFormat::Gif);
    }
    if listed("libwebp") {
        formats.push(FileFormat::Webp);
    }
    formats
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gif_and_webp_are_read_when_leptonica_lists_their_libraries() {
        let debian = "tesseract 5.3.0\n leptonica-1.82.0\n  libgif 5.2.1 : libjpeg 6b \
            (libjpeg-turbo 2.1.2) : libpng 1.6.39 : libtiff 4.5.0 : zlib 1.2.13 : libwebp 1.2.4 \
            : libopenjp2 2.5.0\n Found AVX2\n";
        assert_eq!(
            image_formats(debian),
            [
                FileFormat::Png,
                FileFormat::Jpeg,
                FileFormat::Gif,
                FileFormat::Webp
            ]
        );
        let lean =
            "tesseract 4.1.1\n leptonica-1.79.0\n  libjpeg 8d : libpng 1.6.37 : zlib 1.2.11\n";
        assert_eq!(image_formats(lean), [FileFormat::Png, FileFormat::Jpeg]);
    }
}
