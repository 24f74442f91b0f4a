//! Markdown: chunked by `text-splitter`'s markdown splitter (headings, fences and lists as
//! boundaries), each chunk labelled with the heading path where it starts.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use tessera_knowledge::ChunkDraft;

use crate::chunking::Chunker;

pub(crate) fn chunks(text: &str, chunker: &Chunker<'_>) -> Vec<ChunkDraft> {
    let sections = Sections::of(text);
    let mut chunks = Vec::new();
    for piece in chunker.markdown_pieces(text) {
        chunker.push(
            &mut chunks,
            piece.chunk,
            piece.char_offset as u64,
            None,
            sections.at(piece.byte_offset),
        );
    }
    chunks
}

/// The heading path in effect from each heading's first byte on.
#[derive(Debug, Default)]
pub(crate) struct Sections {
    starts: Vec<(usize, String)>,
}

impl Sections {
    pub fn of(text: &str) -> Self {
        let mut starts = Vec::new();
        let mut path: Vec<(HeadingLevel, String)> = Vec::new();
        let mut heading: Option<(HeadingLevel, usize, String)> = None;
        for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
            match event {
                Event::Start(Tag::Heading { level, .. }) => {
                    heading = Some((level, range.start, String::new()));
                }
                Event::Text(piece) | Event::Code(piece) => {
                    if let Some((_, _, title)) = heading.as_mut() {
                        title.push_str(&piece);
                    }
                }
                Event::SoftBreak | Event::HardBreak => {
                    if let Some((_, _, title)) = heading.as_mut() {
                        title.push(' ');
                    }
                }
                Event::End(TagEnd::Heading(_)) => {
                    let Some((level, start, title)) = heading.take() else {
                        continue;
                    };
                    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
                    if title.is_empty() {
                        continue;
                    }
                    path.retain(|(outer, _)| *outer < level);
                    path.push((level, title));
                    let joined = path
                        .iter()
                        .map(|(_, title)| title.as_str())
                        .collect::<Vec<_>>()
                        .join(" > ");
                    starts.push((start, joined));
                }
                _ => {}
            }
        }
        Self { starts }
    }

    /// The heading path in effect at `byte`.
    pub fn at(&self, byte: usize) -> Option<&str> {
        let after = self.starts.partition_point(|(start, _)| *start <= byte);
        after
            .checked_sub(1)
            .and_then(|index| self.starts.get(index))
            .map(|(_, path)| path.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_paths_follow_levels_and_skip_fenced_code() {
        let text = "intro\n# Guide\n## Setup `cargo`\n```\n# not a heading\n```\n## Use\n### Deep\n# Appendix\n";
        let sections = Sections::of(text);
        assert_eq!(sections.at(0), None);
        let at = |needle: &str| text.find(needle).and_then(|byte| sections.at(byte));
        assert_eq!(at("# Guide"), Some("Guide"));
        assert_eq!(at("# not"), Some("Guide > Setup cargo"));
        assert_eq!(at("## Use"), Some("Guide > Use"));
        assert_eq!(at("### Deep"), Some("Guide > Use > Deep"));
        assert_eq!(at("# Appendix"), Some("Appendix"));
    }
}
