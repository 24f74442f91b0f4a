//! The recognizer against the real commands (`tesseract` with English, poppler's
//! `pdftoppm`), and the document processor reading scanned PDFs through it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tessera_documents::DocumentChunker;
use tessera_documents::testing::{ScanPage, scanned_pdf};
use tessera_knowledge::{
    ChunkingSettings, DocumentError, DocumentProcessor, ExtractionProgress, FileFormat,
    RecognitionError, TextRecognizer,
};
use tessera_ocr_tesseract::{OcrUnavailable, Tesseract, TesseractSettings};

const SENTENCE: &str = "The lighthouse keeper counted seventeen ships before dawn.";

fn lines(text: &str) -> Vec<String> {
    vec![text.to_owned()]
}

fn tesseract() -> Tesseract {
    Tesseract::detect(TesseractSettings::default())
        .expect("tesseract-ocr, tesseract-ocr-eng and poppler-utils are installed")
}

/// Each page's outcome, in the order handed over.
fn recognize(
    recognizer: &Tesseract,
    pdf: &[u8],
    pages: &[u32],
) -> Vec<(u32, Result<String, RecognitionError>)> {
    let mut outcomes = Vec::new();
    recognizer.pdf_pages(pdf, pages, &mut |page, outcome| {
        outcomes.push((page, outcome))
    });
    outcomes
}

/// OCR may read a letter wrong; the words that matter must be there.
fn assert_reads(text: &str, expected: &str) {
    let text = text.to_lowercase();
    for word in ["lighthouse", "keeper", "seventeen", "ships", "dawn"] {
        if expected.to_lowercase().contains(word) {
            assert!(text.contains(word), "{word:?} not in {text:?}");
        }
    }
}

#[test]
fn the_installed_engine_and_its_languages_are_detected() {
    let recognizer = tesseract();
    assert!(
        recognizer.version().starts_with("tesseract "),
        "{}",
        recognizer.version()
    );
    let missing = Tesseract::detect(TesseractSettings {
        languages: "eng+xyz".to_owned(),
        ..TesseractSettings::default()
    })
    .unwrap_err();
    match missing {
        OcrUnavailable::Languages { missing, installed } => {
            assert_eq!(missing, "xyz");
            assert!(installed.contains("eng"), "{installed}");
        }
        other => panic!("{other:?}"),
    }
    let absent = Tesseract::detect(TesseractSettings {
        tesseract: "/nonexistent/tesseract".into(),
        ..TesseractSettings::default()
    })
    .unwrap_err();
    assert!(
        matches!(absent, OcrUnavailable::Command { .. }),
        "{absent:?}"
    );
    let none = Tesseract::detect(TesseractSettings {
        languages: " + ".to_owned(),
        ..TesseractSettings::default()
    });
    assert_eq!(none.unwrap_err(), OcrUnavailable::NoLanguage);
}

#[test]
fn a_scanned_page_is_read_and_a_damaged_image_reads_as_blank() {
    let pdf = scanned_pdf(&[ScanPage::Scanned(lines(SENTENCE)), ScanPage::CorruptImage]);
    let outcomes = recognize(&tesseract(), &pdf, &[1, 2]);
    assert_eq!(outcomes.len(), 2);
    let (page, first) = &outcomes[0];
    assert_eq!(*page, 1);
    assert_reads(first.as_ref().unwrap(), SENTENCE);
    let (page, second) = &outcomes[1];
    assert_eq!(*page, 2);
    // The renderer draws nothing for an image it cannot decode, and says nothing: the
    // document processor checks page images itself before asking for OCR.
    assert_eq!(second.as_ref().map(|text| text.trim()), Ok(""));
}

#[test]
fn a_page_past_its_time_limit_is_stopped() {
    let recognizer = Tesseract::detect(TesseractSettings {
        page_timeout: Duration::from_millis(1),
        ..TesseractSettings::default()
    })
    .unwrap();
    let pdf = scanned_pdf(&[ScanPage::Scanned(lines(SENTENCE))]);
    let outcomes = recognize(&recognizer, &pdf, &[1]);
    assert_eq!(
        outcomes,
        [(1, Err(RecognitionError::TimedOut(Duration::from_millis(1))))]
    );
}

fn processor(recognizer: Tesseract) -> DocumentChunker {
    DocumentChunker::default().with_ocr(Arc::new(recognizer))
}

async fn chunks_of(
    processor: &DocumentChunker,
    pdf: Vec<u8>,
) -> (
    Result<Vec<tessera_knowledge::ChunkDraft>, DocumentError>,
    Vec<ExtractionProgress>,
) {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let seen = reports.clone();
    let result = processor
        .chunks(
            FileFormat::Pdf,
            pdf,
            ChunkingSettings::default(),
            Arc::new(move |report| seen.lock().unwrap().push(report)),
        )
        .await;
    let reports = reports.lock().unwrap().clone();
    (result, reports)
}

#[tokio::test]
async fn a_pdf_mixing_text_and_scanned_pages_yields_both_on_their_pages() {
    let text_page = "Invoices are archived for ten years in the basement vault.";
    let pdf = scanned_pdf(&[
        ScanPage::Text(lines(text_page)),
        ScanPage::Scanned(lines(SENTENCE)),
    ]);
    let (chunks, reports) = chunks_of(&processor(tesseract()), pdf.clone()).await;
    let chunks = chunks.unwrap();
    assert_eq!(chunks.len(), 2, "{chunks:?}");
    assert_eq!(chunks[0].location.page, Some(1));
    assert_eq!(chunks[0].text, text_page);
    assert_eq!(chunks[1].location.page, Some(2));
    assert_reads(&chunks[1].text, SENTENCE);
    // Only the scanned page went to OCR: reported before it and once it was read.
    assert_eq!(
        reports,
        [
            ExtractionProgress { done: 0, total: 1 },
            ExtractionProgress { done: 1, total: 1 }
        ]
    );
    // Without a recognizer the scanned page is skipped.
    let (chunks, reports) = chunks_of(&DocumentChunker::default(), pdf).await;
    let chunks = chunks.unwrap();
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].location.page, Some(1));
    assert!(reports.is_empty());
}

#[tokio::test]
async fn a_pdf_no_page_of_which_can_be_read_fails_with_the_reasons() {
    let (damaged, _) = chunks_of(
        &processor(tesseract()),
        scanned_pdf(&[ScanPage::CorruptImage]),
    )
    .await;
    assert_eq!(
        damaged,
        Err(DocumentError::Corrupt(
            "no page's text could be read (page 1: its image is damaged: not a JPEG image)"
                .to_owned()
        ))
    );
    let slow = Tesseract::detect(TesseractSettings {
        page_timeout: Duration::from_millis(1),
        ..TesseractSettings::default()
    })
    .unwrap();
    let (timed_out, _) = chunks_of(
        &processor(slow),
        scanned_pdf(&[ScanPage::Scanned(lines(SENTENCE))]),
    )
    .await;
    assert_eq!(
        timed_out,
        Err(DocumentError::Corrupt(
            "no page's text could be read (page 1: OCR took longer than its 0.001 s limit)"
                .to_owned()
        ))
    );
}
