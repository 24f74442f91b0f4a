//! The positioned words of one PDF page, for finding tables: an [`OutputDev`] that gathers
//! the glyphs `pdf-extract` draws into words (split at whitespace and at gaps between drawn
//! strings, as its plain text output inserts spaces), and words into lines by baseline.
//!
//! Positions are only trusted on plain upright text: a page with rotated, mirrored or
//! skewed glyphs, glyphs without a size or width, or more glyphs than [`MAX_GLYPHS`] yields
//! no lines, and is read as plain text only.

use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};

/// Beyond this many glyphs on a page its positions are dropped: a bound on the memory a
/// hostile page can take here (a dense page of text holds about 5,000).
const MAX_GLYPHS: usize = 100_000;
/// A string drawn further right than this (in font sizes) from the end of the word before
/// starts a new word; the threshold `pdf-extract`'s plain text output inserts a space at.
const WORD_GAP: f64 = 0.1;
/// A string drawn this far (in font sizes) back over the word before still continues it
/// (negative kerning).
const WORD_OVERLAP: f64 = 0.25;
/// Words whose baselines are closer than this (in font sizes) are on one line; superscripts
/// stay on their line.
const BASELINE_TOLERANCE: f64 = 0.4;
/// Glyphs farther off the text's axes than this are rotated or skewed.
const AXIS_TOLERANCE: f64 = 1e-3;

/// A word on the page: its left and right edge and baseline in points (PDF space, `y` up).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Word {
    pub x0: f64,
    pub x1: f64,
    pub y: f64,
    /// The font size in points as drawn.
    pub size: f64,
    pub text: String,
}

/// Words sharing a baseline, left to right.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Line {
    pub y: f64,
    /// The largest font size of its words.
    pub size: f64,
    pub words: Vec<Word>,
}

/// Collects a page's words; [`Collector::finish`] gives its lines.
#[derive(Debug, Default)]
pub(super) struct Collector {
    words: Vec<Word>,
    current: Option<Word>,
    /// The next glyph begins a string drawn by its own operator.
    string_start: bool,
    glyphs: usize,
    zero_width: usize,
    untrusted: bool,
}

impl Collector {
    /// The page's lines top-down, or `None` when its positions are not to be trusted.
    pub fn finish(mut self) -> Option<Vec<Line>> {
        self.flush();
        // A font without widths puts every glyph at the start of its string.
        if self.untrusted || self.zero_width * 10 > self.glyphs {
            return None;
        }
        Some(lines(self.words))
    }

    fn flush(&mut self) {
        if let Some(word) = self.current.take() {
            self.words.push(word);
        }
    }

    fn distrust(&mut self) {
        self.untrusted = true;
        self.words = Vec::new();
        self.current = None;
    }
}

/// Where a glyph is drawn, in points.
struct Glyph {
    x: f64,
    y: f64,
    size: f64,
    advance: f64,
}

impl Glyph {
    /// `None` for a glyph not drawn upright and unmirrored, or without a finite size.
    fn new(trm: &Transform, width: f64, font_size: f64) -> Option<Self> {
        let (scale_x, scale_y) = (trm.m11, trm.m22);
        let off_axis = trm.m12.abs().max(trm.m21.abs());
        let upright = scale_x > 0.0
            && scale_y > 0.0
            && off_axis <= AXIS_TOLERANCE * scale_x.min(scale_y)
            && font_size > 0.0;
        let glyph = Self {
            x: trm.m31,
            y: trm.m32,
            size: font_size * (scale_x * scale_y).sqrt(),
            advance: width * font_size * scale_x,
        };
        let finite = [glyph.x, glyph.y, glyph.size, glyph.advance]
            .iter()
            .all(|value| value.is_finite());
        (upright && finite && width >= 0.0).then_some(glyph)
    }
}

impl OutputDev for Collector {
    fn begin_page(
        &mut self,
        _page_num: u32,
        _media_box: &MediaBox,
        _art_box: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        _spacing: f64,
        font_size: f64,
        text: &str,
    ) -> Result<(), OutputError> {
        if self.untrusted || text.is_empty() {
            return Ok(());
        }
        self.glyphs += 1;
        let Some(glyph) = Glyph::new(trm, width, font_size).filter(|_| self.glyphs <= MAX_GLYPHS)
        else {
            self.distrust();
            return Ok(());
        };
        let string_start = std::mem::take(&mut self.string_start);
        if text.chars().all(char::is_whitespace) {
            self.flush();
            return Ok(());
        }
        if width == 0.0 {
            self.zero_width += 1;
        }
        let end = glyph.x + glyph.advance;
        if let Some(word) = self.current.as_mut().filter(|word| {
            let gap = glyph.x - word.x1;
            let size = word.size.max(glyph.size);
            (glyph.y - word.y).abs() <= BASELINE_TOLERANCE * size
                && (!string_start || (-WORD_OVERLAP * size..=WORD_GAP * size).contains(&gap))
        }) {
            word.text.push_str(text);
            word.x1 = word.x1.max(end);
            word.size = word.size.max(glyph.size);
            return Ok(());
        }
        self.flush();
        self.current = Some(Word {
            x0: glyph.x,
            x1: end,
            y: glyph.y,
            size: glyph.size,
            text: text.to_owned(),
        });
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        self.string_start = true;
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}

/// Words grouped into lines by baseline, lines top-down, words left to right.
pub(super) fn lines(mut words: Vec<Word>) -> Vec<Line> {
    words.sort_by(|a, b| b.y.total_cmp(&a.y).then(a.x0.total_cmp(&b.x0)));
    let mut lines: Vec<Line> = Vec::new();
    for word in words {
        match lines.last_mut() {
            Some(line)
                if (line.y - word.y).abs() <= BASELINE_TOLERANCE * line.size.max(word.size) =>
            {
                line.size = line.size.max(word.size);
                line.words.push(word);
            }
            _ => lines.push(Line {
                y: word.y,
                size: word.size,
                words: vec![word],
            }),
        }
    }
    for line in &mut lines {
        line.words.sort_by(|a, b| a.x0.total_cmp(&b.x0));
    }
    lines
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn at(x: f64, y: f64) -> Transform {
        Transform::row_major(1.0, 0.0, 0.0, 1.0, x, y)
    }

    /// Draws `text` as one string from `x` at 10 points, each glyph half a font size wide.
    fn draw(collector: &mut Collector, text: &str, x: f64, y: f64) {
        collector.begin_word().unwrap();
        for (index, character) in text.chars().enumerate() {
            let position = at(x + 5.0 * index as f64, y);
            collector
                .output_character(&position, 0.5, 0.0, 10.0, &character.to_string())
                .unwrap();
        }
        collector.end_word().unwrap();
    }

    fn texts(lines: &[Line]) -> Vec<Vec<&str>> {
        lines
            .iter()
            .map(|line| line.words.iter().map(|word| word.text.as_str()).collect())
            .collect()
    }

    #[test]
    fn glyphs_become_words_and_words_lines() {
        let mut collector = Collector::default();
        // Drawn out of order: the lower line first, a cell far right, a kerned word in two
        // strings, and a superscript.
        draw(&mut collector, "second line", 72.0, 686.0);
        draw(&mut collector, "far", 300.0, 700.0);
        draw(&mut collector, "Ta", 72.0, 700.0);
        draw(&mut collector, "ble", 81.5, 700.0);
        draw(&mut collector, "2", 87.0, 703.0);
        let lines = collector.finish().unwrap();
        assert_eq!(
            texts(&lines),
            [vec!["Table", "2", "far"], vec!["second", "line"]]
        );
        let far = &lines[0].words[2];
        assert_eq!(
            (far.x0, far.x1, far.y, far.size),
            (300.0, 315.0, 700.0, 10.0)
        );
    }

    #[test]
    fn rotated_glyphs_or_missing_widths_give_no_lines() {
        let mut collector = Collector::default();
        draw(&mut collector, "upright", 72.0, 700.0);
        let rotated = Transform::row_major(0.0, 1.0, -1.0, 0.0, 300.0, 300.0);
        collector
            .output_character(&rotated, 0.5, 0.0, 10.0, "R")
            .unwrap();
        assert_eq!(collector.finish(), None);

        let mut collector = Collector::default();
        collector.begin_word().unwrap();
        for character in ["a", "b", "c"] {
            collector
                .output_character(&at(72.0, 700.0), 0.0, 0.0, 10.0, character)
                .unwrap();
        }
        assert_eq!(collector.finish(), None);
    }
}
