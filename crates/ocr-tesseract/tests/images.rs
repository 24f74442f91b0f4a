//! Uploaded images read by the real `tesseract` (with English): PNG, JPEG and, where the
//! engine reads it, GIF; a damaged image fails with the decoder's complaint, a slow one at its
//! time limit; and the document processor turning images into chunks through it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tessera_documents::testing::image::{
    gif_of_text, jpeg_of_text, png_declaring, png_of_text, truncated_png,
};
use tessera_documents::{DocumentChunker, MAX_IMAGE_PIXELS};
use tessera_knowledge::{
    ChunkDraft, ChunkingSettings, DocumentError, DocumentProcessor, ExtractionProgress, FileFormat,
    RecognitionError, TextRecognizer,
};
use tessera_ocr_tesseract::{Tesseract, TesseractSettings};

const SENTENCE: &str = "The lighthouse keeper counted seventeen ships before dawn.";
const SECOND: &str = "Invoices are archived for ten years in the basement vault.";

fn tesseract() -> Tesseract {
    Tesseract::detect(TesseractSettings::default())
        .expect("tesseract-ocr, tesseract-ocr-eng and poppler-utils are installed")
}

/// OCR may read a letter wrong; the words that matter must be there.
fn assert_reads(text: &str, words: &[&str]) {
    let text = text.to_lowercase();
    for word in words {
        assert!(text.contains(word), "{word:?} not in {text:?}");
    }
}

const SENTENCE_WORDS: [&str; 5] = ["lighthouse", "keeper", "seventeen", "ships", "dawn"];

#[test]
fn png_and_jpeg_images_of_text_are_read() {
    let recognizer = tesseract();
    assert!(recognizer.reads_image(FileFormat::Png));
    assert!(recognizer.reads_image(FileFormat::Jpeg));
    assert!(!recognizer.reads_image(FileFormat::Pdf));
    let png = recognizer
        .image(&png_of_text(&[SENTENCE, SECOND]), FileFormat::Png)
        .unwrap();
    assert_reads(&png, &SENTENCE_WORDS);
    assert_reads(&png, &["invoices", "archived", "basement", "vault"]);
    let jpeg = recognizer
        .image(&jpeg_of_text(&[SENTENCE]), FileFormat::Jpeg)
        .unwrap();
    assert_reads(&jpeg, &SENTENCE_WORDS);
}

/// GIF and WebP are read where the engine's leptonica was built with their libraries (as
/// Debian's is), which `tesseract --version` lists.
#[test]
fn gif_images_are_read_where_the_engine_has_their_library() {
    let recognizer = tesseract();
    let version = std::process::Command::new("tesseract")
        .arg("--version")
        .output()
        .unwrap();
    let listed = format!(
        "{}{}",
        String::from_utf8_lossy(&version.stdout),
        String::from_utf8_lossy(&version.stderr)
    );
    assert_eq!(
        recognizer.reads_image(FileFormat::Gif),
        listed.contains("libgif")
    );
    assert_eq!(
        recognizer.reads_image(FileFormat::Webp),
        listed.contains("libwebp")
    );
    let gif = gif_of_text(&[SENTENCE]);
    if recognizer.reads_image(FileFormat::Gif) {
        assert_reads(
            &recognizer.image(&gif, FileFormat::Gif).unwrap(),
            &SENTENCE_WORDS,
        );
    } else {
        assert!(matches!(
            recognizer.image(&gif, FileFormat::Gif),
            Err(RecognitionError::Failed(_))
        ));
    }
}

#[test]
fn a_damaged_image_fails_with_the_decoders_complaint() {
    let recognizer = tesseract();
    let truncated = recognizer.image(&truncated_png(&[SENTENCE], 300), FileFormat::Png);
    match truncated {
        Err(RecognitionError::Undecodable(reason)) => {
            assert!(reason.contains("libpng"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let not_jpeg = recognizer.image(b"\xff\xd8\xffthis is not a JPEG image", FileFormat::Jpeg);
    match not_jpeg {
        Err(RecognitionError::Undecodable(reason)) => {
            // libjpeg names what it found instead of a marker.
            assert!(
                !reason.is_empty() && !reason.contains("pixRead"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_image_past_its_time_limit_is_stopped() {
    let recognizer = Tesseract::detect(TesseractSettings {
        page_timeout: Duration::from_millis(1),
        ..TesseractSettings::default()
    })
    .unwrap();
    assert_eq!(
        recognizer.image(&png_of_text(&[SENTENCE]), FileFormat::Png),
        Err(RecognitionError::TimedOut(Duration::from_millis(1)))
    );
}

fn processor(recognizer: Tesseract) -> DocumentChunker {
    DocumentChunker::default().with_ocr(Arc::new(recognizer))
}

async fn chunks_of(
    processor: &DocumentChunker,
    format: FileFormat,
    image: Vec<u8>,
) -> (
    Result<Vec<ChunkDraft>, DocumentError>,
    Vec<ExtractionProgress>,
) {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let seen = reports.clone();
    let result = processor
        .chunks(
            format,
            image,
            ChunkingSettings::default(),
            Arc::new(move |report| seen.lock().unwrap().push(report)),
        )
        .await;
    let reports = reports.lock().unwrap().clone();
    (result, reports)
}

#[tokio::test]
async fn an_image_becomes_chunks_without_a_page() {
    let (chunks, reports) = chunks_of(
        &processor(tesseract()),
        FileFormat::Png,
        png_of_text(&[SENTENCE, SECOND]),
    )
    .await;
    let chunks = chunks.unwrap();
    assert_eq!(chunks.len(), 1, "{chunks:?}");
    let chunk = &chunks[0];
    assert_eq!(
        (chunk.location.page, &chunk.location.section),
        (None, &None)
    );
    assert_eq!(chunk.location.char_start, 0);
    assert_eq!(
        chunk.location.char_end,
        chunk.text.chars().count() as u64,
        "the chunk is the whole recognised text"
    );
    assert!(chunk.token_count > 10);
    assert_reads(&chunk.text, &SENTENCE_WORDS);
    assert!(
        !chunk.text.contains('\u{c}'),
        "no form feed: {:?}",
        chunk.text
    );
    assert_eq!(
        reports,
        [
            ExtractionProgress { done: 0, total: 1 },
            ExtractionProgress { done: 1, total: 1 }
        ]
    );
}

#[tokio::test]
async fn images_without_text_damaged_slow_or_outsized_fail_with_the_reason() {
    let ocr = processor(tesseract());
    let (blank, _) = chunks_of(&ocr, FileFormat::Png, png_of_text(&[])).await;
    assert_eq!(blank, Err(DocumentError::Empty));

    let (damaged, _) = chunks_of(&ocr, FileFormat::Png, truncated_png(&[SENTENCE], 300)).await;
    match damaged {
        Err(DocumentError::Corrupt(reason)) => assert!(
            reason.starts_with("the image could not be decoded: libpng"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }

    let slow = processor(
        Tesseract::detect(TesseractSettings {
            page_timeout: Duration::from_millis(1),
            ..TesseractSettings::default()
        })
        .unwrap(),
    );
    let (timed_out, _) = chunks_of(&slow, FileFormat::Jpeg, jpeg_of_text(&[SENTENCE])).await;
    assert_eq!(
        timed_out,
        Err(DocumentError::Corrupt(
            "OCR took longer than its 0.001 s limit".to_owned()
        ))
    );

    // Refused from its header, before any decoding: 20,000 × 20,000 pixels.
    let (outsized, reports) = chunks_of(&ocr, FileFormat::Png, png_declaring(20_000, 20_000)).await;
    assert_eq!(
        outsized,
        Err(DocumentError::TooLarge(format!(
            "the image is 20000 × 20000 pixels; at most {} million are read",
            MAX_IMAGE_PIXELS / 1_000_000
        )))
    );
    assert!(reports.is_empty(), "never sent to OCR: {reports:?}");
}

#[tokio::test]
async fn without_ocr_images_are_not_extracted() {
    let (refused, _) = chunks_of(
        &DocumentChunker::default(),
        FileFormat::Png,
        png_of_text(&[SENTENCE]),
    )
    .await;
    assert_eq!(refused, Err(DocumentError::Unsupported("png")));
}
