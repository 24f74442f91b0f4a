//! What a scanned page costs to process: pages per second through the document processor
//! with OCR (`pdftoppm` renders, `tesseract` reads), against the same pages with a text
//! layer (the baseline, measured in the same run), so the ratio says how much slower a
//! scanned document is to ingest than a typed one. Run by `just bench`; `BENCH_PAGES` sets
//! the pages per document (default 4), `BENCH_ROUNDS` the rounds (default 3).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera_documents::DocumentChunker;
use tessera_documents::testing::{ScanPage, scanned_pdf};
use tessera_knowledge::{ChunkingSettings, FileFormat};
use tessera_ocr_tesseract::{Tesseract, TesseractSettings};

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// A page of ordinary prose, a dozen lines.
fn page_lines(page: usize) -> Vec<String> {
    (0..12)
        .map(|line| {
            format!(
                "Page {page}, line {line}: the quarterly report lists shipments, returns and the stock kept in each warehouse."
            )
        })
        .collect()
}

/// The fastest of `rounds` runs of processing `pdf`, and the text it yielded.
fn fastest(processor: &DocumentChunker, pdf: &[u8], rounds: usize) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut chars = 0;
    for _ in 0..rounds {
        let started = Instant::now();
        let chunks = processor
            .chunks_blocking(FileFormat::Pdf, pdf, ChunkingSettings::default(), &|_| {})
            .unwrap();
        best = best.min(started.elapsed());
        chars = chunks.iter().map(|chunk| chunk.text.len()).sum();
    }
    (best, chars)
}

fn main() {
    let pages = setting("BENCH_PAGES", 4);
    let rounds = setting("BENCH_ROUNDS", 3);
    let tesseract = Tesseract::detect(TesseractSettings::default())
        .expect("tesseract-ocr, tesseract-ocr-eng and poppler-utils are installed");
    let typed = scanned_pdf(
        &(1..=pages)
            .map(|page| ScanPage::Text(page_lines(page)))
            .collect::<Vec<_>>(),
    );
    let scanned = scanned_pdf(
        &(1..=pages)
            .map(|page| ScanPage::Scanned(page_lines(page)))
            .collect::<Vec<_>>(),
    );
    let processor = DocumentChunker::default().with_ocr(Arc::new(tesseract.clone()));
    let (text_layer, typed_chars) = fastest(&processor, &typed, rounds);
    let (ocr, scanned_chars) = fastest(&processor, &scanned, rounds);
    let per_page = |elapsed: Duration| elapsed.as_secs_f64() * 1000.0 / pages as f64;
    println!(
        "OCR of scanned PDF pages ({}, {pages} pages of 12 lines, fastest of {rounds})",
        tesseract.version()
    );
    println!("| document | ms per page | pages/s | characters extracted |");
    println!("|:--|--:|--:|--:|");
    for (name, elapsed, chars) in [
        ("text layer (baseline)", text_layer, typed_chars),
        ("scanned, OCR", ocr, scanned_chars),
    ] {
        println!(
            "| {name} | {:.1} | {:.2} | {chars} |",
            per_page(elapsed),
            pages as f64 / elapsed.as_secs_f64()
        );
    }
    println!(
        "scanned / text layer: {:.0}× the time per page",
        ocr.as_secs_f64() / text_layer.as_secs_f64()
    );
}
