//! PDF tables through the port: lines of a page whose words line up in columns become a
//! markdown table, chunked as whole rows under the header row, which every chunk of the
//! table repeats; the prose around it stays prose of its page, and pages without a table
//! read exactly as plain text.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use support::placed::{Block, Placed, PlacedPage, grid, layout, placed_pdf, table_page, wrap};
use support::*;
use tessera_knowledge::{ChunkDraft, ChunkingSettings, DocumentError, FileFormat};

const INTRODUCTION: [&str; 2] = [
    "This handbook describes how the warehouse teams receive, store and ship spare parts.",
    "Every delivery is counted on arrival and booked before the parts are put away.",
];
const BEFORE: [&str; 2] = [
    "The stock list below is updated every night from the warehouse",
    "management system.",
];
const AFTER: [&str; 2] = [
    "Counts that differ from the shelf by more than five percent are checked",
    "by hand within two working days.",
];

fn markdown_row(cells: &[String]) -> String {
    format!("| {} |", cells.join(" | "))
}

/// The header row and separator line of a markdown table of `rows`, each line ended.
fn markdown_header(rows: &[Vec<String>]) -> String {
    format!(
        "{}\n|{}\n",
        markdown_row(&rows[0]),
        " --- |".repeat(rows[0].len())
    )
}

fn markdown_table(rows: &[Vec<String>]) -> String {
    let body: Vec<String> = rows[1..].iter().map(|row| markdown_row(row)).collect();
    format!("{}{}", markdown_header(rows), body.join("\n"))
}

fn table_chunks(chunks: &[ChunkDraft]) -> Vec<&ChunkDraft> {
    chunks
        .iter()
        .filter(|chunk| chunk.text.contains("| --- |"))
        .collect()
}

/// The plain text layer of each page, as pdf-extract reads it (what a page without a table
/// gives).
fn plain_pages(bytes: &[u8]) -> Vec<String> {
    pdf_extract::extract_text_from_mem_by_pages(bytes)
        .unwrap()
        .iter()
        .map(|page| page.trim().to_owned())
        .collect()
}

#[tokio::test]
async fn every_chunk_of_a_pdf_table_starts_with_its_header_row() {
    let rows = inventory_rows(40);
    let bytes = placed_pdf(&[
        layout(&[Block::Paragraph(
            INTRODUCTION.iter().map(|line| (*line).to_owned()).collect(),
        )]),
        table_page(&BEFORE, &rows, &AFTER),
    ]);
    let text = format!(
        "{}\n\n{}\n\n{}\n\n{}",
        INTRODUCTION.join("\n"),
        BEFORE.join("\n"),
        markdown_table(&rows),
        AFTER.join("\n")
    );
    let header = markdown_header(&rows);
    let data: Vec<String> = rows[1..].iter().map(|row| markdown_row(row)).collect();
    for settings in [ChunkingSettings::default(), settings(120, 20)] {
        let chunks = support::chunks(FileFormat::Pdf, bytes.clone(), settings)
            .await
            .unwrap();
        assert_valid(&chunks, settings.max_tokens);
        let table = table_chunks(&chunks);
        assert!(table.len() > 3, "{settings:?}: {chunks:#?}");
        for chunk in &table {
            assert_eq!(chunk.location.page, Some(2), "{chunk:?}");
        }
        assert_whole_rows_under_the_header(&table, &header, &data, &text, &format!("{settings:?}"));
        let row_37 = &data[36];
        assert!(row_37.contains("Kelpod valve") && row_37.contains("5493 units"));
        let with_37: Vec<&&ChunkDraft> = table
            .iter()
            .filter(|chunk| chunk.text.contains("Kelpod"))
            .collect();
        assert!(!with_37.is_empty());
        for chunk in with_37 {
            assert!(chunk.text.contains(row_37.as_str()), "row 37 is never cut");
            assert_eq!(chunk.location.page, Some(2));
        }

        // Prose stays prose, on its page; no chunk mixes prose and rows.
        let prose: Vec<(String, Option<u32>)> = chunks
            .iter()
            .filter(|chunk| !chunk.text.contains('|'))
            .map(|chunk| (chunk.text.clone(), chunk.location.page))
            .collect();
        assert_eq!(
            prose,
            [
                (INTRODUCTION.join("\n"), Some(1)),
                (BEFORE.join("\n"), Some(2)),
                (AFTER.join("\n"), Some(2)),
            ],
            "{settings:?}"
        );
        assert_eq!(chunks.len(), table.len() + prose.len());
        for chunk in chunks.iter().filter(|chunk| !chunk.text.contains('|')) {
            assert_eq!(
                slice(&text, chunk.location.char_start, chunk.location.char_end),
                chunk.text
            );
        }
    }
}

#[tokio::test]
async fn prose_before_and_after_a_table_stays_prose() {
    let rows = inventory_rows(4);
    let bytes = placed_pdf(&[table_page(&BEFORE, &rows, &AFTER)]);
    let chunks = support::chunks(FileFormat::Pdf, bytes, settings(400, 0))
        .await
        .unwrap();
    let texts: Vec<&str> = chunks.iter().map(|chunk| chunk.text.as_str()).collect();
    let table = markdown_table(&rows);
    assert_eq!(
        texts,
        [BEFORE.join("\n"), table, AFTER.join("\n")],
        "{chunks:#?}"
    );
    assert!(chunks.iter().all(|chunk| chunk.location.page == Some(1)));
}

#[tokio::test]
async fn a_table_on_the_second_page_is_on_page_2() {
    // The smallest table: a header and two rows, alone on its page.
    let rows = grid(2, 3);
    let first = layout(&[Block::Paragraph(
        INTRODUCTION.iter().map(|line| (*line).to_owned()).collect(),
    )]);
    let bytes = placed_pdf(&[first, table_page(&[], &rows, &[])]);
    let chunks = support::chunks(FileFormat::Pdf, bytes, settings(200, 0))
        .await
        .unwrap();
    assert_eq!(chunks.len(), 2, "{chunks:#?}");
    assert_eq!(chunks[0].text, INTRODUCTION.join("\n"));
    assert_eq!(chunks[0].location.page, Some(1));
    assert_eq!(
        chunks[1].text,
        "| Column 1 | Column 2 | Column 3 |\n| --- | --- | --- |\n\
         | r1c1 | r1c2 | r1c3 |\n| r2c1 | r2c2 | r2c3 |"
    );
    assert_eq!(chunks[1].location.page, Some(2));
}

/// Asserts that each page of `bytes` chunks exactly as its plain text layer does as a text
/// document: the chunks of before tables were looked for.
async fn assert_chunked_as_plain_text(bytes: Vec<u8>) {
    let pages = plain_pages(&bytes);
    assert_eq!(pages.len(), 1);
    for settings in [settings(2000, 0), settings(40, 10)] {
        let from_pdf = support::chunks(FileFormat::Pdf, bytes.clone(), settings)
            .await
            .unwrap();
        let from_text = support::chunks(FileFormat::Txt, pages[0].clone(), settings)
            .await
            .unwrap();
        assert!(!from_pdf.iter().any(|chunk| chunk.text.contains("| --- |")));
        let without_page = |chunks: &[ChunkDraft]| -> Vec<(String, u32, u64, u64)> {
            chunks
                .iter()
                .map(|chunk| {
                    let location = &chunk.location;
                    (
                        chunk.text.clone(),
                        chunk.token_count,
                        location.char_start,
                        location.char_end,
                    )
                })
                .collect()
        };
        assert_eq!(without_page(&from_pdf), without_page(&from_text));
        assert!(from_pdf.iter().all(|chunk| chunk.location.page == Some(1)));
    }
}

fn story(seed: usize) -> String {
    const WORDS: [&str; 12] = [
        "river", "stone", "lantern", "orbit", "meadow", "signal", "copper", "harbor", "quiet",
        "vector", "ember", "falcon",
    ];
    (0..70)
        .map(|index| WORDS[(index * 7 + seed) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn ordinary_text_chunks_as_before() {
    // Lines of prose written one below the other.
    let lines: Vec<String> = (0..12)
        .map(|line| format!("Line {line}: {}", &story(line)[..60]))
        .collect();
    assert_chunked_as_plain_text(pdf_bytes(&[lines])).await;

    // Two columns of prose side by side: every line splits in two aligned cells.
    let columns = Block::Columns(wrap(&story(1), 220.0), wrap(&story(5), 220.0));
    assert_chunked_as_plain_text(placed_pdf(&[layout(&[columns])])).await;

    // A numbered list, one line per item, numbers apart from the text.
    let mut list = PlacedPage {
        width: 612.0,
        height: 792.0,
        texts: Vec::new(),
        no_media_box: false,
    };
    for (index, item) in ["Unplug the kettle.", "Let it cool.", "Wipe it dry."]
        .iter()
        .enumerate()
    {
        let y = 100.0 + 13.0 * index as f64;
        list.texts
            .push(Placed::new(72.0, y, format!("{}.", index + 1)));
        list.texts.push(Placed::new(100.0, y, *item));
    }
    assert_chunked_as_plain_text(placed_pdf(&[list])).await;
}

#[tokio::test]
async fn pages_whose_positions_cannot_be_read_fall_back() {
    // A page the extractor panics on is skipped; the table on the next page is still one.
    let rows = grid(3, 2);
    let mut broken = table_page(&BEFORE, &rows, &[]);
    broken.no_media_box = true;
    let bytes = placed_pdf(&[broken, table_page(&[], &rows, &AFTER)]);
    let chunks = support::chunks(FileFormat::Pdf, bytes, settings(200, 0))
        .await
        .unwrap();
    let texts: Vec<(&str, Option<u32>)> = chunks
        .iter()
        .map(|chunk| (chunk.text.as_str(), chunk.location.page))
        .collect();
    let after = AFTER.join("\n");
    let table = markdown_table(&rows);
    assert_eq!(
        texts,
        [(table.as_str(), Some(2)), (after.as_str(), Some(2))]
    );

    // A table page with a rotated stamp: its positions are not trusted, it is plain text.
    let mut stamped = table_page(&BEFORE, &rows, &AFTER);
    let mut stamp = Placed::new(560.0, 700.0, "COPY");
    stamp.rotated = true;
    stamped.texts.push(stamp);
    assert_chunked_as_plain_text(placed_pdf(&[stamped])).await;

    // Every page failing is still a damaged document.
    let mut only = table_page(&[], &rows, &[]);
    only.no_media_box = true;
    let error = support::chunks(FileFormat::Pdf, placed_pdf(&[only]), settings(200, 0))
        .await
        .unwrap_err();
    assert!(matches!(error, DocumentError::Corrupt(_)), "{error:?}");
}
