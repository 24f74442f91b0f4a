//! Cutting text into chunks of at most `max_tokens` tokens of the embedding model (its
//! [`ChunkTokens`], or `cl100k_base` when its tokenizer is not known): prose and markdown
//! through `text-splitter` (semantic boundaries, overlap), lines (csv rows, json values)
//! packed whole, and a last-resort cut at character boundaries for anything still too long.

use tessera_knowledge::{ChunkDraft, ChunkLocation, ChunkTokens, ChunkingSettings};
use text_splitter::{ChunkCharIndex, ChunkConfig, ChunkSizer, MarkdownSplitter, TextSplitter};
use tiktoken_rs::CoreBPE;

/// The smallest `max_tokens` honoured: one character takes at most four tokens (one per UTF-8
/// byte), so any text can be cut into chunks of four tokens.
pub(crate) const MIN_MAX_TOKENS: usize = 4;

/// What chunk sizes are counted in.
#[derive(Clone, Copy)]
pub(crate) enum Sizer<'a> {
    /// `cl100k_base` tokens, for a model whose tokenizer is not known here.
    Tiktoken(&'a CoreBPE),
    /// The embedding model's own tokens.
    Model(&'a dyn ChunkTokens),
}

impl ChunkSizer for Sizer<'_> {
    fn size(&self, chunk: &str) -> usize {
        match self {
            Self::Tiktoken(bpe) => bpe.encode_ordinary(chunk).len(),
            Self::Model(tokens) => tokens.count(chunk),
        }
    }
}

/// Chunk sizing for one document.
pub(crate) struct Chunker<'a> {
    sizer: Sizer<'a>,
    max: usize,
    overlap: usize,
}

/// One line of a line-oriented document (a csv row, a json `path: value` line).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line<'t> {
    pub text: &'t str,
    pub char_start: u64,
}

/// A chunk of whole lines `first..=last`, or a piece of line `first == last` when it alone is
/// too long.
#[derive(Debug)]
pub(crate) struct Packed {
    pub first: usize,
    pub last: usize,
    pub text: String,
    pub tokens: usize,
    pub char_start: u64,
    pub char_end: u64,
}

impl<'a> Chunker<'a> {
    /// `max_tokens` is cut to the model's window and raised to [`MIN_MAX_TOKENS`]; the
    /// overlap is kept below `max_tokens`.
    pub fn new(sizer: Sizer<'a>, settings: ChunkingSettings) -> Self {
        let settings = match sizer {
            Sizer::Model(tokens) => settings.within(tokens.window()),
            Sizer::Tiktoken(_) => settings,
        };
        let max = settings.max_tokens.max(MIN_MAX_TOKENS);
        let overlap = settings.overlap_tokens.min(max - 1);
        Self {
            sizer,
            max,
            overlap,
        }
    }

    pub fn max_tokens(&self) -> usize {
        self.max
    }

    pub fn count(&self, text: &str) -> usize {
        self.sizer.size(text)
    }

    fn config(&self, capacity: usize, overlap: usize) -> ChunkConfig<Sizer<'a>> {
        let capacity = capacity.max(MIN_MAX_TOKENS);
        ChunkConfig::new(capacity)
            .with_overlap(overlap)
            .unwrap_or_else(|_| ChunkConfig::new(capacity))
            .with_sizer(self.sizer)
    }

    /// Chunks prose; `char_base` is the character offset of `text` in the extracted text.
    pub fn prose(
        &self,
        text: &str,
        char_base: u64,
        page: Option<u32>,
        section: Option<&str>,
    ) -> Vec<ChunkDraft> {
        let splitter = TextSplitter::new(self.config(self.max, self.overlap));
        let mut chunks = Vec::new();
        for piece in splitter.chunk_char_indices(text) {
            self.push(
                &mut chunks,
                piece.chunk,
                char_base + piece.char_offset as u64,
                page,
                section,
            );
        }
        chunks
    }

    /// Markdown pieces of `text` (fences and sections kept whole when they fit).
    pub fn markdown_pieces<'t>(&self, text: &'t str) -> Vec<ChunkCharIndex<'t>> {
        MarkdownSplitter::new(self.config(self.max, self.overlap))
            .chunk_char_indices(text)
            .collect()
    }

    /// Adds `text` (at character offset `char_start`) as one chunk, or as several cut at
    /// character boundaries when it is longer than `max_tokens`. Blank text adds nothing.
    pub fn push(
        &self,
        chunks: &mut Vec<ChunkDraft>,
        text: &str,
        char_start: u64,
        page: Option<u32>,
        section: Option<&str>,
    ) {
        let mut rest = text;
        let mut start = char_start;
        while !rest.is_empty() {
            let tokens = self.count(rest);
            let (head, tokens) = if tokens <= self.max {
                (rest, tokens)
            } else {
                self.longest_prefix("", rest)
            };
            let chars = head.chars().count() as u64;
            if !head.trim().is_empty() {
                chunks.push(draft(
                    head.to_owned(),
                    tokens,
                    start..start + chars,
                    page,
                    section.map(str::to_owned),
                ));
            }
            start += chars;
            rest = rest.get(head.len()..).unwrap_or_default();
        }
    }

    /// The longest non-empty prefix of `text` that, written after `lead`, fits in
    /// `max_tokens`, with the token count of `lead` + prefix. A single character is returned
    /// even when it does not fit (possible only with a long `lead`).
    fn longest_prefix<'t>(&self, lead: &str, text: &'t str) -> (&'t str, usize) {
        let bounds: Vec<usize> = text
            .char_indices()
            .map(|(index, _)| index)
            .skip(1)
            .chain(std::iter::once(text.len()))
            .collect();
        let measure = |end: usize| {
            let mut candidate = String::with_capacity(lead.len() + end);
            candidate.push_str(lead);
            candidate.push_str(text.get(..end).unwrap_or_default());
            self.count(&candidate)
        };
        // bounds[0] (one character) is the fallback; search the largest fitting bound.
        let first = bounds.first().copied().unwrap_or(text.len());
        let mut best = (first, measure(first));
        let (mut low, mut high) = (1, bounds.len());
        while low < high {
            let middle = low + (high - low) / 2;
            let end = bounds.get(middle).copied().unwrap_or(text.len());
            let tokens = measure(end);
            if tokens <= self.max {
                best = (end, tokens);
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        (text.get(..best.0).unwrap_or(text), best.1)
    }

    /// Packs lines into chunks of whole lines joined by `"\n"`, each below `header` when one
    /// is given. Consecutive chunks share trailing lines worth at most the overlap; a line too
    /// long for a chunk of its own is cut into pieces (each below the header).
    pub fn pack_lines(&self, lines: &[Line<'_>], header: Option<&str>) -> Vec<Packed> {
        let lead = header
            .map(|header| format!("{header}\n"))
            .unwrap_or_default();
        let budget = self.max.saturating_sub(self.count(&lead));
        let tokens: Vec<usize> = lines.iter().map(|line| self.count(line.text)).collect();
        let token = |index: usize| tokens.get(index).copied().unwrap_or(0);
        let mut packed = Vec::new();
        let mut start = 0;
        while start < lines.len() {
            // Greedy by the lines' own counts (a newline is one token), then checked exactly.
            let mut end = start;
            let mut sum = 0;
            while end < lines.len() {
                let add = token(end) + usize::from(end > start);
                if sum + add > budget {
                    break;
                }
                sum += add;
                end += 1;
            }
            let mut whole = None;
            while end > start {
                let text = join(&lead, lines.get(start..end).unwrap_or_default());
                let count = self.count(&text);
                if count <= self.max {
                    whole = Some((text, count));
                    break;
                }
                end -= 1;
            }
            let Some((text, count)) = whole else {
                if let Some(line) = lines.get(start) {
                    self.split_line(&mut packed, start, line, &lead, budget);
                }
                start += 1;
                continue;
            };
            let (Some(first), Some(last)) = (lines.get(start), lines.get(end - 1)) else {
                break;
            };
            packed.push(Packed {
                first: start,
                last: end - 1,
                text,
                tokens: count,
                char_start: first.char_start,
                char_end: last.char_start + last.text.chars().count() as u64,
            });
            if end >= lines.len() {
                break;
            }
            // Carry trailing lines worth at most the overlap, while the next chunk still makes
            // progress and has room for the next new line.
            let mut next = end;
            let mut carried = 0;
            while next > start + 1 {
                let add = token(next - 1) + 1;
                if carried + add > self.overlap {
                    break;
                }
                carried += add;
                next -= 1;
            }
            if carried + token(end) + 1 > budget {
                next = end;
            }
            start = next;
        }
        packed
    }

    /// Cuts one line too long for a chunk into pieces (prose boundaries first), each written
    /// after `lead`.
    fn split_line(
        &self,
        packed: &mut Vec<Packed>,
        index: usize,
        line: &Line<'_>,
        lead: &str,
        budget: usize,
    ) {
        let overlap = self.overlap.min(budget / 2);
        let splitter = TextSplitter::new(self.config(budget, overlap));
        for piece in splitter.chunk_char_indices(line.text) {
            let mut rest = piece.chunk;
            let mut start = line.char_start + piece.char_offset as u64;
            while !rest.is_empty() {
                let whole = format!("{lead}{rest}");
                let tokens = self.count(&whole);
                let (head, text, tokens) = if tokens <= self.max {
                    (rest, whole, tokens)
                } else {
                    let (head, tokens) = self.longest_prefix(lead, rest);
                    if tokens <= self.max {
                        (head, format!("{lead}{head}"), tokens)
                    } else {
                        // Not even one character fits below the lead: the character alone.
                        (head, head.to_owned(), self.count(head))
                    }
                };
                let chars = head.chars().count() as u64;
                if head.trim().is_empty() {
                    start += chars;
                    rest = rest.get(head.len()..).unwrap_or_default();
                    continue;
                }
                packed.push(Packed {
                    first: index,
                    last: index,
                    text,
                    tokens,
                    char_start: start,
                    char_end: start + chars,
                });
                start += chars;
                rest = rest.get(head.len()..).unwrap_or_default();
            }
        }
    }
}

fn join(lead: &str, lines: &[Line<'_>]) -> String {
    let length = lead.len() + lines.iter().map(|line| line.text.len() + 1).sum::<usize>();
    let mut text = String::with_capacity(length);
    text.push_str(lead);
    for (index, line) in lines.iter().enumerate() {
        if index > 0 {
            text.push('\n');
        }
        text.push_str(line.text);
    }
    text
}

pub(crate) fn draft(
    text: String,
    tokens: usize,
    chars: std::ops::Range<u64>,
    page: Option<u32>,
    section: Option<String>,
) -> ChunkDraft {
    ChunkDraft {
        text,
        token_count: u32::try_from(tokens).unwrap_or(u32::MAX),
        location: ChunkLocation {
            page,
            section,
            char_start: chars.start,
            char_end: chars.end,
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn chunker(max_tokens: usize, overlap_tokens: usize) -> Chunker<'static> {
        Chunker::new(
            Sizer::Tiktoken(tiktoken_rs::cl100k_base_singleton()),
            ChunkingSettings {
                max_tokens,
                overlap_tokens,
            },
        )
    }

    #[test]
    fn settings_are_kept_workable() {
        let tiny = chunker(0, 10);
        assert_eq!(tiny.max, MIN_MAX_TOKENS);
        assert!(tiny.overlap < tiny.max);
    }

    /// A model whose tokens are characters and which reads 60 of them.
    #[derive(Debug)]
    struct Characters;

    impl ChunkTokens for Characters {
        fn count(&self, text: &str) -> usize {
            text.chars().count()
        }

        fn window(&self) -> usize {
            60
        }
    }

    #[test]
    fn chunks_are_sized_in_the_models_tokens_and_cut_to_its_window() {
        let sizer = Sizer::Model(&Characters);
        let settings = ChunkingSettings {
            max_tokens: 200,
            overlap_tokens: 100,
        };
        let model = Chunker::new(sizer, settings);
        assert_eq!((model.max, model.overlap), (60, 59));
        let text = "Short words, in short sentences. ".repeat(20);
        let chunks = model.prose(&text, 0, None, None);
        assert!(chunks.len() > 10, "{} chunks", chunks.len());
        for chunk in &chunks {
            assert_eq!(chunk.token_count as usize, chunk.text.chars().count());
            assert!(chunk.token_count <= 60, "{chunk:?}");
        }
        // In cl100k_base tokens the same text would make chunks of far more characters.
        let tiktoken = chunker(200, 100).prose(&text, 0, None, None);
        assert!(tiktoken.iter().any(|chunk| chunk.text.chars().count() > 60));
    }

    #[test]
    fn one_enormous_grapheme_is_cut_at_characters() {
        // One grapheme cluster of a base letter and 3000 combining marks.
        let text = format!("a{}", "\u{301}".repeat(3000));
        let chunker = chunker(50, 0);
        let mut chunks = Vec::new();
        chunker.push(&mut chunks, &text, 7, None, None);
        assert!(chunks.len() > 1);
        let mut next = 7;
        for chunk in &chunks {
            assert!(chunk.token_count as usize <= 50);
            assert_eq!(chunk.token_count as usize, chunker.count(&chunk.text));
            assert_eq!(chunk.location.char_start, next);
            next = chunk.location.char_end;
        }
        assert_eq!(next, 7 + 3001);
        let joined: String = chunks.iter().map(|chunk| chunk.text.as_str()).collect();
        assert_eq!(joined, text);
    }

    #[test]
    fn lines_are_packed_whole_with_overlap() {
        let texts: Vec<String> = (0..40)
            .map(|index| format!("line number {index} has some words"))
            .collect();
        let mut offset = 0;
        let lines: Vec<Line<'_>> = texts
            .iter()
            .map(|text| {
                let line = Line {
                    text,
                    char_start: offset,
                };
                offset += text.chars().count() as u64 + 1;
                line
            })
            .collect();
        let chunker = chunker(40, 10);
        let packed = chunker.pack_lines(&lines, Some("header"));
        assert!(packed.len() > 3);
        assert_eq!(packed.first().unwrap().first, 0);
        assert_eq!(packed.last().unwrap().last, 39);
        for pair in packed.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            assert!(after.first > before.first, "progress");
            assert!(after.first <= before.last + 1, "no line skipped");
            assert!(after.first >= before.last, "one line of overlap at most");
        }
        for chunk in &packed {
            assert!(chunk.tokens <= 40);
            assert!(chunk.text.starts_with("header\n"));
        }
    }
}
