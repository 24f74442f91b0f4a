//! OCR with Tesseract: [`Tesseract`] implements the knowledge domain's [`TextRecognizer`] by
//! rendering each PDF page to a grey image with poppler's `pdftoppm` and reading it with the
//! `tesseract` command (Debian's `poppler-utils`, `tesseract-ocr` and its language data), and
//! by handing uploaded images (PNG and JPEG; GIF and WebP when the engine's leptonica was
//! built with their libraries, as its `--version` says) to `tesseract` as they are. Each page
//! or image runs in its own processes under one time limit per page; a damaged image fails
//! with its decoder's complaint. Processes rather than library bindings: a page that hangs or
//! crashes the renderer or the engine is killed and skipped while the service runs on, and
//! the build links against neither library.

mod process;
mod settings;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use tessera_knowledge::{FileFormat, RecognitionError, TextRecognizer};

use crate::process::{Outcome, run};
pub use crate::settings::{OcrUnavailable, TesseractSettings};

/// The [`TextRecognizer`] over the `pdftoppm` and `tesseract` commands.
#[derive(Debug, Clone)]
pub struct Tesseract {
    settings: TesseractSettings,
    version: String,
    image_formats: Vec<FileFormat>,
}

impl Tesseract {
    /// Checks that both commands run and that every configured language is installed, and
    /// which image formats the engine reads.
    pub fn detect(settings: TesseractSettings) -> Result<Self, OcrUnavailable> {
        let detected = settings::check(&settings)?;
        Ok(Self {
            settings,
            version: detected.version,
            image_formats: detected.image_formats,
        })
    }

    /// The engine's version line (`tesseract 5.3.0`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The uploaded image formats it reads: PNG and JPEG, and GIF and WebP when the engine
    /// was built with their libraries.
    pub fn image_formats(&self) -> &[FileFormat] {
        &self.image_formats
    }

    pub fn settings(&self) -> &TesseractSettings {
        &self.settings
    }

    /// Renders and reads one page of `pdf` within the time limit per page.
    fn page(&self, folder: &Path, pdf: &Path, page: u32) -> Result<String, RecognitionError> {
        let settings = &self.settings;
        let deadline = Instant::now() + settings.page_timeout;
        let timed_out = || RecognitionError::TimedOut(settings.page_timeout);
        let image = folder.join(format!("page-{page}"));
        let number = page.to_string();
        let render = run(
            Command::new(&settings.pdftoppm)
                .args(["-gray", "-singlefile", "-f", &number, "-l", &number])
                .args(["-scale-to", &settings.max_side_pixels.to_string()])
                .arg(pdf)
                .arg(&image),
            folder,
            deadline,
        );
        let render_warnings = match render {
            Outcome::Done { stderr, .. } => stderr,
            Outcome::TimedOut => return Err(timed_out()),
            Outcome::NotStarted(error) => {
                return Err(RecognitionError::Failed(format!(
                    "{} could not start: {error}",
                    settings.pdftoppm.display()
                )));
            }
            Outcome::Failed { stderr, .. } => {
                return Err(RecognitionError::Unrenderable(first_line(&stderr)));
            }
        };
        let image = image.with_extension("pgm");
        if !image.is_file() {
            return Err(RecognitionError::Unrenderable(first_line(&render_warnings)));
        }
        let text_base = folder.join(format!("text-{page}"));
        let read = run(
            Command::new(&settings.tesseract)
                .arg(&image)
                .arg(&text_base)
                .args(["-l", &settings.languages, "--dpi", "300", "--psm", "3"])
                // One thread per page: workers already run files side by side.
                .env("OMP_THREAD_LIMIT", "1"),
            folder,
            deadline,
        );
        // The image is large and read once.
        let _ = std::fs::remove_file(&image);
        match read {
            Outcome::Done { .. } => {}
            Outcome::TimedOut => return Err(timed_out()),
            Outcome::NotStarted(error) => {
                return Err(RecognitionError::Failed(format!(
                    "{} could not start: {error}",
                    settings.tesseract.display()
                )));
            }
            Outcome::Failed { status, stderr } => {
                return Err(RecognitionError::Failed(format!(
                    "tesseract ended with {status}: {}",
                    first_line(&stderr)
                )));
            }
        }
        let text_file = text_base.with_extension("txt");
        let text = std::fs::read(&text_file)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .map_err(|error| RecognitionError::Failed(format!("tesseract's output: {error}")))?;
        let _ = std::fs::remove_file(&text_file);
        // A damaged image renders as a blank page with the renderer's complaint: name it.
        if text.trim().is_empty() && !render_warnings.trim().is_empty() {
            return Err(RecognitionError::Unrenderable(first_line(&render_warnings)));
        }
        Ok(text)
    }

    /// Reads one image file of `format` within the time limit per page. The image's own
    /// resolution is used (Tesseract estimates one when it has none); a damaged image is
    /// [`RecognitionError::Undecodable`] with the decoder's complaint.
    fn read_image(
        &self,
        folder: &Path,
        image: &[u8],
        format: FileFormat,
    ) -> Result<String, RecognitionError> {
        let settings = &self.settings;
        let deadline = Instant::now() + settings.page_timeout;
        let extension = match format {
            FileFormat::Jpeg => "jpg",
            other => other.as_str(),
        };
        let file = folder.join(format!("image.{extension}"));
        std::fs::write(&file, image).map_err(|error| {
            RecognitionError::Failed(format!("the image could not be written for OCR: {error}"))
        })?;
        let text_base = folder.join("text");
        let read = run(
            Command::new(&settings.tesseract)
                .arg(&file)
                .arg(&text_base)
                .args(["-l", &settings.languages, "--psm", "3"])
                // One thread per image: workers already run files side by side.
                .env("OMP_THREAD_LIMIT", "1"),
            folder,
            deadline,
        );
        match read {
            Outcome::Done { .. } => {}
            Outcome::TimedOut => return Err(RecognitionError::TimedOut(settings.page_timeout)),
            Outcome::NotStarted(error) => {
                return Err(RecognitionError::Failed(format!(
                    "{} could not start: {error}",
                    settings.tesseract.display()
                )));
            }
            // Leptonica reads the image first; when it cannot, it says so (`pixRead`).
            Outcome::Failed { stderr, .. } if stderr.contains("pixRead") => {
                return Err(RecognitionError::Undecodable(complaint(&stderr)));
            }
            Outcome::Failed { status, stderr } => {
                return Err(RecognitionError::Failed(format!(
                    "tesseract ended with {status}: {}",
                    first_line(&stderr)
                )));
            }
        }
        std::fs::read(text_base.with_extension("txt"))
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .map_err(|error| RecognitionError::Failed(format!("tesseract's output: {error}")))
    }
}

impl TextRecognizer for Tesseract {
    fn pdf_pages(
        &self,
        document: &[u8],
        pages: &[u32],
        each: &mut dyn FnMut(u32, Result<String, RecognitionError>),
    ) {
        let written = tempfile::tempdir().and_then(|folder| {
            let pdf = folder.path().join("document.pdf");
            std::fs::write(&pdf, document).map(|()| (folder, pdf))
        });
        let (folder, pdf) = match written {
            Ok(written) => written,
            Err(error) => {
                for &page in pages {
                    each(
                        page,
                        Err(RecognitionError::Failed(format!(
                            "the document could not be written for OCR: {error}"
                        ))),
                    );
                }
                return;
            }
        };
        for &page in pages {
            let started = Instant::now();
            let result = self.page(folder.path(), &pdf, page);
            tracing::debug!(
                page,
                elapsed_ms = started.elapsed().as_millis() as u64,
                ok = result.is_ok(),
                "OCR of a PDF page"
            );
            each(page, result);
        }
    }

    fn reads_image(&self, format: FileFormat) -> bool {
        self.image_formats.contains(&format)
    }

    fn image(&self, image: &[u8], format: FileFormat) -> Result<String, RecognitionError> {
        if !self.reads_image(format) {
            return Err(RecognitionError::Failed(format!(
                "this engine does not read {} images",
                format.as_str()
            )));
        }
        let folder = tempfile::tempdir().map_err(|error| {
            RecognitionError::Failed(format!("no temporary folder for OCR: {error}"))
        })?;
        let started = Instant::now();
        let result = self.read_image(folder.path(), image, format);
        tracing::debug!(
            format = format.as_str(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            ok = result.is_ok(),
            "OCR of an image"
        );
        result
    }
}

/// The decoder's reason among tesseract's complaints: the first line that is not one of its
/// notes about the resolution.
fn complaint(stderr: &str) -> String {
    let notes = ["Estimating resolution", "Warning:"];
    let reason = stderr
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !notes.iter().any(|note| line.starts_with(note)));
    match reason {
        Some(line) => line.chars().take(200).collect(),
        None => first_line(stderr),
    }
}

/// The first non-blank line of a command's complaints, bounded, or a generic reason.
fn first_line(stderr: &str) -> String {
    stderr
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| line.chars().take(200).collect())
        .unwrap_or_else(|| "the renderer produced no image".to_owned())
}
