//! PDFs without a text layer, the way a scanner makes them: each scanned page is one grey
//! image of the page's text, rendered by poppler's `pdftoppm` (which tests of OCR need
//! installed anyway) from a PDF written with Helvetica. Pages can mix with text pages.

use std::process::Command;

use lopdf::content::{Content, Operation};
use lopdf::{Document, Object, Stream, dictionary};

/// One page of [`scanned_pdf`].
#[derive(Debug, Clone)]
pub enum ScanPage {
    /// A page with a text layer holding these lines.
    Text(Vec<String>),
    /// A picture of a page holding these lines, with no text layer.
    Scanned(Vec<String>),
    /// A page whose only image is damaged (JPEG-declared bytes that are not a JPEG).
    CorruptImage,
}

/// Renders pages as a scanner would store them: 200 dpi, 8-bit grey, Flate-compressed.
const DPI: u32 = 200;

/// The bytes of a PDF with `pages` in order (US Letter).
pub fn scanned_pdf(pages: &[ScanPage]) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = super::helvetica(&mut doc);
    let mut kids = Vec::new();
    for page in pages {
        let (operations, resources) = match page {
            ScanPage::Text(lines) => (
                super::text_operations(lines),
                dictionary! { "Font" => dictionary! { "F1" => font_id } },
            ),
            ScanPage::Scanned(lines) => {
                let (width, height, pixels) = render(lines);
                let image = Stream::new(
                    dictionary! {
                        "Type" => "XObject",
                        "Subtype" => "Image",
                        "Width" => width,
                        "Height" => height,
                        "ColorSpace" => "DeviceGray",
                        "BitsPerComponent" => 8,
                        "Filter" => "FlateDecode",
                    },
                    deflate(&pixels),
                );
                image_page(&mut doc, image)
            }
            ScanPage::CorruptImage => {
                let image = Stream::new(
                    dictionary! {
                        "Type" => "XObject",
                        "Subtype" => "Image",
                        "Width" => 1700,
                        "Height" => 2200,
                        "ColorSpace" => "DeviceGray",
                        "BitsPerComponent" => 8,
                        "Filter" => "DCTDecode",
                    },
                    b"\xff\xd8 this is not a JPEG image at all".to_vec(),
                );
                image_page(&mut doc, image)
            }
        };
        let content = Content { operations };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
            "Resources" => resources,
        });
        kids.push(page_id.into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => kids,
            "Count" => count,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    super::save(&mut doc)
}

/// A page drawing `image` over the whole page.
fn image_page(doc: &mut Document, image: Stream) -> (Vec<Operation>, lopdf::Dictionary) {
    let image_id = doc.add_object(image);
    let operations = vec![
        Operation::new("q", vec![]),
        Operation::new(
            "cm",
            vec![
                612.into(),
                0.into(),
                0.into(),
                792.into(),
                0.into(),
                0.into(),
            ],
        ),
        Operation::new("Do", vec!["Im1".into()]),
        Operation::new("Q", vec![]),
    ];
    (
        operations,
        dictionary! { "XObject" => dictionary! { "Im1" => image_id } },
    )
}

/// The grey pixels (width, height, rows top-down) of a Letter page showing `lines`.
fn render(lines: &[String]) -> (i64, i64, Vec<u8>) {
    let folder = tempfile_dir();
    let source = folder.join("source.pdf");
    std::fs::write(&source, super::pdf_bytes(&[lines.to_vec()])).unwrap();
    let output = folder.join("page");
    let status = Command::new("pdftoppm")
        .args(["-gray", "-singlefile", "-r", &DPI.to_string()])
        .arg(&source)
        .arg(&output)
        .status()
        .expect("pdftoppm (poppler-utils) renders the scanned pages of test PDFs");
    assert!(status.success(), "pdftoppm: {status}");
    let pgm = std::fs::read(output.with_extension("pgm")).unwrap();
    let _ = std::fs::remove_dir_all(&folder);
    parse_pgm(&pgm)
}

/// A binary PGM (`P5`, 8-bit) as (width, height, pixels).
fn parse_pgm(pgm: &[u8]) -> (i64, i64, Vec<u8>) {
    let mut fields = Vec::new();
    let mut position = 0;
    while fields.len() < 4 {
        while pgm[position].is_ascii_whitespace() {
            position += 1;
        }
        let start = position;
        while !pgm[position].is_ascii_whitespace() {
            position += 1;
        }
        fields.push(
            std::str::from_utf8(&pgm[start..position])
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(fields[0], "P5", "a binary grey PGM");
    assert_eq!(fields[3], "255", "8 bits per pixel");
    let width: i64 = fields[1].parse().unwrap();
    let height: i64 = fields[2].parse().unwrap();
    // One whitespace byte separates the header from the pixels.
    let pixels = pgm[position + 1..].to_vec();
    assert_eq!(pixels.len() as i64, width * height);
    (width, height, pixels)
}

fn deflate(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn tempfile_dir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let folder = std::env::temp_dir().join(format!(
        "tessera-scan-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&folder).unwrap();
    folder
}
