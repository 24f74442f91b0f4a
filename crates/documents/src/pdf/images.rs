//! Telling a page whose images are damaged from a blank one, before OCR: the renderer draws
//! an undecodable image as nothing and says nothing.

use std::io::Read;

use pdf_extract::{Document, ObjectId};

/// Why every image of the page is damaged, when the page has images and all are; `None` when
/// it has none, or at least one looks sound (or cannot be judged: JBIG2, JPX, CCITT).
pub(super) fn damage(document: &Document, page: ObjectId) -> Option<String> {
    let images = document.get_page_images(page).ok()?;
    let mut reasons = Vec::new();
    for image in &images {
        reasons.push(image_damage(image)?);
    }
    match reasons.as_slice() {
        [] => None,
        [reason] => Some(format!("its image is damaged: {reason}")),
        [first, ..] => Some(format!("its {} images are damaged: {first}", reasons.len())),
    }
}

/// Why one image cannot be decoded, judged from its data's shape (no full decode).
fn image_damage(image: &pdf_extract::xobject::PdfImage<'_>) -> Option<String> {
    if image.width <= 0 || image.height <= 0 {
        return Some(format!("its size is {}×{}", image.width, image.height));
    }
    let filters = image.filters.as_deref().unwrap_or_default();
    let first = filters.first().map(String::as_str);
    match first {
        Some("DCTDecode" | "DCT") if !image.content.starts_with(&[0xFF, 0xD8, 0xFF]) => {
            Some("not a JPEG image".to_owned())
        }
        Some("FlateDecode" | "Fl") => {
            let bits = u64::try_from(image.bits_per_component.unwrap_or(8)).unwrap_or(8);
            let width = u64::try_from(image.width).unwrap_or(0);
            let height = u64::try_from(image.height).unwrap_or(0);
            // One component is the least any colour space has.
            let least = (width * bits).div_ceil(8).saturating_mul(height);
            let mut inflated = 0u64;
            let mut reader = flate2::read::ZlibDecoder::new(image.content).take(least);
            let mut buffer = [0u8; 8192];
            loop {
                match reader.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(read) => inflated += read as u64,
                    Err(_) => return Some("its compressed data is damaged".to_owned()),
                }
            }
            (inflated < least)
                .then(|| format!("it holds {inflated} bytes of pixels where {least} are needed"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::io::Write;

    use pdf_extract::Dictionary;
    use pdf_extract::xobject::PdfImage;

    use super::*;

    fn image<'a>(filter: &str, content: &'a [u8], dictionary: &'a Dictionary) -> PdfImage<'a> {
        PdfImage {
            id: (1, 0),
            width: 10,
            height: 4,
            color_space: Some("DeviceGray".to_owned()),
            filters: Some(vec![filter.to_owned()]),
            bits_per_component: Some(8),
            content,
            origin_dict: dictionary,
        }
    }

    fn deflate(bytes: &[u8]) -> Vec<u8> {
        let mut encoder =
            flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn images_are_judged_by_the_shape_of_their_data() {
        let dictionary = Dictionary::new();
        let sound_jpeg = [0xFF, 0xD8, 0xFF, 0xE0, 0, 16];
        assert_eq!(
            image_damage(&image("DCTDecode", &sound_jpeg, &dictionary)),
            None
        );
        assert_eq!(
            image_damage(&image("DCTDecode", b"GIF89a", &dictionary)),
            Some("not a JPEG image".to_owned())
        );
        let whole = deflate(&[255; 40]);
        assert_eq!(
            image_damage(&image("FlateDecode", &whole, &dictionary)),
            None
        );
        let short = deflate(&[255; 25]);
        assert_eq!(
            image_damage(&image("FlateDecode", &short, &dictionary)),
            Some("it holds 25 bytes of pixels where 40 are needed".to_owned())
        );
        assert_eq!(
            image_damage(&image("FlateDecode", b"not zlib", &dictionary)),
            Some("its compressed data is damaged".to_owned())
        );
        // What cannot be judged from its shape is left to the renderer.
        assert_eq!(image_damage(&image("JBIG2Decode", b"?", &dictionary)), None);
        let mut empty = image("DCTDecode", &sound_jpeg, &dictionary);
        empty.width = 0;
        assert_eq!(image_damage(&empty), Some("its size is 0×4".to_owned()));
    }
}
