//! Images of text, as a phone or a screenshot gives them, for tests of OCR: lines written in
//! Helvetica on a white background, rendered by poppler's `pdftoppm` (which tests of OCR need
//! installed anyway) to PNG or JPEG, or to grey pixels written here as a GIF; and damaged or
//! outsized variants.

use std::path::PathBuf;
use std::process::Command;

/// Renders at 150 dpi: 11-point text is about 23 pixels high.
const DPI: &str = "150";

/// A PNG of `lines` (none: a blank image), about 1100 pixels wide.
pub fn png_of_text(lines: &[&str]) -> Vec<u8> {
    render(lines, "-png", "png")
}

/// A JPEG of `lines`.
pub fn jpeg_of_text(lines: &[&str]) -> Vec<u8> {
    render(lines, "-jpeg", "jpg")
}

/// A GIF of `lines`: 256 grey levels, LZW-coded without compressing (a clear code every 254
/// pixels keeps every code 9 bits wide), as any decoder reads.
pub fn gif_of_text(lines: &[&str]) -> Vec<u8> {
    let pgm = render(lines, "-gray", "pgm");
    let (width, height, pixels) = parse_pgm(&pgm);
    gif(width, height, &pixels)
}

/// A PNG of `lines` cut off after `keep` bytes: its header (and size) intact, its pixel data
/// truncated, as an interrupted transfer leaves it.
pub fn truncated_png(lines: &[&str], keep: usize) -> Vec<u8> {
    let mut png = png_of_text(lines);
    png.truncate(keep);
    png
}

/// The start of a PNG declaring `width` × `height` pixels (its `IHDR` chunk), and no pixel
/// data: what a decompression bomb shows before it is decoded.
pub fn png_declaring(width: u32, height: u32) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend_from_slice(&width.to_be_bytes());
    png.extend_from_slice(&height.to_be_bytes());
    // 8-bit grey, no interlacing; the chunk's CRC, then an empty IDAT.
    png.extend_from_slice(b"\x08\0\0\0\0\0\0\0\0\0\0\0\0IDAT\0\0\0\0");
    png
}

/// Renders one Letter page holding `lines` top-down with `pdftoppm <option>`, cropped to the
/// text's band, and returns the file it wrote with `extension`.
fn render(lines: &[&str], option: &str, extension: &str) -> Vec<u8> {
    let folder = temporary_folder();
    let source = folder.join("source.pdf");
    let page: Vec<String> = lines.iter().map(|line| (*line).to_owned()).collect();
    std::fs::write(&source, super::pdf_bytes(&[page])).unwrap();
    let output = folder.join("image");
    // The text starts one inch from the top-left corner, a line every 14 points (29 pixels).
    let height = 60 + 30 * lines.len().max(1);
    let mut command = Command::new("pdftoppm");
    command.args([option, "-singlefile", "-r", DPI]);
    if option != "-gray" {
        command.arg("-gray");
    }
    let status = command
        .args([
            "-x",
            "100",
            "-y",
            "30",
            "-W",
            "1100",
            "-H",
            &height.to_string(),
        ])
        .arg(&source)
        .arg(&output)
        .status()
        .expect("pdftoppm (poppler-utils) renders the images of text for tests");
    assert!(status.success(), "pdftoppm: {status}");
    let image = std::fs::read(output.with_extension(extension)).unwrap();
    let _ = std::fs::remove_dir_all(&folder);
    image
}

/// A binary PGM (`P5`, 8-bit) as (width, height, pixels).
fn parse_pgm(pgm: &[u8]) -> (u16, u16, Vec<u8>) {
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
        fields.push(String::from_utf8_lossy(&pgm[start..position]).into_owned());
    }
    assert_eq!((fields[0].as_str(), fields[3].as_str()), ("P5", "255"));
    let width: u16 = fields[1].parse().unwrap();
    let height: u16 = fields[2].parse().unwrap();
    // One whitespace byte separates the header from the pixels.
    let pixels = pgm[position + 1..].to_vec();
    assert_eq!(pixels.len(), usize::from(width) * usize::from(height));
    (width, height, pixels)
}

/// A GIF89a of grey `pixels` (rows top-down) with a 256-level grey palette.
fn gif(width: u16, height: u16, pixels: &[u8]) -> Vec<u8> {
    let mut gif = b"GIF89a".to_vec();
    gif.extend_from_slice(&width.to_le_bytes());
    gif.extend_from_slice(&height.to_le_bytes());
    // A global palette of 256 entries, no background, no aspect ratio.
    gif.extend_from_slice(&[0xF7, 0, 0]);
    for level in 0..=255u8 {
        gif.extend_from_slice(&[level, level, level]);
    }
    // One image over the whole screen, not interlaced.
    gif.push(0x2C);
    for field in [0, 0, width, height] {
        gif.extend_from_slice(&field.to_le_bytes());
    }
    gif.push(0);
    // LZW with 8-bit symbols: codes of 9 bits, 256 clears the table, 257 ends.
    gif.push(8);
    let mut codes = Vec::with_capacity(pixels.len() + pixels.len() / 254 + 2);
    for (index, &pixel) in pixels.iter().enumerate() {
        if index % 254 == 0 {
            codes.push(256u16);
        }
        codes.push(u16::from(pixel));
    }
    codes.push(257);
    let mut data = Vec::new();
    let (mut bits, mut count) = (0u32, 0u32);
    for code in codes {
        bits |= u32::from(code) << count;
        count += 9;
        while count >= 8 {
            data.push((bits & 0xFF) as u8);
            bits >>= 8;
            count -= 8;
        }
    }
    if count > 0 {
        data.push((bits & 0xFF) as u8);
    }
    for block in data.chunks(255) {
        gif.push(block.len() as u8);
        gif.extend_from_slice(block);
    }
    gif.extend_from_slice(&[0, 0x3B]);
    gif
}

fn temporary_folder() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let folder = std::env::temp_dir().join(format!(
        "tessera-image-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&folder).unwrap();
    folder
}
