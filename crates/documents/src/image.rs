//! Uploaded images read by OCR (for organizations that opted in): the image's size is checked
//! from its header first (a small file can declare a picture whose decoding takes gigabytes),
//! then the [`TextRecognizer`] reads it whole within its time limit per page, and its text is
//! chunked as prose with no page number. A damaged image or one OCR could not finish is
//! [`DocumentError::Corrupt`] with the reason; one with no letters or digits is
//! [`DocumentError::Empty`].

use tessera_knowledge::{
    ChunkDraft, DocumentError, ExtractionProgress, FileFormat, RecognitionError, TextRecognizer,
};

use crate::Limits;
use crate::chunking::Chunker;

/// The most pixels an image read by OCR may have: 40 million (a 12-megapixel photo, or an A4
/// page scanned at 600 dpi, fits). Decoding takes 4 bytes a pixel before the engine's own
/// copies; a 20,000 × 20,000 PNG of 440 KB took Tesseract 1.5 GB and 15 s.
pub const MAX_IMAGE_PIXELS: u64 = 40_000_000;

/// The chunks of `content`, an image of `format`, read by `recognizer`. Reports one step of
/// progress before and after reading (which keeps the processing job's lease).
pub(crate) fn chunks(
    recognizer: &dyn TextRecognizer,
    format: FileFormat,
    content: &[u8],
    chunker: &Chunker<'_>,
    limits: &Limits,
    progress: &dyn Fn(ExtractionProgress),
) -> Result<Vec<ChunkDraft>, DocumentError> {
    if let Some((width, height)) = dimensions(format, content) {
        let pixels = u64::from(width) * u64::from(height);
        if pixels > MAX_IMAGE_PIXELS {
            return Err(DocumentError::TooLarge(format!(
                "the image is {width} × {height} pixels; at most {} million are read",
                MAX_IMAGE_PIXELS / 1_000_000
            )));
        }
    }
    progress(ExtractionProgress { done: 0, total: 1 });
    let recognized = recognizer.image(content, format);
    progress(ExtractionProgress { done: 1, total: 1 });
    let text = match recognized {
        Ok(text) => crate::pdf::clean(&text),
        Err(error) => {
            tracing::warn!(format = format.as_str(), %error, "an image could not be read by OCR");
            return Err(corrupt(&error));
        }
    };
    if !text.chars().any(char::is_alphanumeric) {
        return Err(DocumentError::Empty);
    }
    crate::text::check(&text, limits)?;
    Ok(chunker.prose(&text, 0, None, None))
}

fn corrupt(error: &RecognitionError) -> DocumentError {
    DocumentError::Corrupt(error.to_string())
}

/// The width and height an image's header declares, when it can be read from it. `None`
/// leaves the image to the decoder, which then names what is wrong with it.
pub(crate) fn dimensions(format: FileFormat, content: &[u8]) -> Option<(u32, u32)> {
    match format {
        FileFormat::Png => png(content),
        FileFormat::Jpeg => jpeg(content),
        FileFormat::Gif => gif(content),
        FileFormat::Webp => webp(content),
        _ => None,
    }
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    let field: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    Some(u32::from_be_bytes(field))
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    let field: [u8; 2] = bytes.get(at..at + 2)?.try_into().ok()?;
    Some(u16::from_be_bytes(field))
}

fn le16(bytes: &[u8], at: usize) -> Option<u16> {
    let field: [u8; 2] = bytes.get(at..at + 2)?.try_into().ok()?;
    Some(u16::from_le_bytes(field))
}

fn le24(bytes: &[u8], at: usize) -> Option<u32> {
    let field = bytes.get(at..at + 3)?;
    Some(u32::from(field[0]) | (u32::from(field[1]) << 8) | (u32::from(field[2]) << 16))
}

/// PNG: the `IHDR` chunk comes first, width and height as big-endian 32-bit numbers.
fn png(content: &[u8]) -> Option<(u32, u32)> {
    if content.get(12..16)? != b"IHDR" {
        return None;
    }
    Some((be32(content, 16)?, be32(content, 20)?))
}

/// GIF: the logical screen's width and height (little-endian 16-bit) after the signature; no
/// frame is larger than its screen for the decoder.
fn gif(content: &[u8]) -> Option<(u32, u32)> {
    Some((u32::from(le16(content, 6)?), u32::from(le16(content, 8)?)))
}

/// JPEG: the first start-of-frame segment (any SOFn but DHT, JPG and DAC), found by walking
/// the segments from the start of image; the scan (SOS) never comes before it.
fn jpeg(content: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        // Markers may be preceded by fill bytes 0xFF.
        while *content.get(at)? == 0xFF && *content.get(at + 1)? == 0xFF {
            at += 1;
        }
        if *content.get(at)? != 0xFF {
            return None;
        }
        let marker = *content.get(at + 1)?;
        match marker {
            // Markers without a length: TEM, RSTn.
            0x01 | 0xD0..=0xD7 => {
                at += 2;
                continue;
            }
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                let height = be16(content, at + 5)?;
                let width = be16(content, at + 7)?;
                return Some((u32::from(width), u32::from(height)));
            }
            // Start of scan or end of image before any frame: no size to read.
            0xDA | 0xD9 => return None,
            _ => {}
        }
        let length = usize::from(be16(content, at + 2)?);
        if length < 2 {
            return None;
        }
        at += 2 + length;
    }
}

/// WebP: the first chunk after the RIFF header is the lossy (`VP8 `), lossless (`VP8L`) or
/// extended (`VP8X`, the canvas) bitstream's, each with its own size fields.
fn webp(content: &[u8]) -> Option<(u32, u32)> {
    let chunk = content.get(12..16)?;
    let data = 20;
    match chunk {
        b"VP8 " => {
            // A frame tag (3 bytes), the start code 9d 01 2a, then 14-bit sizes.
            if content.get(data + 3..data + 6)? != [0x9d, 0x01, 0x2a] {
                return None;
            }
            let width = le16(content, data + 6)? & 0x3FFF;
            let height = le16(content, data + 8)? & 0x3FFF;
            Some((u32::from(width), u32::from(height)))
        }
        b"VP8L" => {
            if *content.get(data)? != 0x2F {
                return None;
            }
            let bits = u32::from_le_bytes(content.get(data + 1..data + 5)?.try_into().ok()?);
            Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8X" => Some((le24(content, data + 4)? + 1, le24(content, data + 7)? + 1)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn sizes_are_read_from_each_formats_header() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(&1700u32.to_be_bytes());
        png.extend_from_slice(&2200u32.to_be_bytes());
        png.extend_from_slice(b"\x08\0\0\0\0");
        assert_eq!(dimensions(FileFormat::Png, &png), Some((1700, 2200)));

        let gif = b"GIF89a\x40\x06\x98\x08\xf7\0\0";
        assert_eq!(dimensions(FileFormat::Gif, gif), Some((1600, 2200)));

        // SOI, an APP0 segment of 16 bytes, fill bytes, then a baseline frame (SOF0).
        let mut jpeg = b"\xff\xd8\xff\xe0\x00\x10JFIF\0\x01\x01\0\0\x01\0\x01\0\0".to_vec();
        jpeg.extend_from_slice(b"\xff\xff\xc0\x00\x11\x08\x08\x98\x06\x40\x03");
        assert_eq!(dimensions(FileFormat::Jpeg, &jpeg), Some((1600, 2200)));
        // A DHT segment (0xC4) is no frame; a scan before any frame leaves the size unknown.
        let dht_then_scan = b"\xff\xd8\xff\xc4\x00\x04\x00\x00\xff\xda\x00\x02";
        assert_eq!(dimensions(FileFormat::Jpeg, dht_then_scan), None);
        assert_eq!(
            dimensions(FileFormat::Jpeg, b"\xff\xd8 this is not a JPEG"),
            None
        );

        let mut lossy = b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0".to_vec();
        lossy.extend_from_slice(b"\x9d\x01\x00\x9d\x01\x2a\x40\x06\x98\x08");
        assert_eq!(dimensions(FileFormat::Webp, &lossy), Some((1600, 2200)));
        let mut lossless = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        let bits: u32 = (1600 - 1) | ((2200 - 1) << 14);
        lossless.extend_from_slice(&bits.to_le_bytes());
        assert_eq!(dimensions(FileFormat::Webp, &lossless), Some((1600, 2200)));
        let mut extended = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\x10\0\0\0".to_vec();
        extended.extend_from_slice(&[0x3F, 0x06, 0x00, 0x97, 0x08, 0x00]);
        assert_eq!(dimensions(FileFormat::Webp, &extended), Some((1600, 2200)));

        assert_eq!(dimensions(FileFormat::Png, b"\x89PNG\r\n\x1a\n"), None);
        assert_eq!(dimensions(FileFormat::Pdf, b"%PDF-1.5"), None);
    }

    #[test]
    fn recognised_text_loses_its_control_characters() {
        assert_eq!(
            crate::pdf::clean("  The keeper\r\ncounted\u{c}\n\u{0}"),
            "The keeper\n\ncounted"
        );
    }
}
