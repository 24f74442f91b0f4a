//! Randomized documents: chunking never panics and every chunk keeps the promises.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use proptest::prelude::*;
use support::{assert_valid, settings, slice};
use tessera_documents::DocumentChunker;
use tessera_knowledge::{DocumentError, FileFormat};

/// Text made of words, punctuation, markdown markers, line breaks, wide and combining
/// characters and emoji.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-zA-Z]{1,12}",
        2 => Just(" ".to_owned()),
        1 => Just("\n".to_owned()),
        1 => Just("\n\n".to_owned()),
        1 => Just("# ".to_owned()),
        1 => Just("```\n".to_owned()),
        1 => Just(", ".to_owned()),
        1 => Just("\"".to_owned()),
        1 => Just("日本語".to_owned()),
        1 => Just("e\u{301}\u{302}".to_owned()),
        1 => Just("👩‍👩‍👧".to_owned()),
        1 => "[0-9]{1,6}",
    ];
    proptest::collection::vec(piece, 0..400).prop_map(|pieces| pieces.concat())
}

/// A two-page PDF, uncompressed so that changes hit its operators and text too.
fn valid_pdf() -> &'static [u8] {
    static PDF: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    PDF.get_or_init(|| {
        let pages: Vec<Vec<String>> = (1..=2)
            .map(|page| {
                (0..4)
                    .map(|line| format!("Page {page} line {line} (text)"))
                    .collect()
            })
            .collect();
        let mut doc = support::pdf(&pages);
        doc.decompress();
        support::save(&mut doc)
    })
}

fn valid_docx() -> &'static [u8] {
    static DOCX: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    DOCX.get_or_init(|| {
        let body = format!(
            "{}{}{}",
            support::paragraph(Some("Heading1"), "Title"),
            support::paragraph(None, "Some text here."),
            support::table(&[&["a", "b"], &["c", "d"]])
        );
        support::docx(&support::document_xml(&body), None)
    })
}

fn limits() -> impl Strategy<Value = (usize, usize)> {
    (1usize..120).prop_flat_map(|max| (Just(max), 0..max.max(2)))
}

fn check(format: FileFormat, text: &str, max: usize, overlap: usize) {
    let result = DocumentChunker::default().chunks_blocking(
        format,
        text.as_bytes(),
        settings(max, overlap),
        &|_| {},
    );
    match result {
        Ok(chunks) => {
            // Settings below four tokens are raised to four.
            assert_valid(&chunks, max.max(4));
            if matches!(format, FileFormat::Txt | FileFormat::Md) {
                for chunk in &chunks {
                    assert_eq!(
                        slice(text, chunk.location.char_start, chunk.location.char_end),
                        chunk.text
                    );
                }
            }
        }
        Err(DocumentError::Empty) => assert!(text.trim().is_empty() || format == FileFormat::Json),
        Err(DocumentError::Corrupt(_)) if format == FileFormat::Json => {}
        Err(error) => panic!("{format:?}: {error:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn txt_and_md_chunks_keep_their_promises(text in text(), (max, overlap) in limits()) {
        check(FileFormat::Txt, &text, max, overlap);
        check(FileFormat::Md, &text, max, overlap);
    }

    #[test]
    fn csv_chunks_keep_their_promises(text in text(), (max, overlap) in limits()) {
        check(FileFormat::Csv, &text, max, overlap);
    }

    #[test]
    fn json_strings_chunk_within_limits(text in text(), (max, overlap) in limits()) {
        let json = serde_json::json!({ "text": text, "list": text.split(' ').collect::<Vec<_>>() }).to_string();
        check(FileFormat::Json, &json, max, overlap);
    }

    #[test]
    fn damaged_pdfs_never_panic(changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..24)) {
        let mut bytes = valid_pdf().to_vec();
        for (index, byte) in changes {
            let at = index.index(bytes.len());
            bytes[at] = byte;
        }
        let _ = DocumentChunker::default().chunks_blocking(FileFormat::Pdf, &bytes, settings(100, 10), &|_| {});
    }

    #[test]
    fn damaged_docx_never_panic(changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..24)) {
        let mut bytes = valid_docx().to_vec();
        for (index, byte) in changes {
            let at = index.index(bytes.len());
            bytes[at] = byte;
        }
        let _ = DocumentChunker::default().chunks_blocking(FileFormat::Docx, &bytes, settings(100, 10), &|_| {});
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2000), pdf_head in any::<bool>()) {
        let chunker = DocumentChunker::default();
        let mut pdf = if pdf_head { b"%PDF-1.4\n".to_vec() } else { Vec::new() };
        pdf.extend(&bytes);
        let _ = chunker.chunks_blocking(FileFormat::Pdf, &pdf, settings(200, 30), &|_| {});
        let mut docx = b"PK\x03\x04".to_vec();
        docx.extend(&bytes);
        let _ = chunker.chunks_blocking(FileFormat::Docx, &docx, settings(200, 30), &|_| {});
        let _ = chunker.chunks_blocking(FileFormat::Txt, &bytes, settings(200, 30), &|_| {});
    }
}
