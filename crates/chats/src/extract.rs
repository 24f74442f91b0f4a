//! Finding artifacts in an assistant answer (a pure function over its markdown text).
//!
//! Rules:
//! - **Fenced blocks** (CommonMark: 3+ backticks or tildes indented at most 3 spaces; closed
//!   by the same character at least as long, or by the end of the answer). The info string's
//!   first word is the language: `mermaid` → Mermaid; `svg`, or `xml`/none holding an
//!   `<svg` document → Svg; `html`/`htm`, or none holding `<!doctype html`/`<html` → Html;
//!   `markdown`/`md` → Markdown; any other language → Code (none → Code without language).
//!   Empty blocks are skipped.
//! - **Whole-answer documents**, only when the answer has no fenced block: an SVG document,
//!   an HTML document, or a markdown document whose first line is a level-1 or level-2
//!   heading and that has at least three non-blank lines.
//! - **Titles**: markdown → its first heading; HTML → `<title>`, else the first `<h1>`; SVG →
//!   `<title>`; Mermaid → a `title` line or front matter; code → a file name in the info
//!   string (`title=`, `file=`, `filename=`, or a second word with a dot), else the nearest
//!   heading above the block. Otherwise derived: "Rust code", "Document", "HTML page",
//!   "SVG image", or the diagram type ("Flowchart", "Sequence diagram", …).
//! - **Identifiers**: the title's slug (lowercase ASCII letters and digits, other runs as
//!   '-'), at most 100 characters; repeats within one answer get `-2`, `-3`, …

use std::collections::HashMap;

/// The longest title, in characters.
const MAX_TITLE_CHARS: usize = 200;
/// The longest identifier, in characters (ASCII).
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
    const ALL: [ArtifactKind; 5] = [
        ArtifactKind::Markdown,
        ArtifactKind::Code,
        ArtifactKind::Html,
        ArtifactKind::Svg,
        ArtifactKind::Mermaid,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ArtifactKind::Markdown => "markdown",
            ArtifactKind::Code => "code",
            ArtifactKind::Html => "html",
            ArtifactKind::Svg => "svg",
            ArtifactKind::Mermaid => "mermaid",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// The media type its content is served with.
    pub fn media_type(self) -> &'static str {
        match self {
            ArtifactKind::Markdown => "text/markdown; charset=utf-8",
            ArtifactKind::Code => "text/plain; charset=utf-8",
            ArtifactKind::Html => "text/html; charset=utf-8",
            ArtifactKind::Svg => "image/svg+xml",
            ArtifactKind::Mermaid => "text/vnd.mermaid; charset=utf-8",
        }
    }
}

/// One artifact found in a message (before it is stored and versioned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractedArtifact {
    pub kind: ArtifactKind,
    /// The code's language (lowercase), for `Code` only.
    pub language: Option<String>,
    /// At most 200 characters, never empty.
    pub title: String,
    /// Same identifier within a chat = the same artifact, revised.
    pub identifier: String,
    pub content: String,
}

/// A fenced block: its info string, content, and the headings seen above it.
struct Fence {
    info: String,
    content: String,
    heading_above: Option<String>,
}

/// The ATX heading text of a line (`# Title #` → `Title`), any level.
fn heading(line: &str) -> Option<(usize, String)> {
    let trimmed = line.trim_start();
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let level = trimmed.bytes().take_while(|b| *b == b'#').count();
    let rest = &trimmed[level..];
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let text = rest.trim().trim_end_matches('#').trim();
    (!text.is_empty()).then(|| (level, text.to_owned()))
}

/// The opening fence of a line: its character, length, indentation and info string.
fn opening(line: &str) -> Option<(char, usize, usize, String)> {
    let trimmed = line.trim_start_matches(' ');
    let indent = line.len() - trimmed.len();
    let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let length = trimmed.chars().take_while(|c| *c == marker).count();
    let info = trimmed[length..].trim();
    // A backtick fence's info string cannot contain backticks (that is inline code).
    if indent > 3 || length < 3 || (marker == '`' && info.contains('`')) {
        return None;
    }
    Some((marker, length, indent, info.to_owned()))
}

fn closes(line: &str, marker: char, length: usize) -> bool {
    let trimmed = line.trim_start_matches(' ');
    line.len() - trimmed.len() <= 3
        && trimmed.chars().take_while(|c| *c == marker).count() >= length
        && trimmed.trim_end().chars().all(|c| c == marker)
}

fn fences(message: &str) -> Vec<Fence> {
    let mut found = Vec::new();
    let mut lines = message.lines();
    let mut heading_above = None;
    while let Some(line) = lines.next() {
        if let Some((marker, length, indent, info)) = opening(line) {
            let mut content = Vec::new();
            for line in lines.by_ref() {
                if closes(line, marker, length) {
                    break;
                }
                let strip = line.len() - line.trim_start_matches(' ').len();
                content.push(&line[strip.min(indent)..]);
            }
            found.push(Fence {
                info,
                content: content.join("\n"),
                heading_above: heading_above.clone(),
            });
        } else if let Some((_, text)) = heading(line) {
            heading_above = Some(text);
        }
    }
    found
}

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(prefix))
}

fn is_svg(content: &str) -> bool {
    let mut text = content.trim_start();
    if text.starts_with("<?xml")
        && let Some(end) = text.find("?>")
    {
        text = text[end + 2..].trim_start();
    }
    text.starts_with("<svg")
}

fn is_html(content: &str) -> bool {
    let text = content.trim_start();
    starts_with_ignore_case(text, "<!doctype html") || starts_with_ignore_case(text, "<html")
}

/// Collapses whitespace and cuts to the title length; `None` when nothing is left.
fn clean(title: &str) -> Option<String> {
    let collapsed = title.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = collapsed.chars().take(MAX_TITLE_CHARS).collect();
    let cut = cut.trim().to_owned();
    (!cut.is_empty()).then_some(cut)
}

/// The text of the first `<tag …>…</tag>` element (case-insensitive), inner tags removed.
fn element_text(content: &str, tag: &str) -> Option<String> {
    let lower = content.to_ascii_lowercase();
    let open = lower.find(&format!("<{tag}"))?;
    let after = lower[open + tag.len() + 1..].chars().next()?;
    if after != '>' && !after.is_whitespace() {
        return None;
    }
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find(&format!("</{tag}"))?;
    let mut text = String::new();
    let mut in_tag = false;
    for c in content[start..end].chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    clean(&text)
}

fn markdown_title(content: &str) -> Option<String> {
    content
        .lines()
        .find_map(heading)
        .and_then(|(_, text)| clean(&text))
}

fn mermaid_title(content: &str) -> String {
    let mut lines = content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .peekable();
    let mut title = None;
    if lines.peek() == Some(&"---") {
        lines.next();
        for line in lines.by_ref() {
            if line == "---" {
                break;
            }
            if let Some(value) = line.strip_prefix("title:") {
                title = clean(value.trim().trim_matches(['"', '\'']));
            }
        }
    }
    let body: Vec<&str> = lines.collect();
    let explicit = body
        .iter()
        .find_map(|line| line.strip_prefix("title ").and_then(clean));
    if let Some(title) = title.or(explicit) {
        return title;
    }
    let kind = body
        .first()
        .and_then(|line| line.split_whitespace().next())
        .unwrap_or_default();
    match kind {
        "graph" | "flowchart" => "Flowchart",
        "sequenceDiagram" => "Sequence diagram",
        "classDiagram" => "Class diagram",
        "erDiagram" => "ER diagram",
        "gantt" => "Gantt chart",
        "pie" => "Pie chart",
        "stateDiagram" | "stateDiagram-v2" => "State diagram",
        _ => "Mermaid diagram",
    }
    .to_owned()
}

/// A file name given in a code fence's info string after the language.
fn file_name(info: &str) -> Option<String> {
    for word in info.split_whitespace().skip(1) {
        if let Some((key, value)) = word.split_once('=')
            && matches!(key, "title" | "file" | "filename")
        {
            return clean(value.trim_matches(['"', '\'']));
        }
        if word.contains('.') && !word.contains('=') {
            return clean(word.trim_matches(['"', '\'']));
        }
    }
    None
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

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

fn from_fence(fence: Fence) -> Option<ExtractedArtifact> {
    if fence.content.trim().is_empty() {
        return None;
    }
    let language = fence
        .info
        .split_whitespace()
        .next()
        .map(str::to_lowercase)
        .filter(|l| !l.is_empty());
    let content = fence.content;
    let found = match language.as_deref() {
        Some("mermaid") => {
            let title = mermaid_title(&content);
            artifact(ArtifactKind::Mermaid, None, title, content)
        }
        Some("svg") => svg(content),
        Some("xml") | None if is_svg(&content) => svg(content),
        Some("html" | "htm") => html(content),
        None if is_html(&content) => html(content),
        Some("markdown" | "md") => {
            let title = markdown_title(&content).unwrap_or_else(|| "Document".into());
            artifact(ArtifactKind::Markdown, None, title, content)
        }
        _ => {
            let title = file_name(&fence.info)
                .or_else(|| fence.heading_above.as_deref().and_then(clean))
                .unwrap_or_else(|| match &language {
                    Some(language) => format!("{} code", capitalized(language)),
                    None => "Code".to_owned(),
                });
            artifact(ArtifactKind::Code, language, title, content)
        }
    };
    Some(found)
}

fn svg(content: String) -> ExtractedArtifact {
    let title = element_text(&content, "title").unwrap_or_else(|| "SVG image".into());
    artifact(ArtifactKind::Svg, None, title, content)
}

fn html(content: String) -> ExtractedArtifact {
    let title = element_text(&content, "title")
        .or_else(|| element_text(&content, "h1"))
        .unwrap_or_else(|| "HTML page".into());
    artifact(ArtifactKind::Html, None, title, content)
}

/// A whole answer that is itself a document.
fn document(message: &str) -> Option<ExtractedArtifact> {
    let text = message.trim();
    if is_svg(text) && text.ends_with("</svg>") {
        return Some(svg(text.to_owned()));
    }
    if is_html(text) {
        return Some(html(text.to_owned()));
    }
    let mut lines = text.lines().filter(|line| !line.trim().is_empty());
    let (level, title) = lines.next().and_then(heading)?;
    (level <= 2 && lines.count() >= 2).then(|| {
        let title = clean(&title).unwrap_or_else(|| "Document".into());
        artifact(ArtifactKind::Markdown, None, title, text.to_owned())
    })
}

/// The artifacts of an assistant message, in order of appearance.
pub fn extract_artifacts(message: &str) -> Vec<ExtractedArtifact> {
    let blocks = fences(message);
    let mut found: Vec<ExtractedArtifact> = if blocks.is_empty() {
        document(message).into_iter().collect()
    } else {
        blocks.into_iter().filter_map(from_fence).collect()
    };
    let mut seen: HashMap<String, usize> = HashMap::new();
    for artifact in &mut found {
        let count = seen.entry(artifact.identifier.clone()).or_insert(0);
        *count += 1;
        if *count > 1 {
            artifact.identifier = format!("{}-{count}", artifact.identifier);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(message: &str) -> Vec<(ArtifactKind, Option<String>, String, String)> {
        extract_artifacts(message)
            .into_iter()
            .map(|a| (a.kind, a.language, a.title, a.identifier))
            .collect()
    }

    fn one(
        kind: ArtifactKind,
        language: Option<&str>,
        title: &str,
        id: &str,
    ) -> (ArtifactKind, Option<String>, String, String) {
        (
            kind,
            language.map(str::to_owned),
            title.to_owned(),
            id.to_owned(),
        )
    }

    #[test]
    fn four_kinds_in_one_answer() {
        let message = "Intro\n\n```mermaid\nflowchart LR\n  A --> B\n```\n\n```svg\n<svg xmlns=\"x\"><title>Dot</title></svg>\n```\n\n```html\n<!DOCTYPE html>\n<html><head><title>Status page</title></head></html>\n```\n\n## Parser\n\n```rust\nfn main() {}\n```\n";
        assert_eq!(
            summary(message),
            [
                one(ArtifactKind::Mermaid, None, "Flowchart", "flowchart"),
                one(ArtifactKind::Svg, None, "Dot", "dot"),
                one(ArtifactKind::Html, None, "Status page", "status-page"),
                one(ArtifactKind::Code, Some("rust"), "Parser", "parser"),
            ]
        );
        assert_eq!(extract_artifacts(message)[3].content, "fn main() {}");
    }

    #[test]
    fn fences_of_either_character_nest_and_may_stay_open() {
        let message = "~~~~markdown\n# Guide\n```sh\nls\n```\n~~~~\n\n```python\nprint(1)";
        let found = extract_artifacts(message);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].kind, ArtifactKind::Markdown);
        assert_eq!(found[0].title, "Guide");
        assert_eq!(found[0].content, "# Guide\n```sh\nls\n```");
        assert_eq!(found[1].language.as_deref(), Some("python"));
        assert_eq!(found[1].content, "print(1)");
        // A heading inside another block is not a heading of the text.
        assert_eq!(found[1].title, "Python code");
    }

    #[test]
    fn empty_blocks_are_skipped_and_svg_and_html_are_recognised_unlabelled() {
        let message = "```\n\n```\n```xml\n<?xml version=\"1.0\"?>\n<svg></svg>\n```\n```\n<svg><title>A</title></svg>\n```\n```\n<HTML><h1>Big <b>news</b></h1></HTML>\n```\n```\nplain text\n```";
        assert_eq!(
            summary(message),
            [
                one(ArtifactKind::Svg, None, "SVG image", "svg-image"),
                one(ArtifactKind::Svg, None, "A", "a"),
                one(ArtifactKind::Html, None, "Big news", "big-news"),
                one(ArtifactKind::Code, None, "Code", "code"),
            ]
        );
    }

    #[test]
    fn whole_answers_can_be_documents() {
        assert_eq!(
            summary("<svg viewBox=\"0 0 1 1\"><title>Logo</title></svg>"),
            [one(ArtifactKind::Svg, None, "Logo", "logo")]
        );
        assert_eq!(
            summary("<!doctype html><p>hi</p>"),
            [one(ArtifactKind::Html, None, "HTML page", "html-page")]
        );
        assert_eq!(
            summary("# Release notes\n\n- one\n- two"),
            [one(
                ArtifactKind::Markdown,
                None,
                "Release notes",
                "release-notes"
            )]
        );
        assert!(summary("# Hello\nJust one line.").is_empty());
        assert!(summary("### Deep\na\nb\nc").is_empty());
        assert!(summary("Paris is the capital of France.").is_empty());
    }

    #[test]
    fn code_titles_come_from_file_names_headings_or_the_language() {
        let message = "```rust title=\"main.rs\"\nfn main() {}\n```\n```python app.py\nx = 1\n```\n```go\npackage main\n```";
        assert_eq!(
            summary(message),
            [
                one(ArtifactKind::Code, Some("rust"), "main.rs", "main-rs"),
                one(ArtifactKind::Code, Some("python"), "app.py", "app-py"),
                one(ArtifactKind::Code, Some("go"), "Go code", "go-code"),
            ]
        );
    }

    #[test]
    fn repeated_identifiers_within_an_answer_are_numbered() {
        let message = "```rust\na\n```\n```rust\nb\n```\n```rust\nc\n```";
        let ids: Vec<String> = extract_artifacts(message)
            .into_iter()
            .map(|a| a.identifier)
            .collect();
        assert_eq!(ids, ["rust-code", "rust-code-2", "rust-code-3"]);
    }

    #[test]
    fn titles_and_identifiers_are_bounded() {
        let message = format!(
            "```md\n# {}\n```\n```md\n# {}\n```",
            "é".repeat(300),
            "x".repeat(300)
        );
        let found = extract_artifacts(&message);
        assert_eq!(found[0].title, "é".repeat(MAX_TITLE_CHARS));
        // Nothing ASCII is left to name it by.
        assert_eq!(found[0].identifier, "markdown");
        assert_eq!(found[1].title.len(), MAX_TITLE_CHARS);
        assert_eq!(found[1].identifier, "x".repeat(MAX_IDENTIFIER_CHARS));
    }

    #[test]
    fn mermaid_titles() {
        let titled = "```mermaid\n---\ntitle: Checkout\n---\nsequenceDiagram\n  A->>B: hi\n```";
        let inline = "```mermaid\npie\n  title Pets\n  \"Dogs\" : 3\n```";
        let typed = "```mermaid\nerDiagram\n  A ||--o{ B : has\n```";
        assert_eq!(extract_artifacts(titled)[0].title, "Checkout");
        assert_eq!(extract_artifacts(inline)[0].title, "Pets");
        assert_eq!(extract_artifacts(typed)[0].title, "ER diagram");
    }

    #[test]
    fn kinds_round_trip_their_names() {
        for kind in ArtifactKind::ALL {
            assert_eq!(ArtifactKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(ArtifactKind::parse("pdf"), None);
        assert_eq!(ArtifactKind::Svg.media_type(), "image/svg+xml");
    }
}
