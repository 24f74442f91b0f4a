//! Finding artifacts (rich content: documents, code, pages, images, diagrams) in an
//! assistant message's markdown text: which parts are artifacts, of what kind, under which
//! title and identifier. A pure function; storing and versioning are the caller's.
//!
//! Rules:
//! - **Fenced blocks** (CommonMark style): 3+ backticks or tildes indented at most 3 spaces,
//!   closed by a fence of the same character at least as long (or by the end of the message).
//!   Shorter fences inside are content; content lines lose up to the opening fence's
//!   indentation; trailing blank lines are dropped. The info string's first word, lowercased,
//!   is the language: `mermaid` → Mermaid; `svg`, or `xml`/none holding an `<svg` document
//!   (optionally after `<?xml …?>`) → Svg; `html`/`htm`, or none holding `<!doctype html` or
//!   `<html` → Html; `markdown`/`md` → Markdown; any other → Code (none → Code without a
//!   language). Blocks with blank content are skipped.
//! - **Whole-message documents**, only when the message has no fenced block: an SVG document
//!   (`<svg` … `</svg>`), an HTML document, or markdown whose first non-blank line is a
//!   level-1 or level-2 ATX heading and that has at least 3 non-blank lines.
//! - **Titles**: Markdown → its first ATX heading; Html → `<title>`, else the first `<h1>`
//!   (inner tags stripped); Svg → its first `<title>`; Mermaid → front matter `title:`, else a
//!   `title …` line; Code → a file name in the info string (`title=`, `file=`, `filename=`,
//!   quotes optional, or a second word containing a '.'), else the nearest heading above the
//!   block outside any block. Otherwise derived: "Rust code" ("Code"), "Document",
//!   "HTML page", "SVG image", or the mermaid diagram type ("Flowchart", …, "Mermaid
//!   diagram"). Whitespace and control characters are collapsed, basic character references
//!   in HTML/SVG titles are decoded, and titles are cut to 200 characters.
//! - **Identifiers**: the slug of the final title (lowercase ASCII letters and digits, any
//!   other run as one '-', at most 100 characters; the kind's name when nothing is left).
//!   Repeats within one message become `<id>-2`, `<id>-3`, …

use std::collections::{HashMap, HashSet};

/// The longest title, in characters.
const MAX_TITLE_CHARS: usize = 200;
/// The longest identifier, in characters (all ASCII).
const MAX_IDENTIFIER_CHARS: usize = 100;

/// What an artifact holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArtifactKind {
    Markdown,
    Code,
    Html,
    Svg,
    Mermaid,
}

impl ArtifactKind {
    const ALL: [Self; 5] = [
        Self::Markdown,
        Self::Code,
        Self::Html,
        Self::Svg,
        Self::Mermaid,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Markdown => "markdown",
            Self::Code => "code",
            Self::Html => "html",
            Self::Svg => "svg",
            Self::Mermaid => "mermaid",
        }
    }

    /// The kind named `text` (exactly as [`as_str`](Self::as_str) spells it).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// The media type its content is served with.
    pub fn media_type(self) -> &'static str {
        match self {
            Self::Markdown => "text/markdown; charset=utf-8",
            Self::Code => "text/plain; charset=utf-8",
            Self::Html => "text/html; charset=utf-8",
            Self::Svg => "image/svg+xml",
            Self::Mermaid => "text/vnd.mermaid; charset=utf-8",
        }
    }

    /// The title when the content names none (code and mermaid refine it).
    fn default_title(self) -> &'static str {
        match self {
            Self::Markdown => "Document",
            Self::Code => "Code",
            Self::Html => "HTML page",
            Self::Svg => "SVG image",
            Self::Mermaid => "Mermaid diagram",
        }
    }
}

/// One artifact found in a message (before it is stored and versioned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractedArtifact {
    pub kind: ArtifactKind,
    /// The code's language (lowercase, as written after the fence), for `Code` only.
    pub language: Option<String>,
    /// Human title, at most 200 characters (cut on a char boundary), never empty.
    pub title: String,
    /// Stable key within a chat: a later message with an artifact of the same identifier
    /// revises it (a new version). Lowercase ASCII letters, digits and '-', at most 100 chars,
    /// never empty.
    pub identifier: String,
    pub content: String,
}

/// The artifacts of an assistant message, in order of appearance.
pub fn extract_artifacts(message: &str) -> Vec<ExtractedArtifact> {
    let blocks: Vec<Block<'_>> = scan(message)
        .into_iter()
        .filter_map(|item| match item {
            Item::Block(block) => Some(block),
            Item::Heading(_) => None,
        })
        .collect();
    let mut found: Vec<ExtractedArtifact> = if blocks.is_empty() {
        whole_document(message).into_iter().collect()
    } else {
        blocks.into_iter().filter_map(from_block).collect()
    };
    number_repeats(&mut found);
    found
}

// ---------------------------------------------------------------------------------------
// Markdown structure: fences and headings
// ---------------------------------------------------------------------------------------

/// A fenced block of the text.
struct Block<'a> {
    info: &'a str,
    content: String,
    /// The last heading outside any block above this one.
    heading_above: Option<String>,
}

/// What the scan finds, in order.
enum Item<'a> {
    Heading(String),
    Block(Block<'a>),
}

/// An opening fence.
struct Fence<'a> {
    marker: u8,
    length: usize,
    indent: usize,
    info: &'a str,
}

impl<'a> Fence<'a> {
    fn open(line: &'a str) -> Option<Self> {
        let rest = line.trim_start_matches(' ');
        let indent = line.len() - rest.len();
        let marker = *rest
            .as_bytes()
            .first()
            .filter(|b| matches!(b, b'`' | b'~'))?;
        let length = rest.bytes().take_while(|b| *b == marker).count();
        let info = rest[length..].trim();
        // A backtick fence's info string holds no backtick (that would be inline code).
        if indent > 3 || length < 3 || (marker == b'`' && info.contains('`')) {
            return None;
        }
        Some(Self {
            marker,
            length,
            indent,
            info,
        })
    }

    fn closed_by(&self, line: &str) -> bool {
        let rest = line.trim_start_matches(' ');
        let run = rest.bytes().take_while(|b| *b == self.marker).count();
        line.len() - rest.len() <= 3 && run >= self.length && rest[run..].trim().is_empty()
    }

    /// A content line without (up to) the fence's indentation.
    fn unindent<'l>(&self, line: &'l str) -> &'l str {
        let spaces = line
            .bytes()
            .take(self.indent)
            .take_while(|b| *b == b' ')
            .count();
        &line[spaces..]
    }
}

/// The fenced blocks and the headings outside them, in order.
fn scan(text: &str) -> Vec<Item<'_>> {
    let mut items = Vec::new();
    let mut heading_above: Option<String> = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(fence) = Fence::open(line) {
            let mut content: Vec<&str> = Vec::new();
            for line in lines.by_ref() {
                if fence.closed_by(line) {
                    break;
                }
                content.push(fence.unindent(line));
            }
            while content.last().is_some_and(|line| line.trim().is_empty()) {
                content.pop();
            }
            items.push(Item::Block(Block {
                info: fence.info,
                content: content.join("\n"),
                heading_above: heading_above.clone(),
            }));
        } else if let Some((_, text)) = atx_heading(line) {
            heading_above = Some(text.clone());
            items.push(Item::Heading(text));
        }
    }
    items
}

/// An ATX heading's level and text (`## Title ##` → `(2, "Title")`); `None` for other lines
/// and for headings without text.
fn atx_heading(line: &str) -> Option<(usize, String)> {
    let rest = line.trim_start_matches(' ');
    if line.len() - rest.len() > 3 {
        return None;
    }
    let level = rest.bytes().take_while(|b| *b == b'#').count();
    let after = &rest[level..];
    if !(1..=6).contains(&level) || !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    let text = after.trim();
    // A closing sequence of '#'s counts only after a space (`# C#` is about C#).
    let unclosed = text.trim_end_matches('#');
    let text = if unclosed.is_empty() {
        ""
    } else if unclosed.ends_with([' ', '\t']) {
        unclosed.trim_end()
    } else {
        text
    };
    (!text.is_empty()).then(|| (level, text.to_owned()))
}

// ---------------------------------------------------------------------------------------
// Kinds
// ---------------------------------------------------------------------------------------

fn from_block(block: Block<'_>) -> Option<ExtractedArtifact> {
    if block.content.trim().is_empty() {
        return None;
    }
    // The info string is trimmed: its first word is the language, the rest may name a file.
    let (first, rest) = block
        .info
        .split_once(char::is_whitespace)
        .unwrap_or((block.info, ""));
    let language = Some(first.to_lowercase()).filter(|language| !language.is_empty());
    let content = block.content;
    let kind = match language.as_deref() {
        Some("mermaid") => ArtifactKind::Mermaid,
        Some("svg") => ArtifactKind::Svg,
        Some("xml") | None if is_svg(&content) => ArtifactKind::Svg,
        Some("html" | "htm") => ArtifactKind::Html,
        None if is_html(&content) => ArtifactKind::Html,
        Some("markdown" | "md") => ArtifactKind::Markdown,
        _ => ArtifactKind::Code,
    };
    if kind != ArtifactKind::Code {
        let title = content_title(kind, &content);
        return Some(artifact(kind, None, title, content));
    }
    let title = file_name(rest)
        .or_else(|| block.heading_above.as_deref().and_then(clean_title))
        .unwrap_or_else(|| {
            let derived = match &language {
                Some(language) => format!("{} code", capitalized(language)),
                None => ArtifactKind::Code.default_title().to_owned(),
            };
            clean_title(&derived).unwrap_or_else(|| ArtifactKind::Code.default_title().into())
        });
    Some(artifact(ArtifactKind::Code, language, title, content))
}

/// A whole message that is itself a document (the message has no fenced block).
fn whole_document(message: &str) -> Option<ExtractedArtifact> {
    let text = message.trim();
    let kind = if is_svg(text) && text.ends_with("</svg>") {
        ArtifactKind::Svg
    } else if is_html(text) {
        ArtifactKind::Html
    } else if is_markdown_document(text) {
        ArtifactKind::Markdown
    } else {
        return None;
    };
    let title = content_title(kind, text);
    Some(artifact(kind, None, title, text.to_owned()))
}

fn is_markdown_document(text: &str) -> bool {
    let mut lines = text.lines().filter(|line| !line.trim().is_empty());
    matches!(lines.next().and_then(atx_heading), Some((1 | 2, _))) && lines.count() >= 2
}

/// Whether `text` opens with `tag` (ASCII case-insensitive when `ignore_case`), followed by
/// the end, '>', '/' or whitespace.
fn opens_with(text: &str, tag: &str, ignore_case: bool) -> bool {
    let Some(start) = text.get(..tag.len()) else {
        return false;
    };
    let matched = if ignore_case {
        start.eq_ignore_ascii_case(tag)
    } else {
        start == tag
    };
    matched
        && text[tag.len()..]
            .chars()
            .next()
            .is_none_or(|c| c == '>' || c == '/' || c.is_whitespace())
}

/// An SVG document: `<svg`, optionally after an `<?xml …?>` declaration.
fn is_svg(content: &str) -> bool {
    let mut text = content.trim_start();
    if text.starts_with("<?xml") {
        match text.find("?>") {
            Some(end) => text = text[end + 2..].trim_start(),
            None => return false,
        }
    }
    opens_with(text, "<svg", false)
}

/// An HTML document: `<!doctype html` or `<html`, in any case.
fn is_html(content: &str) -> bool {
    let text = content.trim_start();
    opens_with(text, "<!doctype html", true) || opens_with(text, "<html", true)
}

fn artifact(
    kind: ArtifactKind,
    language: Option<String>,
    title: String,
    content: String,
) -> ExtractedArtifact {
    ExtractedArtifact {
        identifier: slug(&title, kind),
        kind,
        language,
        title,
        content,
    }
}

// ---------------------------------------------------------------------------------------
// Titles
// ---------------------------------------------------------------------------------------

/// Whitespace (and control characters) collapsed to single spaces, cut to
/// [`MAX_TITLE_CHARS`]; `None` when nothing is left.
fn clean_title(text: &str) -> Option<String> {
    let collapsed = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let cut: String = collapsed.chars().take(MAX_TITLE_CHARS).collect();
    let cut = cut.trim_end();
    (!cut.is_empty()).then(|| cut.to_owned())
}

/// The title a non-code artifact's content gives it, or the kind's derived title.
fn content_title(kind: ArtifactKind, content: &str) -> String {
    let found = match kind {
        ArtifactKind::Markdown => scan(content).into_iter().find_map(|item| match item {
            Item::Heading(text) => clean_title(&text),
            Item::Block(_) => None,
        }),
        ArtifactKind::Html => {
            element_text(content, "title").or_else(|| element_text(content, "h1"))
        }
        ArtifactKind::Svg => element_text(content, "title"),
        ArtifactKind::Mermaid => Some(mermaid_title(content)),
        ArtifactKind::Code => None,
    };
    found.unwrap_or_else(|| kind.default_title().to_owned())
}

/// The text of the first `<tag …>…</tag>` element (tags matched case-insensitively), inner
/// tags removed, character references decoded; `None` when absent or blank.
fn element_text(content: &str, tag: &str) -> Option<String> {
    // ASCII lowercasing keeps every byte offset, so offsets in `lower` hold in `content`.
    let lower = content.to_ascii_lowercase();
    let open = format!("<{tag}");
    let close = format!("</{tag}");
    let mut from = 0;
    let name_end = loop {
        let at = from + lower[from..].find(&open)? + open.len();
        if lower[at..]
            .chars()
            .next()
            .is_some_and(|c| c == '>' || c.is_ascii_whitespace())
        {
            break at;
        }
        from = at;
    };
    let start = name_end + lower[name_end..].find('>')? + 1;
    let end = start + lower[start..].find(&close)?;
    clean_title(&decode_references(&strip_tags(&content[start..end])))
}

fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Decodes `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`, `&nbsp;` and numeric references;
/// anything else is left as written.
fn decode_references(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let decoded = after
            .char_indices()
            .take(12)
            .find(|(_, c)| *c == ';')
            .and_then(|(end, _)| reference(&after[..end]).map(|c| (c, end)));
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn reference(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some('\u{a0}'),
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

/// Front matter `title:`, else a `title …` line (or `pie title …`), else the diagram type.
fn mermaid_title(content: &str) -> String {
    let mut lines = content
        .lines()
        .map(str::trim_end)
        .filter(|line| !line.trim().is_empty());
    let mut front_matter_title = None;
    let mut first = lines.next();
    if first.map(str::trim) == Some("---") {
        for line in lines.by_ref() {
            if line.trim() == "---" {
                break;
            }
            // Only the top-level key (not e.g. a nested `config` entry).
            if let Some(value) = line.strip_prefix("title:") {
                front_matter_title =
                    front_matter_title.or_else(|| clean_title(unquoted(value.trim())));
            }
        }
        first = lines.next();
    }
    if let Some(title) = front_matter_title {
        return title;
    }
    // `%%` lines are comments and directives (`%%{init: …}%%`).
    let mut body = first
        .into_iter()
        .chain(lines)
        .map(str::trim)
        .filter(|line| !line.starts_with("%%"));
    let Some(declaration) = body.next() else {
        return ArtifactKind::Mermaid.default_title().to_owned();
    };
    let mut words = declaration.split_whitespace();
    let diagram = words.next().unwrap_or_default();
    let inline_title = (diagram == "pie")
        .then(|| words.skip_while(|word| *word != "title").skip(1))
        .and_then(|rest| clean_title(&rest.collect::<Vec<_>>().join(" ")));
    let title_line = || {
        body.find_map(|line| {
            line.strip_prefix("title")
                .filter(|rest| rest.starts_with(char::is_whitespace))
                .and_then(clean_title)
        })
    };
    inline_title.or_else(title_line).unwrap_or_else(|| {
        match diagram {
            "graph" | "flowchart" => "Flowchart",
            "sequenceDiagram" => "Sequence diagram",
            "classDiagram" => "Class diagram",
            "erDiagram" => "ER diagram",
            "gantt" => "Gantt chart",
            "pie" => "Pie chart",
            "stateDiagram" | "stateDiagram-v2" => "State diagram",
            _ => ArtifactKind::Mermaid.default_title(),
        }
        .to_owned()
    })
}

fn unquoted(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// A file name in the info string after the language: the value of `title=`, `file=` or
/// `filename=` (quotes optional), else the first word when it holds a '.'.
fn file_name(rest: &str) -> Option<String> {
    let words = info_words(rest);
    let named = words.iter().find_map(|word| {
        let (key, value) = word.split_once('=')?;
        let key = key.to_ascii_lowercase();
        if matches!(key.as_str(), "title" | "file" | "filename") {
            clean_title(value)
        } else {
            None
        }
    });
    named.or_else(|| {
        words
            .first()
            .filter(|word| word.contains('.') && !word.contains('='))
            .and_then(|word| clean_title(word))
    })
}

/// Whitespace-separated words, where a quoted part (`"…"` or `'…'`) may hold whitespace; the
/// quotes are removed.
fn info_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            None => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// Identifiers
// ---------------------------------------------------------------------------------------

fn slug(title: &str, kind: ArtifactKind) -> String {
    let mut slug = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.truncate(MAX_IDENTIFIER_CHARS);
    let slug = slug.trim_matches('-');
    if slug.is_empty() {
        kind.as_str().to_owned()
    } else {
        slug.to_owned()
    }
}

/// Repeats within one message become `<id>-2`, `<id>-3`, … (skipping identifiers already
/// taken, and cutting the base so that the result stays within the length limit).
fn number_repeats(found: &mut [ExtractedArtifact]) {
    let mut taken: HashSet<String> = HashSet::new();
    let mut next: HashMap<String, usize> = HashMap::new();
    for artifact in found {
        if taken.insert(artifact.identifier.clone()) {
            continue;
        }
        let number = next.entry(artifact.identifier.clone()).or_insert(2);
        loop {
            let suffix = format!("-{number}");
            let keep = MAX_IDENTIFIER_CHARS - suffix.len();
            let base =
                artifact.identifier[..artifact.identifier.len().min(keep)].trim_end_matches('-');
            let candidate = format!("{base}{suffix}");
            *number += 1;
            if taken.insert(candidate.clone()) {
                artifact.identifier = candidate;
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ArtifactKind::{Code, Html, Markdown, Mermaid, Svg};

    /// (kind, language, title, identifier) of each artifact.
    fn summary(message: &str) -> Vec<(ArtifactKind, Option<String>, String, String)> {
        extract_artifacts(message)
            .into_iter()
            .map(|a| (a.kind, a.language, a.title, a.identifier))
            .collect()
    }

    fn row(
        kind: ArtifactKind,
        language: Option<&str>,
        title: &str,
        identifier: &str,
    ) -> (ArtifactKind, Option<String>, String, String) {
        (
            kind,
            language.map(str::to_owned),
            title.to_owned(),
            identifier.to_owned(),
        )
    }

    fn contents(message: &str) -> Vec<String> {
        extract_artifacts(message)
            .into_iter()
            .map(|a| a.content)
            .collect()
    }

    fn titles(message: &str) -> Vec<String> {
        extract_artifacts(message)
            .into_iter()
            .map(|a| a.title)
            .collect()
    }

    #[test]
    fn kinds_round_trip_their_names_and_have_media_types() {
        for kind in ArtifactKind::ALL {
            assert_eq!(ArtifactKind::parse(kind.as_str()), Some(kind));
        }
        let names: Vec<&str> = ArtifactKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names, ["markdown", "code", "html", "svg", "mermaid"]);
        assert_eq!(ArtifactKind::parse("Markdown"), None);
        assert_eq!(ArtifactKind::parse("pdf"), None);
        assert_eq!(Markdown.media_type(), "text/markdown; charset=utf-8");
        assert_eq!(Code.media_type(), "text/plain; charset=utf-8");
        assert_eq!(Html.media_type(), "text/html; charset=utf-8");
        assert_eq!(Svg.media_type(), "image/svg+xml");
        assert_eq!(Mermaid.media_type(), "text/vnd.mermaid; charset=utf-8");
    }

    #[test]
    fn one_message_with_four_kinds() {
        let message = "Here is everything.\n\n\
            ```mermaid\nflowchart LR\n  A --> B\n```\n\n\
            The logo:\n\n\
            ```svg\n<svg xmlns=\"http://www.w3.org/2000/svg\"><circle r=\"1\"/></svg>\n```\n\n\
            ```html\n<!DOCTYPE html>\n<html><head><title>Status page</title></head></html>\n```\n\n\
            ```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\nDone.";
        assert_eq!(
            summary(message),
            [
                row(Mermaid, None, "Flowchart", "flowchart"),
                row(Svg, None, "SVG image", "svg-image"),
                row(Html, None, "Status page", "status-page"),
                row(Code, Some("rust"), "Rust code", "rust-code"),
            ]
        );
        assert_eq!(
            contents(message),
            [
                "flowchart LR\n  A --> B",
                "<svg xmlns=\"http://www.w3.org/2000/svg\"><circle r=\"1\"/></svg>",
                "<!DOCTYPE html>\n<html><head><title>Status page</title></head></html>",
                "fn main() {\n    println!(\"hi\");\n}",
            ]
        );
    }

    #[test]
    fn backtick_and_tilde_fences() {
        let message = "```python\nprint(1)\n```\n~~~js\nconsole.log(1)\n~~~\n";
        assert_eq!(
            summary(message),
            [
                row(Code, Some("python"), "Python code", "python-code"),
                row(Code, Some("js"), "Js code", "js-code"),
            ]
        );
        assert_eq!(contents(message), ["print(1)", "console.log(1)"]);
    }

    #[test]
    fn a_fence_closes_only_with_its_own_character_at_least_as_long() {
        // `~~~` cannot close a backtick fence; a longer closing fence may.
        let message = "```sh\nls\n~~~\npwd\n`````\nafter";
        assert_eq!(contents(message), ["ls\n~~~\npwd"]);
        // A closing fence has nothing after it but spaces.
        let message = "```sh\nls\n``` not a close\n```  \n";
        assert_eq!(contents(message), ["ls\n``` not a close"]);
    }

    #[test]
    fn a_longer_fence_holds_shorter_fences_as_content() {
        let message = "````markdown\n# Guide\n\n```sh\nls\n```\n````\n\n```python\nx = 1\n```";
        assert_eq!(
            summary(message),
            [
                row(Markdown, None, "Guide", "guide"),
                row(Code, Some("python"), "Python code", "python-code"),
            ]
        );
        assert_eq!(contents(message), ["# Guide\n\n```sh\nls\n```", "x = 1"]);
    }

    #[test]
    fn an_unterminated_fence_runs_to_the_end() {
        let message = "Start:\n\n```go\npackage main\n\nfunc main() {}\n\n";
        assert_eq!(
            summary(message),
            [row(Code, Some("go"), "Go code", "go-code")]
        );
        assert_eq!(contents(message), ["package main\n\nfunc main() {}"]);
    }

    #[test]
    fn blank_blocks_are_skipped() {
        let message = "```rust\n```\n```\n  \n\n```\n~~~\n~~~\n```toml\na = 1\n```";
        assert_eq!(
            summary(message),
            [row(Code, Some("toml"), "Toml code", "toml-code")]
        );
    }

    #[test]
    fn the_opening_fence_indentation_is_removed_from_content() {
        let message = "  ```rust\n  let a = 1;\n      let b = 2;\n let c = 3;\n  ```";
        assert_eq!(
            contents(message),
            ["let a = 1;\n    let b = 2;\nlet c = 3;"]
        );
        // Four spaces make an indented code block, not a fence.
        assert!(extract_artifacts("    ```rust\n    let a = 1;\n    ```").is_empty());
        // Backticks in a backtick info string make inline code, not a fence.
        assert!(extract_artifacts("```rust` is inline\nx\n```y```").is_empty());
    }

    #[test]
    fn languages_are_lowercased_and_crlf_lines_are_read() {
        let message = "```Rust\r\nfn a() {}\r\nfn b() {}\r\n```\r\n";
        assert_eq!(
            summary(message),
            [row(Code, Some("rust"), "Rust code", "rust-code")]
        );
        assert_eq!(contents(message), ["fn a() {}\nfn b() {}"]);
    }

    #[test]
    fn svg_is_found_in_xml_and_unlabelled_blocks() {
        let message = "```xml\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg viewBox=\"0 0 1 1\"><title>Dot</title></svg>\n```\n\
            ```\n<svg><title>Ring</title><circle/></svg>\n```\n\
            ```xml\n<note>not a picture</note>\n```\n\
            ```\n<svgx/>\n```";
        assert_eq!(
            summary(message),
            [
                row(Svg, None, "Dot", "dot"),
                row(Svg, None, "Ring", "ring"),
                row(Code, Some("xml"), "Xml code", "xml-code"),
                row(Code, None, "Code", "code"),
            ]
        );
    }

    #[test]
    fn html_is_found_in_labelled_and_unlabelled_blocks() {
        let message = "```htm\n<p>x</p>\n```\n\
            ```\n<!doctype HTML>\n<h1>Hi</h1>\n```\n\
            ```\n  <HTML lang=\"en\"><body>b</body></HTML>\n```\n\
            ```\n<div>fragment</div>\n```";
        assert_eq!(
            summary(message),
            [
                row(Html, None, "HTML page", "html-page"),
                row(Html, None, "Hi", "hi"),
                row(Html, None, "HTML page", "html-page-2"),
                row(Code, None, "Code", "code"),
            ]
        );
    }

    #[test]
    fn whole_message_svg() {
        let message =
            "\n<?xml version=\"1.0\"?>\n<svg width=\"10\"><title>Logo</title><rect/></svg>\n\n";
        assert_eq!(summary(message), [row(Svg, None, "Logo", "logo")]);
        assert_eq!(
            contents(message),
            ["<?xml version=\"1.0\"?>\n<svg width=\"10\"><title>Logo</title><rect/></svg>"]
        );
        // Text after the document: not a whole-message document.
        assert!(extract_artifacts("<svg></svg>\nThat is the logo.").is_empty());
    }

    #[test]
    fn whole_message_html() {
        let message = "<!DOCTYPE html>\n<html>\n<head><title>  Tom &amp; Jerry\n</title></head>\n<body></body>\n</html>";
        assert_eq!(
            summary(message),
            [row(Html, None, "Tom & Jerry", "tom-jerry")]
        );
        assert_eq!(contents(message), [message]);
        assert_eq!(
            summary("<html><body><p>hi</p></body></html>"),
            [row(Html, None, "HTML page", "html-page")]
        );
    }

    #[test]
    fn whole_message_markdown() {
        let message = "\n\n# Release notes ##\n\n- faster\n- smaller\n";
        assert_eq!(
            summary(message),
            [row(Markdown, None, "Release notes", "release-notes")]
        );
        assert_eq!(
            contents(message),
            ["# Release notes ##\n\n- faster\n- smaller"]
        );
        assert_eq!(
            summary("## Plan\nStep one.\nStep two."),
            [row(Markdown, None, "Plan", "plan")]
        );
    }

    #[test]
    fn messages_that_are_not_documents_give_nothing() {
        assert!(extract_artifacts("").is_empty());
        assert!(extract_artifacts("Paris is the capital of France.\n\nIt is big.").is_empty());
        // One heading and one line.
        assert!(extract_artifacts("# Hello\n\nJust one line.").is_empty());
        // Level 3 is not a document heading; nor is a heading after prose.
        assert!(extract_artifacts("### Deep\na\nb\nc").is_empty());
        assert!(extract_artifacts("Intro\n# Title\na\nb").is_empty());
        // `#tag` is not a heading.
        assert!(extract_artifacts("#hashtag\na\nb\nc").is_empty());
        // A fenced block anywhere turns whole-message detection off.
        let message = "# Notes\n\nSome text\n\n```\n\n```\n";
        assert!(extract_artifacts(message).is_empty());
    }

    #[test]
    fn code_titles_from_the_info_string() {
        let message = "```rust title=\"main.rs\"\nfn main() {}\n```\n\
            ```python file=app.py\nx = 1\n```\n\
            ```ts filename='src/my file.ts' {1,3}\nlet a = 1;\n```\n\
            ```go server.go\npackage main\n```\n\
            ```sh copy\nls\n```";
        assert_eq!(
            summary(message),
            [
                row(Code, Some("rust"), "main.rs", "main-rs"),
                row(Code, Some("python"), "app.py", "app-py"),
                row(Code, Some("ts"), "src/my file.ts", "src-my-file-ts"),
                row(Code, Some("go"), "server.go", "server-go"),
                row(Code, Some("sh"), "Sh code", "sh-code"),
            ]
        );
    }

    #[test]
    fn code_titles_from_the_nearest_heading_above() {
        let message = "# Project\n\nSetup first.\n\n## Install   the tool ##\n\n```bash\nnpm i\n```\n\
            ```markdown\n## Inside a block\n```\n\
            ```js\nrun()\n```";
        assert_eq!(
            summary(message),
            [
                row(Code, Some("bash"), "Install the tool", "install-the-tool"),
                row(Markdown, None, "Inside a block", "inside-a-block"),
                // The heading inside the markdown block is not a heading of the message.
                row(Code, Some("js"), "Install the tool", "install-the-tool-2"),
            ]
        );
        // A file name wins over the heading; nothing above gives a derived title.
        assert_eq!(titles("## Server\n```rust lib.rs\nmod a;\n```"), ["lib.rs"]);
        assert_eq!(titles("```\nplain\n```\n# After\n"), ["Code"]);
    }

    #[test]
    fn repeated_identifiers_within_a_message_are_numbered() {
        let message = "```rust\na\n```\n```python\nb\n```\n```rust\nc\n```\n```rust\nd\n```";
        let ids: Vec<String> = extract_artifacts(message)
            .into_iter()
            .map(|a| a.identifier)
            .collect();
        assert_eq!(
            ids,
            ["rust-code", "python-code", "rust-code-2", "rust-code-3"]
        );
        // A numbered identifier already taken by a title is skipped.
        let message = "```a\n1\n```\n```x a-code-2.txt\n2\n```\n```a\n3\n```";
        let ids: Vec<String> = extract_artifacts(message)
            .into_iter()
            .map(|a| a.identifier)
            .collect();
        assert_eq!(ids, ["a-code", "a-code-2-txt", "a-code-2"]);
        let message = "```a\n1\n```\n```x title=a-code-2\n2\n```\n```a\n3\n```";
        let ids: Vec<String> = extract_artifacts(message)
            .into_iter()
            .map(|a| a.identifier)
            .collect();
        assert_eq!(ids, ["a-code", "a-code-2", "a-code-3"]);
    }

    #[test]
    fn titles_are_cut_on_a_char_boundary() {
        let long = "é".repeat(300);
        let message = format!("```md\n# {long}\n```\n```md\n# Café {long}\n```");
        let found = extract_artifacts(&message);
        assert_eq!(found[0].title, "é".repeat(MAX_TITLE_CHARS));
        assert_eq!(found[0].title.chars().count(), 200);
        // Nothing ASCII to name it by: the kind's name.
        assert_eq!(found[0].identifier, "markdown");
        assert_eq!(found[1].title, format!("Café {}", "é".repeat(195)));
        assert_eq!(found[1].identifier, "caf");
        // A cut never leaves a trailing space.
        let spaced = format!("{} tail", "a".repeat(199));
        assert_eq!(
            titles(&format!("```md\n# {spaced}\n```")),
            ["a".repeat(199)]
        );
    }

    #[test]
    fn identifiers_are_at_most_100_characters() {
        let long = "word ".repeat(60);
        let message = format!("```md\n# {long}\n```\n```md\n# {long}\n```");
        let found = extract_artifacts(&message);
        assert_eq!(found[0].title, "word ".repeat(40).trim_end());
        // 100 characters would end in '-': it is removed.
        assert_eq!(
            found[0].identifier,
            "word-".repeat(20).trim_end_matches('-')
        );
        assert_eq!(found[0].identifier.len(), 99);
        // The base is cut so that base and suffix fit.
        let numbered = format!("{}wor-2", "word-".repeat(19));
        assert_eq!(found[1].identifier, numbered);
        assert_eq!(found[1].identifier.len(), 100);
        let x = "x".repeat(150);
        let found = extract_artifacts(&format!("```c {x}.c\n1\n```\n```c {x}.c\n2\n```"));
        assert_eq!(found[0].identifier, "x".repeat(100));
        assert_eq!(found[1].identifier, format!("{}-2", "x".repeat(98)));
        for artifact in found {
            assert!(artifact.identifier.len() <= MAX_IDENTIFIER_CHARS);
        }
    }

    #[test]
    fn html_titles() {
        let message = "```html\n<html><head><TITLE>\n  Sales\n  report </TITLE></head><h1>Other</h1></html>\n```\n\
            ```html\n<body><h1 class=\"big\">Quarterly <em>sales</em> &lt;2025&gt;</h1></body>\n```\n\
            ```html\n<head><title> </title></head><h1>Fallback</h1>\n```\n\
            ```html\n<header><h1x>no</h1x></header>\n```\n\
            ```html\n<h1>1&nbsp;&gt;&nbsp;0 > -1 &bogus; &amp</h1>\n```";
        assert_eq!(
            summary(message),
            [
                row(Html, None, "Sales report", "sales-report"),
                row(Html, None, "Quarterly sales <2025>", "quarterly-sales-2025"),
                row(Html, None, "Fallback", "fallback"),
                row(Html, None, "HTML page", "html-page"),
                row(Html, None, "1 > 0 > -1 &bogus; &amp", "1-0-1-bogus-amp"),
            ]
        );
    }

    #[test]
    fn svg_titles() {
        let message = "```svg\n<svg><g><title>Bar &#38; &#x3C;chart&#x3e;</title></g><title>Second</title></svg>\n```\n\
            ```svg\n<svg><text>Hello</text></svg>\n```";
        assert_eq!(
            summary(message),
            [
                row(Svg, None, "Bar & <chart>", "bar-chart"),
                row(Svg, None, "SVG image", "svg-image"),
            ]
        );
    }

    #[test]
    fn markdown_titles() {
        let message = "```markdown\nIntro line\n\n### Third level ###\n# First\n```";
        assert_eq!(titles(message), ["Third level"]);
        // A heading inside a nested block is not the document's.
        let message = "````md\n```sh\n# a comment\n```\nno heading\n````\n```md\nJust text\n```";
        assert_eq!(
            summary(message),
            [
                row(Markdown, None, "Document", "document"),
                row(Markdown, None, "Document", "document-2"),
            ]
        );
        assert_eq!(titles("```md\n# C#\n```"), ["C#"]);
        // Control characters count as whitespace, written or referenced.
        assert_eq!(titles("```md\n# Bell\u{7}ring\n```"), ["Bell ring"]);
        assert_eq!(
            titles("<svg><title>&#0;Zero&#x9;tab</title></svg>"),
            ["Zero tab"]
        );
    }

    #[test]
    fn mermaid_titles() {
        let front_matter = "```mermaid\n---\nconfig:\n  title: nested\ntitle: \"Checkout flow\"\n---\nsequenceDiagram\n  A->>B: hi\n```";
        let title_line = "```mermaid\ngantt\n  title  Release   plan\n  section A\n```";
        let pie_inline = "```mermaid\npie title Pets adopted\n  \"Dogs\" : 3\n```";
        assert_eq!(titles(front_matter), ["Checkout flow"]);
        assert_eq!(
            summary(title_line),
            [row(Mermaid, None, "Release plan", "release-plan")]
        );
        assert_eq!(titles(pie_inline), ["Pets adopted"]);
        let types = [
            ("graph TD\n  A-->B", "Flowchart"),
            ("flowchart LR\n  A-->B", "Flowchart"),
            ("sequenceDiagram\n  A->>B: x", "Sequence diagram"),
            ("classDiagram\n  A <|-- B", "Class diagram"),
            ("erDiagram\n  A ||--o{ B : has", "ER diagram"),
            ("gantt\n  dateFormat YYYY", "Gantt chart"),
            ("pie\n  \"A\" : 1", "Pie chart"),
            ("stateDiagram\n  [*] --> A", "State diagram"),
            ("stateDiagram-v2\n  [*] --> A", "State diagram"),
            ("journey\n  section A", "Mermaid diagram"),
            // Front matter without a title and a directive are skipped.
            (
                "---\nconfig:\n  theme: dark\n---\n%%{init: {}}%%\nerDiagram\n  A ||--o{ B : has",
                "ER diagram",
            ),
        ];
        for (diagram, title) in types {
            let message = format!("```mermaid\n{diagram}\n```");
            assert_eq!(titles(&message), [title], "{diagram}");
        }
        let found = extract_artifacts("```mermaid\ngraph TD\n  A-->B\n```");
        assert_eq!(found[0].identifier, "flowchart");
        assert_eq!(found[0].language, None);
    }
}
