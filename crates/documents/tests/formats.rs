//! Extraction and chunking of real documents, one format at a time, through the port.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use support::*;
use tessera_documents::{DocumentChunker, Limits};
use tessera_knowledge::{DocumentError, DocumentProcessor, FileFormat, ignore_progress};

fn prose(words: usize, seed: usize) -> String {
    const WORDS: [&str; 12] = [
        "river", "stone", "lantern", "orbit", "meadow", "signal", "copper", "harbor", "quiet",
        "vector", "ember", "falcon",
    ];
    let mut text = String::new();
    for index in 0..words {
        if index > 0 {
            text.push(if index % 9 == 0 { '.' } else { ' ' });
            if index % 9 == 0 {
                text.push(' ');
            }
        }
        text.push_str(WORDS[(index * 7 + seed) % WORDS.len()]);
    }
    text.push('.');
    text
}

// ---------------------------------------------------------------- txt

#[tokio::test]
async fn txt_offsets_slice_the_text_and_chunks_overlap() {
    let text = format!(
        "Überblick – {}\n\n{}\n\n日本語のテキストも含まれています。{}",
        prose(150, 1),
        prose(200, 2),
        prose(120, 3)
    );
    let chunks = chunks(FileFormat::Txt, text.clone(), settings(60, 15))
        .await
        .unwrap();
    assert_valid(&chunks, 60);
    assert!(chunks.len() > 5);
    for chunk in &chunks {
        assert_eq!(
            slice(&text, chunk.location.char_start, chunk.location.char_end),
            chunk.text
        );
        assert_eq!(chunk.location.page, None);
        assert_eq!(chunk.location.section, None);
    }
    let overlapping = chunks
        .windows(2)
        .filter(|pair| pair[1].location.char_start < pair[0].location.char_end)
        .count();
    assert!(overlapping > 0, "some consecutive chunks share text");
    // Everything is covered.
    assert_eq!(chunks[0].location.char_start, 0);
    assert_eq!(
        chunks.last().unwrap().location.char_end,
        text.chars().count() as u64
    );
    for pair in chunks.windows(2) {
        let gap = slice(
            &text,
            pair[0].location.char_end.min(pair[1].location.char_start),
            pair[1].location.char_start,
        );
        assert!(
            gap.trim().is_empty(),
            "nothing but whitespace between chunks: {gap:?}"
        );
    }

    let without = chunks_of(FileFormat::Txt, &text, 60, 0).await;
    for pair in without.windows(2) {
        assert!(
            pair[1].location.char_start >= pair[0].location.char_end,
            "no overlap"
        );
    }
}

async fn chunks_of(
    format: FileFormat,
    text: &str,
    max: usize,
    overlap: usize,
) -> Vec<tessera_knowledge::ChunkDraft> {
    let chunks = chunks(format, text.to_owned(), settings(max, overlap))
        .await
        .unwrap();
    assert_valid(&chunks, max);
    chunks
}

#[tokio::test]
async fn a_short_text_is_one_chunk() {
    let chunks = chunks_of(FileFormat::Txt, "\u{feff}  Hello, world.\n", 200, 30).await;
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].text, "Hello, world.");
    // Offsets count from after the byte order mark.
    assert_eq!(
        (chunks[0].location.char_start, chunks[0].location.char_end),
        (2, 15)
    );
}

// ---------------------------------------------------------------- md

#[tokio::test]
async fn markdown_sections_are_heading_paths_and_fences_stay_whole() {
    let fence = format!(
        "```rust\n{}\n```",
        (0..12)
            .map(|n| format!("let value_{n} = compute({n});"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let text = format!(
        "Preface {}\n\n# Guide\n\n{}\n\n## Setup\n\n{}\n\n{fence}\n\n{}\n\n## Use\n\n{}\n\n# Appendix\n\n{}\n",
        prose(30, 0),
        prose(80, 1),
        prose(40, 2),
        prose(60, 3),
        prose(90, 4),
        prose(50, 5)
    );
    let fence_tokens = count(&fence);
    assert!(fence_tokens < 150, "{fence_tokens}");
    let chunks = chunks_of(FileFormat::Md, &text, 150, 20).await;
    for chunk in &chunks {
        assert_eq!(
            slice(&text, chunk.location.char_start, chunk.location.char_end),
            chunk.text
        );
    }
    assert!(
        chunks.iter().any(|chunk| chunk.text.contains(&fence)),
        "the fence is in one chunk"
    );
    let sections: Vec<Option<&str>> = chunks
        .iter()
        .map(|chunk| chunk.location.section.as_deref())
        .collect();
    assert_eq!(sections[0], None);
    for expected in ["Guide", "Guide > Setup", "Guide > Use", "Appendix"] {
        assert!(
            sections.contains(&Some(expected)),
            "{expected} in {sections:?}"
        );
    }
    let appendix = chunks
        .iter()
        .find(|chunk| chunk.text.contains("# Appendix"))
        .unwrap();
    assert_eq!(appendix.location.section.as_deref(), Some("Appendix"));
    // A chunk starting inside the setup section is labelled with it.
    for chunk in &chunks {
        let start = text
            .chars()
            .take(chunk.location.char_start as usize)
            .collect::<String>();
        let setup = start.rfind("## Setup");
        let use_ = start.rfind("## Use");
        if setup.is_some() && use_.is_none() && !chunk.text.starts_with("## Use") {
            assert_eq!(
                chunk.location.section.as_deref(),
                Some("Guide > Setup"),
                "{chunk:?}"
            );
        }
    }
}

// ---------------------------------------------------------------- csv

#[tokio::test]
async fn csv_rows_stay_whole_under_the_repeated_header() {
    let header = "id,name,comment";
    let mut text = format!("{header}\n");
    let mut rows = Vec::new();
    for id in 1..=60 {
        let row = if id == 7 {
            "7,\"Multi\nLine\",\"quoted, with comma\"".to_owned()
        } else {
            format!("{id},item {id},{}", prose(6, id))
        };
        text.push_str(&row);
        text.push_str("\r\n");
        rows.push(row);
    }
    let chunks = chunks_of(FileFormat::Csv, &text, 80, 20).await;
    assert!(chunks.len() > 3);
    let mut next_row = 2;
    for chunk in &chunks {
        let body = chunk
            .text
            .strip_prefix(&format!("{header}\n"))
            .expect("header first");
        let section = chunk.location.section.as_deref().unwrap();
        let (first, last) = section
            .strip_prefix("rows ")
            .and_then(|range| range.split_once('-'))
            .map(|(first, last)| {
                (
                    first.parse::<usize>().unwrap(),
                    last.parse::<usize>().unwrap(),
                )
            })
            .unwrap();
        assert!(first <= next_row, "no row skipped");
        next_row = last + 1;
        // Exactly the rows named, whole and in order.
        assert_eq!(body, rows[first - 2..=last - 2].join("\n"));
        // The offsets span those rows in the file.
        let span = slice(&text, chunk.location.char_start, chunk.location.char_end);
        assert_eq!(span.replace("\r\n", "\n"), body);
    }
    assert_eq!(next_row, 62);
    assert!(
        chunks
            .windows(2)
            .any(|pair| pair[1].location.char_start < pair[0].location.char_end),
        "row overlap"
    );
}

#[tokio::test]
async fn a_csv_row_too_long_for_a_chunk_is_cut_under_the_header() {
    let long = prose(400, 0);
    let text = format!("id,text\n1,short\n2,\"{long}\"\n3,short again\n");
    let chunks = chunks_of(FileFormat::Csv, &text, 60, 0).await;
    let pieces: Vec<_> = chunks
        .iter()
        .filter(|chunk| chunk.location.section.as_deref() == Some("row 3"))
        .collect();
    assert!(pieces.len() > 3);
    for piece in &pieces {
        assert!(piece.text.starts_with("id,text\n"));
    }
    assert_eq!(
        chunks.first().unwrap().location.section.as_deref(),
        Some("row 2")
    );
    assert_eq!(
        chunks.last().unwrap().location.section.as_deref(),
        Some("row 4")
    );
}

#[tokio::test]
async fn a_csv_with_only_a_header_is_one_chunk() {
    let chunks = chunks_of(FileFormat::Csv, "a,b,c\n", 50, 0).await;
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].text, "a,b,c");
    assert_eq!(chunks[0].location.section.as_deref(), Some("row 1"));
}

// ---------------------------------------------------------------- json

#[tokio::test]
async fn json_is_flattened_to_paths() {
    let items: Vec<String> = (0..40)
        .map(|index| format!(r#"{{"name":"Widget {index}","price":{index}.5,"tags":["a","b"]}}"#))
        .collect();
    let text = format!(
        r#"{{"shop":{{"name":"Corner","items":[{}]}},"open":true}}"#,
        items.join(",")
    );
    let chunks = chunks_of(FileFormat::Json, &text, 60, 10).await;
    assert!(chunks.len() > 3);
    assert_eq!(
        chunks[0]
            .location
            .section
            .as_deref()
            .map(|section| section.starts_with("$.shop")),
        Some(true)
    );
    assert!(
        chunks[0]
            .text
            .starts_with("$.shop.name: \"Corner\"\n$.shop.items[0].name: \"Widget 0\"")
    );
    let all: String = chunks
        .iter()
        .map(|chunk| chunk.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(all.contains("$.shop.items[3].name: \"Widget 3\""));
    assert!(all.contains("$.shop.items[39].tags[1]: \"b\""));
    assert!(all.ends_with("$.open: true"));
    for chunk in &chunks {
        let section = chunk.location.section.as_deref().unwrap();
        for line in chunk.text.lines() {
            assert!(line.starts_with(section), "{line} under {section}");
        }
    }
    let one_item = chunks_of(FileFormat::Json, r#"{"items":[{"a":1,"b":2}]}"#, 200, 0).await;
    assert_eq!(one_item[0].location.section.as_deref(), Some("$.items[0]"));
    assert_eq!(one_item[0].text, "$.items[0].a: 1\n$.items[0].b: 2");
}

#[tokio::test]
async fn invalid_json_is_corrupt() {
    let error = chunks(FileFormat::Json, r#"{"a": [1, 2"#, settings(200, 30))
        .await
        .unwrap_err();
    assert!(matches!(error, DocumentError::Corrupt(_)), "{error:?}");
}

// ---------------------------------------------------------------- pdf

fn page_lines(page: usize, lines: usize) -> Vec<String> {
    (0..lines)
        .map(|line| format!("Page{page} line {line}: {}", prose(8, page * 31 + line)))
        .collect()
}

#[tokio::test]
async fn pdf_chunks_carry_their_page() {
    let pages: Vec<Vec<String>> = (1..=3).map(|page| page_lines(page, 20)).collect();
    let bytes = save(&mut pdf(&pages));
    let chunks = support::chunks(FileFormat::Pdf, bytes, settings(80, 10))
        .await
        .unwrap();
    assert_valid(&chunks, 80);
    assert!(chunks.len() > 3);
    for page in 1..=3u32 {
        assert!(
            chunks.iter().any(|chunk| chunk.location.page == Some(page)),
            "page {page}"
        );
    }
    for chunk in &chunks {
        let chars = chunk.location.char_end - chunk.location.char_start;
        assert_eq!(chars, chunk.text.chars().count() as u64);
        let page = chunk.location.page.unwrap();
        // Chunks never span pages: every page marker in the chunk is its own page's.
        for (index, _) in chunk.text.match_indices("Page") {
            let marker = &chunk.text[index + 4..index + 5];
            assert_eq!(marker, page.to_string(), "{chunk:?}");
        }
    }
    let first = &chunks[0];
    assert!(first.text.starts_with("Page1 line 0:"), "{first:?}");
    assert_eq!(first.location.char_start, 0);
    let pages_in_order: Vec<u32> = chunks
        .iter()
        .map(|chunk| chunk.location.page.unwrap())
        .collect();
    assert!(pages_in_order.windows(2).all(|pair| pair[0] <= pair[1]));
}

#[tokio::test]
async fn pdf_readable_without_a_user_password_is_read_and_with_one_is_encrypted() {
    let pages = vec![page_lines(1, 3)];
    let open = encrypt(pdf(&pages), "");
    let chunks = support::chunks(FileFormat::Pdf, open, settings(200, 0))
        .await
        .unwrap();
    assert!(chunks[0].text.starts_with("Page1 line 0:"), "{chunks:?}");

    let locked = encrypt(pdf(&pages), "user secret");
    let error = support::chunks(FileFormat::Pdf, locked, settings(200, 0))
        .await
        .unwrap_err();
    assert_eq!(error, DocumentError::Encrypted);
}

#[tokio::test]
async fn damaged_pdfs_are_corrupt() {
    let bytes = save(&mut pdf(&[page_lines(1, 5), page_lines(2, 5)]));
    for damaged in [
        b"%PDF-1.7\nthis is not a pdf at all".to_vec(),
        b"%PDF-".to_vec(),
        bytes[..bytes.len() / 3].to_vec(),
    ] {
        let result = support::chunks(FileFormat::Pdf, damaged, settings(200, 0)).await;
        assert!(
            matches!(result, Err(DocumentError::Corrupt(_))),
            "{result:?}"
        );
    }
}

#[tokio::test]
async fn pages_the_extractor_panics_on_are_skipped_and_all_failing_is_corrupt() {
    let pages = vec![page_lines(1, 3), page_lines(2, 3)];
    let bytes = save(&mut pdf_with_boxes(&pages, &[false, true]));
    let chunks = support::chunks(FileFormat::Pdf, bytes, settings(200, 0))
        .await
        .unwrap();
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].location.page, Some(2));
    assert!(chunks[0].text.starts_with("Page2 line 0:"));

    let bytes = save(&mut pdf_with_boxes(&pages, &[false, false]));
    let error = support::chunks(FileFormat::Pdf, bytes, settings(200, 0))
        .await
        .unwrap_err();
    assert!(matches!(error, DocumentError::Corrupt(_)), "{error:?}");
}

#[tokio::test]
async fn a_pdf_without_a_text_layer_is_empty() {
    let mut doc = pdf(&[vec![]]);
    let error = support::chunks(FileFormat::Pdf, save(&mut doc), settings(200, 0))
        .await
        .unwrap_err();
    assert_eq!(error, DocumentError::Empty);
}

#[tokio::test]
async fn a_pdf_stream_bomb_is_too_large() {
    // One page whose content stream inflates to 8 MB of spaces; the limit is 1 MB.
    let mut lines = page_lines(1, 1);
    lines.push(" ".repeat(8 << 20));
    let bytes = save(&mut pdf(&[lines]));
    assert!(bytes.len() < 200_000, "{}", bytes.len());
    let chunker = DocumentChunker::new(Limits {
        max_expanded_bytes: 1 << 20,
        ..Limits::DEFAULT
    });
    let error = chunker
        .chunks(FileFormat::Pdf, bytes, settings(200, 0), ignore_progress())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        DocumentError::TooLarge(format!(
            "the PDF's streams expand to more than {} bytes",
            1 << 20
        ))
    );
}

// ---------------------------------------------------------------- docx

#[tokio::test]
async fn docx_sections_are_heading_paths_and_tables_are_rows() {
    let mut body = String::new();
    body.push_str(&paragraph(Some("Title"), "Handbook"));
    body.push_str(&paragraph(None, &prose(40, 0)));
    body.push_str(&paragraph(Some("Heading1"), "Intro"));
    body.push_str(&paragraph(None, &prose(60, 1)));
    body.push_str(&paragraph(Some("Heading2"), "Setup"));
    body.push_str(&paragraph(None, &prose(30, 2)));
    body.push_str(&table(&[
        &["Name", "Value"],
        &["alpha", "1"],
        &["beta &amp; gamma", "2"],
    ]));
    body.push_str(&paragraph(Some("Heading1"), "Usage"));
    body.push_str(&paragraph(None, &prose(50, 3)));
    let bytes = docx(&document_xml(&body), None);
    let chunks = support::chunks(FileFormat::Docx, bytes, settings(50, 10))
        .await
        .unwrap();
    assert_valid(&chunks, 50);
    let sections: Vec<&str> = chunks
        .iter()
        .map(|chunk| chunk.location.section.as_deref().unwrap())
        .collect();
    for expected in [
        "Handbook",
        "Handbook > Intro",
        "Handbook > Intro > Setup",
        "Handbook > Usage",
    ] {
        assert!(sections.contains(&expected), "{expected} in {sections:?}");
    }
    let table = chunks
        .iter()
        .find(|chunk| chunk.text.contains("| Name | Value |"))
        .unwrap();
    assert_eq!(
        table.text,
        "| Name | Value |\n| --- | --- |\n| alpha | 1 |\n| beta & gamma | 2 |"
    );
    assert_eq!(
        table.location.section.as_deref(),
        Some("Handbook > Intro > Setup")
    );
    let usage = chunks
        .iter()
        .find(|chunk| chunk.text.starts_with("Usage"))
        .unwrap();
    assert_eq!(usage.location.section.as_deref(), Some("Handbook > Usage"));
    // No chunk crosses a heading.
    for chunk in &chunks {
        for heading in ["Intro", "Setup", "Usage"] {
            if let Some(index) = chunk.text.find(&format!("\n{heading}\n")) {
                panic!("{heading} inside a chunk at {index}: {chunk:?}");
            }
        }
    }
}

#[tokio::test]
async fn docx_custom_heading_styles_come_from_styles_xml() {
    let styles = r#"<?xml version="1.0"?><w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
<w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="heading 1"/></w:style>
<w:style w:type="paragraph" w:styleId="Chapter"><w:basedOn w:val="berschrift1"/></w:style>
</w:styles>"#;
    let body = format!(
        "{}{}{}{}",
        paragraph(Some("berschrift1"), "Einleitung"),
        paragraph(None, "Text eins."),
        paragraph(Some("Chapter"), "Kapitel"),
        paragraph(None, "Text zwei.")
    );
    let chunks = support::chunks(
        FileFormat::Docx,
        docx(&document_xml(&body), Some(styles)),
        settings(200, 0),
    )
    .await
    .unwrap();
    let sections: Vec<(&str, &str)> = chunks
        .iter()
        .map(|chunk| {
            (
                chunk.text.as_str(),
                chunk.location.section.as_deref().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sections,
        [
            ("Einleitung\nText eins.", "Einleitung"),
            ("Kapitel\nText zwei.", "Kapitel")
        ]
    );
    assert_eq!(
        (chunks[1].location.char_start, chunks[1].location.char_end),
        (22, 40)
    );
}

#[tokio::test]
async fn damaged_docx_archives_are_corrupt() {
    let bytes = docx(&document_xml(&paragraph(None, &prose(200, 0))), None);
    let no_document = {
        let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        writer
            .start_file("word/other.xml", zip::write::SimpleFileOptions::default())
            .unwrap();
        writer.finish().unwrap().into_inner()
    };
    let bad_xml = docx("<w:document><w:body><w:p></w:body>", None);
    for damaged in [
        bytes[..bytes.len() / 2].to_vec(),
        bytes[..bytes.len() - 10].to_vec(),
        b"PK\x03\x04 not really a zip".to_vec(),
        no_document,
        bad_xml,
    ] {
        let result = support::chunks(FileFormat::Docx, damaged, settings(200, 0)).await;
        assert!(
            matches!(result, Err(DocumentError::Corrupt(_))),
            "{result:?}"
        );
    }
}

#[tokio::test]
async fn ole_files_are_encrypted_documents_or_not_docx() {
    let mut encrypted = vec![0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
    encrypted.extend(std::iter::repeat_n(0u8, 512));
    encrypted.extend("EncryptedPackage".encode_utf16().flat_map(u16::to_le_bytes));
    encrypted.extend(std::iter::repeat_n(0u8, 512));
    let error = support::chunks(FileFormat::Docx, encrypted, settings(200, 0))
        .await
        .unwrap_err();
    assert_eq!(error, DocumentError::Encrypted);

    let mut legacy = vec![0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
    legacy.extend(std::iter::repeat_n(0u8, 2048));
    let error = support::chunks(FileFormat::Docx, legacy, settings(200, 0))
        .await
        .unwrap_err();
    assert!(matches!(error, DocumentError::Corrupt(_)), "{error:?}");
}

/// This process's resident memory now and at its peak since the peak was last reset, in
/// bytes (Linux `/proc/self/status`).
fn resident_bytes() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .unwrap_or_else(|| panic!("{name} in /proc/self/status"))
            * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Every docx bomb is refused with memory bounded well below what it inflates to: the
/// worker's peak grows by less than 64 MiB (the bound `docs/architecture.md` states),
/// whether the bomb is comments, one giant text node, or paragraphs of text.
#[tokio::test]
async fn docx_bombs_are_refused_within_a_memory_bound() {
    const BOUND: u64 = 64 << 20;
    for (name, bomb) in [
        ("comments", docx_bomb(1100 << 20)),
        ("one text node", docx_bomb_one_text_node(1100 << 20)),
        ("paragraphs", docx_bomb_of_paragraphs(1100 << 20)),
    ] {
        // Reset the peak to the current size (Linux: "5" clears VmHWM), so only this
        // extraction's peak counts; if it cannot, the check is only stricter.
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let (before, _) = resident_bytes();
        let error = support::chunks(FileFormat::Docx, bomb, settings(200, 30))
            .await
            .unwrap_err();
        assert!(
            matches!(error, DocumentError::TooLarge(_)),
            "{name}: {error:?}"
        );
        let (_, peak) = resident_bytes();
        let growth = peak.saturating_sub(before);
        println!("{name}: the peak grew by {} MiB", growth >> 20);
        assert!(
            growth < BOUND,
            "{name}: the peak grew by {} MiB",
            growth >> 20
        );
    }
}

#[tokio::test]
async fn a_docx_zip_bomb_is_too_large() {
    // 300 MB of XML in well under a megabyte; read up to the default 200 MB and refused.
    let bomb = docx_bomb(300 << 20);
    assert!(bomb.len() < 2 << 20, "{}", bomb.len());
    let started = std::time::Instant::now();
    let error = support::chunks(FileFormat::Docx, bomb, settings(200, 30))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        DocumentError::TooLarge(format!(
            "the document expands to more than {} bytes",
            200 << 20
        ))
    );
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_docx_with_too_much_text_is_too_large() {
    let body = paragraph(None, &prose(3000, 0));
    let chunker = DocumentChunker::new(Limits {
        max_text_chars: 5000,
        ..Limits::DEFAULT
    });
    let error = chunker
        .chunks(
            FileFormat::Docx,
            docx(&document_xml(&body), None),
            settings(200, 0),
            ignore_progress(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, DocumentError::TooLarge(_)), "{error:?}");
}

// ---------------------------------------------------------------- every format

#[tokio::test]
async fn empty_documents_are_empty() {
    let empty_docx = docx(&document_xml(&paragraph(None, "   ")), None);
    for (format, content) in [
        (FileFormat::Txt, b"".to_vec()),
        (FileFormat::Txt, b" \n\t\r\n ".to_vec()),
        (FileFormat::Md, b"\n\n".to_vec()),
        (FileFormat::Csv, b"".to_vec()),
        (FileFormat::Json, b" ".to_vec()),
        (FileFormat::Json, b"{}".to_vec()),
        (FileFormat::Json, br#"{"a":[],"b":null}"#.to_vec()),
        (FileFormat::Docx, empty_docx),
    ] {
        let result = support::chunks(format, content.clone(), settings(200, 30)).await;
        assert_eq!(result, Err(DocumentError::Empty), "{format:?} {content:?}");
    }
}

#[tokio::test]
async fn images_are_not_extracted() {
    for format in [
        FileFormat::Png,
        FileFormat::Jpeg,
        FileFormat::Gif,
        FileFormat::Webp,
    ] {
        let error = support::chunks(format, b"\x89PNG\r\n\x1a\n".to_vec(), settings(200, 30))
            .await
            .unwrap_err();
        assert_eq!(error, DocumentError::Unsupported(format.as_str()));
    }
}

#[tokio::test]
async fn text_that_is_not_utf8_is_corrupt_not_a_panic() {
    for format in [
        FileFormat::Txt,
        FileFormat::Md,
        FileFormat::Csv,
        FileFormat::Json,
    ] {
        let result = support::chunks(format, b"abc \xff\xfe def".to_vec(), settings(200, 30)).await;
        assert!(
            matches!(result, Err(DocumentError::Corrupt(_))),
            "{format:?}: {result:?}"
        );
    }
}

#[tokio::test]
async fn text_beyond_the_limit_is_too_large() {
    let chunker = DocumentChunker::new(Limits {
        max_text_chars: 1000,
        ..Limits::DEFAULT
    });
    for format in [FileFormat::Txt, FileFormat::Md, FileFormat::Csv] {
        let error = chunker
            .chunks(
                format,
                prose(400, 0).into_bytes(),
                settings(200, 0),
                ignore_progress(),
            )
            .await
            .unwrap_err();
        assert!(matches!(error, DocumentError::TooLarge(_)), "{format:?}");
    }
    let json = format!(
        "[{}]",
        (0..300)
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let error = chunker
        .chunks(
            FileFormat::Json,
            json.into_bytes(),
            settings(200, 0),
            ignore_progress(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, DocumentError::TooLarge(_)));
}
