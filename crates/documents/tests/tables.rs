//! DOCX tables through the port: markdown rows, chunked as whole rows under the header row,
//! which every chunk of the table repeats.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use support::*;
use tessera_knowledge::{ChunkDraft, ChunkingSettings, FileFormat};

/// A table row as the extracted text writes it.
fn markdown_row(cells: &[String]) -> String {
    format!("| {} |", cells.join(" | "))
}

/// The extracted text of [`docx_with_table`]: paragraphs one per line, the table as
/// markdown rows with a blank line around it.
fn extracted_text(rows: &[Vec<String>]) -> String {
    let [title, introduction, heading, before, after] = TABLE_DOCUMENT;
    let mut table: Vec<String> = rows.iter().map(|row| markdown_row(row)).collect();
    table.insert(1, format!("|{}", " --- |".repeat(rows[0].len())));
    format!(
        "{title}\n{introduction}\n{heading}\n{before}\n\n{}\n\n{after}",
        table.join("\n")
    )
}

async fn inventory_chunks(settings: ChunkingSettings) -> (Vec<Vec<String>>, Vec<ChunkDraft>) {
    let rows = inventory_rows(40);
    let chunks = support::chunks(FileFormat::Docx, docx_with_table(&rows), settings)
        .await
        .unwrap();
    assert_valid(&chunks, settings.max_tokens);
    (rows, chunks)
}

#[tokio::test]
async fn every_chunk_of_a_docx_table_starts_with_its_header_row() {
    for settings in [ChunkingSettings::default(), settings(120, 20)] {
        let (rows, chunks) = inventory_chunks(settings).await;
        let text = extracted_text(&rows);
        let header = format!(
            "{}\n| --- | --- | --- | --- | --- |\n",
            markdown_row(&rows[0])
        );
        let data: Vec<String> = rows[1..].iter().map(|row| markdown_row(row)).collect();
        let table: Vec<&ChunkDraft> = chunks
            .iter()
            .filter(|chunk| chunk.text.contains("| KX-"))
            .collect();
        assert!(table.len() > 3, "{settings:?}: {table:#?}");
        for chunk in &table {
            assert_eq!(
                chunk.location.section.as_deref(),
                Some("Warehouse handbook > Stock list")
            );
        }
        assert_whole_rows_under_the_header(&table, &header, &data, &text, &format!("{settings:?}"));
        let row_37 = &data[36];
        assert!(row_37.contains("Kelpod valve") && row_37.contains("5493 units"));
        assert_eq!(
            table
                .iter()
                .filter(|chunk| chunk.text.contains("Kelpod"))
                .count(),
            table
                .iter()
                .filter(|chunk| chunk.text.contains(row_37.as_str()))
                .count(),
            "row 37 is never cut"
        );

        // The prose before and after the table is in chunks of its own.
        let [title, introduction, heading, before, after] = TABLE_DOCUMENT;
        let prose: Vec<&str> = chunks
            .iter()
            .filter(|chunk| !chunk.text.contains('|'))
            .map(|chunk| chunk.text.as_str())
            .collect();
        assert_eq!(
            prose,
            [
                format!("{title}\n{introduction}"),
                format!("{heading}\n{before}"),
                after.to_owned()
            ],
            "{settings:?}"
        );
        assert_eq!(
            chunks.len(),
            table.len() + prose.len(),
            "no chunk mixes prose and rows"
        );
        for chunk in chunks.iter().filter(|chunk| !chunk.text.contains('|')) {
            assert_eq!(
                slice(&text, chunk.location.char_start, chunk.location.char_end),
                chunk.text
            );
        }
    }
}
