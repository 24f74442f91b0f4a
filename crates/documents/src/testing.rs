//! Real documents for tests of this and other crates (feature `testing`): PDFs with a text
//! layer built with `lopdf`, scanned PDFs without one, DOCX archives built with `zip`, and hostile variants of both.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::missing_panics_doc)]

use std::io::{Cursor, Write};

use lopdf::content::{Content, Operation};
use lopdf::{
    Document, EncryptionState, EncryptionVersion, Object, Permissions, Stream, dictionary,
};
use zip::write::SimpleFileOptions;

pub mod image;
pub mod placed;
mod scan;
pub use scan::{ScanPage, scanned_pdf};

/// The bytes of a PDF with one page per entry, each page's lines written top-down.
pub fn pdf_bytes(pages: &[Vec<String>]) -> Vec<u8> {
    save(&mut pdf(pages))
}

/// A PDF with one page per entry, each page's lines written top-down in Helvetica.
pub fn pdf(pages: &[Vec<String>]) -> Document {
    build_pdf(pages, None)
}

/// A PDF whose pages have a media box only where `boxed` says so (a required entry whose
/// absence makes the text extractor panic).
pub fn pdf_with_boxes(pages: &[Vec<String>], boxed: &[bool]) -> Document {
    build_pdf(pages, Some(boxed))
}

/// Adds the font the fixtures' text is shown in (`F1` in their resources).
fn helvetica(doc: &mut Document) -> lopdf::ObjectId {
    doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
        "Encoding" => "WinAnsiEncoding",
    })
}

fn build_pdf(pages: &[Vec<String>], boxed: Option<&[bool]>) -> Document {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = helvetica(&mut doc);
    let resources_id = doc.add_object(dictionary! {
        "Font" => dictionary! { "F1" => font_id },
    });
    let mut kids = Vec::new();
    for (index, lines) in pages.iter().enumerate() {
        let content = Content {
            operations: text_operations(lines),
        };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let mut page = dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
        };
        if boxed.is_some_and(|boxed| boxed[index]) {
            page.set("MediaBox", vec![0.into(), 0.into(), 612.into(), 792.into()]);
        }
        let page_id = doc.add_object(page);
        kids.push(page_id.into());
    }
    let count = kids.len() as i64;
    let mut tree = dictionary! {
        "Type" => "Pages",
        "Kids" => kids,
        "Count" => count,
        "Resources" => resources_id,
    };
    if boxed.is_none() {
        tree.set("MediaBox", vec![0.into(), 0.into(), 612.into(), 792.into()]);
    }
    doc.objects.insert(pages_id, Object::Dictionary(tree));
    let catalog_id = doc.add_object(dictionary! {
        "Type" => "Catalog",
        "Pages" => pages_id,
    });
    doc.trailer.set("Root", catalog_id);
    doc.trailer.set(
        "ID",
        Object::Array(vec![
            Object::string_literal(b"0123456789abcdef".to_vec()),
            Object::string_literal(b"0123456789abcdef".to_vec()),
        ]),
    );
    doc.compress();
    doc
}

/// A page's content showing `lines` top-down in 11-point font `F1`.
fn text_operations(lines: &[String]) -> Vec<Operation> {
    let mut operations = vec![
        Operation::new("BT", vec![]),
        Operation::new("Tf", vec!["F1".into(), 11.into()]),
        Operation::new("Td", vec![72.into(), 760.into()]),
    ];
    for line in lines {
        operations.push(Operation::new(
            "Tj",
            vec![Object::string_literal(line.as_str())],
        ));
        operations.push(Operation::new("Td", vec![0.into(), (-14).into()]));
    }
    operations.push(Operation::new("ET", vec![]));
    operations
}

pub fn save(doc: &mut Document) -> Vec<u8> {
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();
    bytes
}

/// Encrypts with RC4 128 (the standard security handler, revision 3).
pub fn encrypt(mut doc: Document, user_password: &str) -> Vec<u8> {
    let state = EncryptionState::try_from(EncryptionVersion::V2 {
        document: &doc,
        owner_password: "owner secret",
        user_password,
        key_length: 128,
        permissions: Permissions::all(),
    })
    .unwrap();
    doc.encrypt(&state).unwrap();
    save(&mut doc)
}

/// A paragraph of `word/document.xml`, with a style id when given.
pub fn paragraph(style: Option<&str>, text: &str) -> String {
    let properties = style
        .map(|style| format!("<w:pPr><w:pStyle w:val=\"{style}\"/></w:pPr>"))
        .unwrap_or_default();
    format!("<w:p>{properties}<w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>")
}

pub fn table(rows: &[&[&str]]) -> String {
    let mut xml = String::from("<w:tbl>");
    for row in rows {
        xml.push_str("<w:tr>");
        for cell in *row {
            xml.push_str(&format!("<w:tc>{}</w:tc>", paragraph(None, cell)));
        }
        xml.push_str("</w:tr>");
    }
    xml.push_str("</w:tbl>");
    xml
}

/// A `w:tbl` of owned rows (the first is the header), one paragraph per cell, the text
/// escaped for XML.
pub fn table_of(rows: &[Vec<String>]) -> String {
    let escaped: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| xml_escape(cell)).collect())
        .collect();
    let borrowed: Vec<Vec<&str>> = escaped
        .iter()
        .map(|row| row.iter().map(String::as_str).collect())
        .collect();
    let rows: Vec<&[&str]> = borrowed.iter().map(Vec::as_slice).collect();
    table(&rows)
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The header of [`inventory_rows`].
pub const INVENTORY_HEADER: [&str; 5] = ["SKU", "Product", "Warehouse", "Stock", "Notes"];

/// The made-up product of inventory row `number` (1-based): a word no other row holds
/// (`"Kelpod valve"`), for questions about one row.
pub fn inventory_product(number: usize) -> String {
    const HEADS: [&str; 10] = [
        "Bra", "Cor", "Dul", "Fen", "Gri", "Hal", "Jor", "Kel", "Lum", "Mor",
    ];
    const TAILS: [&str; 8] = ["vax", "tin", "sel", "pod", "quar", "ven", "zil", "rok"];
    format!(
        "{}{} valve",
        HEADS[number % HEADS.len()],
        TAILS[(number / HEADS.len()) % TAILS.len()]
    )
}

/// The stock count of inventory row `number`, as its Stock cell reads (`"5493 units"`).
pub fn inventory_stock(number: usize) -> String {
    format!("{} units", number * 389 % 9000 + 100)
}

/// An inventory table: [`INVENTORY_HEADER`] and `count` rows of made-up spare parts, each
/// about 45 `cl100k_base` tokens, with a product ([`inventory_product`]), SKU and stock count
/// of its own.
pub fn inventory_rows(count: usize) -> Vec<Vec<String>> {
    const WAREHOUSES: [&str; 4] = ["Rotterdam", "Leipzig", "Gdansk", "Lyon"];
    const TEAMS: [&str; 3] = ["receiving", "quality", "night shift"];
    let header = INVENTORY_HEADER
        .iter()
        .map(|cell| (*cell).to_owned())
        .collect();
    let rows = (1..=count).map(|number| {
        vec![
            format!("KX-{}", 4000 + number * 7),
            inventory_product(number),
            WAREHOUSES[number % WAREHOUSES.len()].to_owned(),
            inventory_stock(number),
            format!(
                "Inspected by the {} team; reorder when fewer than {} remain and check the seals before shipping.",
                TEAMS[number % TEAMS.len()],
                number * 3 + 10
            ),
        ]
    });
    std::iter::once(header).chain(rows).collect()
}

/// The paragraphs of [`docx_with_table`]: a title, an introduction, a heading, the paragraph
/// before the table and the one after it.
pub const TABLE_DOCUMENT: [&str; 5] = [
    "Warehouse handbook",
    "This handbook describes how the warehouse teams receive, store and ship spare parts. \
     Every delivery is counted on arrival and booked before the parts are put away.",
    "Stock list",
    "The stock list below is updated every night from the warehouse management system.",
    "Counts that differ from the shelf by more than five percent are checked by hand within \
     two working days.",
];

/// A docx of [`TABLE_DOCUMENT`]'s title (style `Title`), introduction, heading (`Heading1`)
/// and paragraph, then the table of `rows`, then the paragraph after it.
pub fn docx_with_table(rows: &[Vec<String>]) -> Vec<u8> {
    let [title, introduction, heading, before, after] = TABLE_DOCUMENT;
    let body = [
        paragraph(Some("Title"), title),
        paragraph(None, introduction),
        paragraph(Some("Heading1"), heading),
        paragraph(None, before),
        table_of(rows),
        paragraph(None, after),
    ]
    .concat();
    docx(&document_xml(&body), None)
}

pub fn document_xml(body: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\"><w:body>{body}<w:sectPr/></w:body></w:document>"
    )
}

/// A docx archive: content types, relationships, `word/document.xml` and optional styles.
pub fn docx(document: &str, styles: Option<&str>) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let mut parts = vec![
        (
            "[Content_Types].xml",
            r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#.to_owned(),
        ),
        (
            "_rels/.rels",
            r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#.to_owned(),
        ),
        ("word/document.xml", document.to_owned()),
    ];
    if let Some(styles) = styles {
        parts.push(("word/styles.xml", styles.to_owned()));
    }
    for (name, content) in parts {
        writer.start_file(name, options).unwrap();
        writer.write_all(content.as_bytes()).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

/// A docx whose `word/document.xml` inflates to `size` bytes of comments (about 1000:1).
pub fn docx_bomb(size: usize) -> Vec<u8> {
    docx_bomb_of(size, &format!("<!--{}-->", " ".repeat(65_529)), "")
}

/// A docx whose `word/document.xml` is one paragraph whose single text node inflates to
/// `size` bytes: the XML reader would hold the whole node at once.
pub fn docx_bomb_one_text_node(size: usize) -> Vec<u8> {
    docx_bomb_of(size, &"a".repeat(65_536), "<w:p><w:r><w:t>")
}

/// A docx whose `word/document.xml` inflates to `size` bytes of short paragraphs of text:
/// all of it is text the extractor keeps.
pub fn docx_bomb_of_paragraphs(size: usize) -> Vec<u8> {
    let paragraph = format!("<w:p><w:r><w:t>{}</w:t></w:r></w:p>", "word ".repeat(200));
    docx_bomb_of(size, &paragraph.repeat(64), "")
}

/// `repeat` written after `opening` until the part holds `size` bytes.
fn docx_bomb_of(size: usize, repeat: &str, opening: &str) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(1))
        .large_file(size > u32::MAX as usize);
    writer.start_file("word/document.xml", options).unwrap();
    let head = format!("<?xml version=\"1.0\"?><w:document xmlns:w=\"w\"><w:body>{opening}");
    writer.write_all(head.as_bytes()).unwrap();
    let mut written = head.len();
    while written < size {
        writer.write_all(repeat.as_bytes()).unwrap();
        written += repeat.len();
    }
    writer.write_all(b"</w:body></w:document>").unwrap();
    writer.finish().unwrap().into_inner()
}
