//! Word (`.docx`): the package is checked first (a zip with a main document part, at
//! most [`MAX_DOCX_UNPACKED_BYTES`] unpacked, no XML nested deeper than
//! [`MAX_DOCX_DEPTH`]), then read with docx-rs. Paragraphs become blocks separated by
//! blank lines, list items one line each, each table row one line with its cells joined
//! by ` | `; paragraphs styled `Title` or `Heading 1`..`Heading 9` (found by the style's
//! name, so localized style ids work, or by an outline level) become sections.

use std::collections::HashMap;
use std::io::{BufReader, Cursor, Read};
use std::path::Path;

use docx_rs::{
    DocumentChild, Docx, InsertChild, MoveToChild, Paragraph, ParagraphChild, ReadDocxOptions, Run,
    RunChild, StructuredDataTag, StructuredDataTagChild, StyleType, Table, TableCellContent,
    TableChild, TableRowChild,
};
use quick_xml::encoding::Decoder;
use quick_xml::events::{BytesRef, BytesStart, Event};

use crate::parsed::{build_sections, collapse_ws, Heading, ParsedDocument};
use crate::IngestError;

/// Most bytes a `.docx` package may unpack to (every part counted, as declared and as
/// actually inflated): a zip bomb of a few kilobytes is refused before docx-rs reads it.
pub const MAX_DOCX_UNPACKED_BYTES: u64 = 256 * 1024 * 1024;

/// Deepest element nesting an XML part of a `.docx` may have. docx-rs reads nested
/// tables (and text boxes, content controls) recursively, so depth costs stack; real
/// documents stay far below (a table nested ten deep is about 50 levels).
pub const MAX_DOCX_DEPTH: usize = 256;

/// Stack of the thread docx-rs runs on: ample for [`MAX_DOCX_DEPTH`] whatever thread
/// the caller loads on (only the pages touched are ever committed).
const READER_STACK_BYTES: usize = 64 * 1024 * 1024;

/// The relationship type of the main document part in `_rels/.rels`.
const OFFICE_DOCUMENT: &str = "/officeDocument";
/// The relationship type of the core properties part.
const CORE_PROPERTIES: &str = "/core-properties";

pub(crate) fn load(
    path: &Path,
    mut doc: ParsedDocument,
    bytes: &[u8],
) -> Result<ParsedDocument, IngestError> {
    let refuse = |reason: String| IngestError::Docx {
        path: path.to_path_buf(),
        reason,
    };
    let package = check_package(bytes).map_err(refuse)?;
    let ex = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("docx-reader".into())
            .stack_size(READER_STACK_BYTES)
            .spawn_scoped(s, || read(bytes))
            .map_err(|e| format!("cannot start the DOCX reader: {e}"))?
            .join()
            .unwrap_or_else(|_| Err("the DOCX reader failed on this file".to_string()))
    })
    .map_err(refuse)?;
    if ex.text.trim().is_empty() {
        return Err(IngestError::Empty {
            path: path.to_path_buf(),
        });
    }
    let title = package
        .title
        .or(ex.title_paragraph)
        .or_else(|| ex.headings.first().map(|h| h.text.clone()));
    if let Some(t) = title.filter(|t| !t.is_empty()) {
        doc.title = t;
    }
    doc.sections =
        build_sections(&ex.text, ex.headings).map_err(|source| IngestError::Invalid {
            doc_id: doc.id.clone(),
            source,
        })?;
    doc.atomic = ex.atomic;
    doc.text = ex.text;
    Ok(doc)
}

/// What the package check learns besides "safe to read": the core properties' title.
#[derive(Debug, Default)]
struct Package {
    title: Option<String>,
}

/// Checks the zip before docx-rs reads it (docx-rs trusts declared sizes and panics on
/// corrupt deflate streams): a zip, with the main document part, every part inflating
/// without error to at most [`MAX_DOCX_UNPACKED_BYTES`] in all, every XML part well
/// formed and nested at most [`MAX_DOCX_DEPTH`] deep. Reads the core title on the way.
fn check_package(bytes: &[u8]) -> Result<Package, String> {
    let mut zip = match zip::ZipArchive::new(Cursor::new(bytes)) {
        Ok(z) => z,
        Err(_) if bytes.starts_with(&[0xD0, 0xCF, 0x11, 0xE0]) => {
            return Err(
                "not a DOCX package but an OLE file: an old binary Word document \
                        renamed .docx, or a password-protected one (save it as .docx without \
                        a password)"
                    .to_string(),
            )
        }
        Err(e) => return Err(format!("not a DOCX package (corrupt zip: {e})")),
    };
    let mut declared: u64 = 0;
    for i in 0..zip.len() {
        let entry = zip
            .by_index_raw(i)
            .map_err(|e| format!("corrupt zip: {e}"))?;
        declared = declared.saturating_add(entry.size());
    }
    if declared > MAX_DOCX_UNPACKED_BYTES {
        return Err(format!(
            "its parts declare {} MiB unpacked, over the limit of {} MiB",
            declared.div_ceil(1 << 20),
            MAX_DOCX_UNPACKED_BYTES >> 20
        ));
    }
    let mut relations = Relations::default();
    if let Some(i) = zip.index_for_name("_rels/.rels") {
        let mut own_budget = MAX_DOCX_UNPACKED_BYTES;
        read_part(&mut zip, i, &mut own_budget, Some(&mut relations))?;
    }
    let main = relations
        .main
        .clone()
        .unwrap_or_else(|| "word/document.xml".to_string());
    if zip.index_for_name(&main).is_none() {
        return Err(format!(
            "no {main} in the package: not a Word document (an .xlsx, a .pptx or another zip?)"
        ));
    }
    let core = relations
        .core
        .as_deref()
        .and_then(|c| zip.index_for_name(c));
    let mut budget = MAX_DOCX_UNPACKED_BYTES;
    let mut package = Package::default();
    for i in 0..zip.len() {
        if Some(i) == core {
            let mut title = Relations::default();
            read_part(&mut zip, i, &mut budget, Some(&mut title))?;
            package.title = title
                .title
                .map(|t| collapse_ws(&t))
                .filter(|t| !t.is_empty());
        } else {
            read_part(&mut zip, i, &mut budget, None)?;
        }
    }
    Ok(package)
}

/// What the scan of a part picks up: the targets of `_rels/.rels` or the text of the
/// core properties' `title`.
#[derive(Debug, Default, Clone)]
struct Relations {
    main: Option<String>,
    core: Option<String>,
    title: Option<String>,
}

/// Inflates the part at `index` (counted against `budget`); XML parts (by name) are
/// parsed for their depth, and for `found` when given. Folders are passed over.
fn read_part(
    zip: &mut zip::ZipArchive<Cursor<&[u8]>>,
    index: usize,
    budget: &mut u64,
    found: Option<&mut Relations>,
) -> Result<(), String> {
    let entry = zip
        .by_index(index)
        .map_err(|e| format!("corrupt zip: {e}"))?;
    if entry.is_dir() {
        return Ok(());
    }
    let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
    let name = name.as_str();
    let limit = *budget;
    let mut counted = Counted {
        inner: entry.take(limit.saturating_add(1)),
        read: 0,
    };
    let lower = name.to_ascii_lowercase();
    let result = if lower.ends_with(".xml") || lower.ends_with(".rels") {
        scan_xml(&mut counted, name, found)
    } else {
        std::io::copy(&mut counted, &mut std::io::sink())
            .map(|_| ())
            .map_err(|e| format!("corrupt zip: {name}: {e}"))
    };
    if counted.read > limit {
        return Err(format!(
            "unpacks to more than {} MiB (the limit), a zip bomb or far larger than any document",
            MAX_DOCX_UNPACKED_BYTES >> 20
        ));
    }
    result?;
    *budget = limit - counted.read;
    Ok(())
}

/// A reader counting the bytes it gives.
struct Counted<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Parses one XML part to its end: refuses it malformed or nested deeper than
/// [`MAX_DOCX_DEPTH`]; with `found`, collects relationship targets and the title.
fn scan_xml<R: Read>(
    input: R,
    name: &str,
    mut found: Option<&mut Relations>,
) -> Result<(), String> {
    let mut reader = quick_xml::Reader::from_reader(BufReader::new(input));
    reader.config_mut().check_end_names = false;
    let mut buf = Vec::new();
    let mut depth = 0usize;
    // Inside the core properties' `title`: its text so far.
    let mut title: Option<String> = None;
    loop {
        let decoder = reader.decoder();
        let event = reader.read_event_into(&mut buf).map_err(|e| {
            if matches!(e, quick_xml::Error::Io(_)) {
                format!("corrupt zip: {name}: {e}")
            } else {
                format!("{name}: malformed XML: {e}")
            }
        })?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(event, Event::Empty(_));
                if !empty {
                    depth += 1;
                    if depth > MAX_DOCX_DEPTH {
                        return Err(format!(
                            "{name} nests elements more than {MAX_DOCX_DEPTH} deep (the limit)"
                        ));
                    }
                }
                if let Some(found) = found.as_deref_mut() {
                    match e.local_name().as_ref() {
                        b"Relationship" => record_relationship(e, decoder, name, found)?,
                        b"title" if !empty && found.title.is_none() => title = Some(String::new()),
                        _ => {}
                    }
                }
            }
            Event::End(ref e) => {
                depth = depth.saturating_sub(1);
                if e.local_name().as_ref() == b"title" {
                    if let (Some(t), Some(found)) = (title.take(), found.as_deref_mut()) {
                        found.title = Some(t);
                    }
                }
            }
            Event::Text(ref t) => {
                if let Some(title) = title.as_mut() {
                    title.push_str(&t.decode().map_err(|e| format!("{name}: {e}"))?);
                }
            }
            Event::CData(ref t) => {
                if let Some(title) = title.as_mut() {
                    title.push_str(&t.decode().map_err(|e| format!("{name}: {e}"))?);
                }
            }
            Event::GeneralRef(ref r) => {
                if let Some(title) = title.as_mut() {
                    title.extend(referenced_char(r));
                }
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
        buf.clear();
    }
}

/// Records in `found` the target of the relationship element `e` of the part `name` when
/// it is the first one to the main document or to the core properties.
fn record_relationship(
    e: &BytesStart,
    decoder: Decoder,
    name: &str,
    found: &mut Relations,
) -> Result<(), String> {
    let (mut kind, mut target) = (None, None);
    for a in e.attributes().flatten() {
        let value = a
            .decoded_and_normalized_value(quick_xml::XmlVersion::Implicit1_0, decoder)
            .map_err(|e| format!("{name}: malformed XML: {e}"))?;
        match a.key.local_name().as_ref() {
            b"Type" => kind = Some(value.into_owned()),
            b"Target" => target = Some(value.into_owned()),
            _ => {}
        }
    }
    if let (Some(kind), Some(target)) = (kind, target) {
        let target = target.trim_start_matches('/').to_string();
        if kind.ends_with(OFFICE_DOCUMENT) && found.main.is_none() {
            found.main = Some(target);
        } else if kind.ends_with(CORE_PROPERTIES) && found.core.is_none() {
            found.core = Some(target);
        }
    }
    Ok(())
}

/// The character a character or entity reference stands for: a numeric one, or one of
/// XML's five predefined entities (none for any other).
fn referenced_char(r: &BytesRef) -> Option<char> {
    match r.resolve_char_ref() {
        Ok(Some(c)) => Some(c),
        _ => match &**r {
            b"amp" => Some('&'),
            b"lt" => Some('<'),
            b"gt" => Some('>'),
            b"quot" => Some('"'),
            b"apos" => Some('\''),
            _ => None,
        },
    }
}

/// The text and structure of a document, as read on the reader thread.
#[derive(Debug, Default)]
struct Extract {
    text: String,
    headings: Vec<Heading>,
    atomic: Vec<(usize, usize)>,
    /// The text of the first paragraph styled `Title`.
    title_paragraph: Option<String>,
    /// The list of the last block written when it was a list item: the next item of the
    /// same list follows on the next line.
    last_list: Option<usize>,
    /// Item counters of numbered lists, by numbering id, one per level.
    counters: HashMap<usize, Vec<usize>>,
}

/// What a paragraph style makes of its paragraphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Title,
    Heading(u8),
    Body,
}

/// The numbering id a paragraph style gives its paragraphs, and the level if it says.
type StyleNumbering = (usize, Option<usize>);

/// The styles and list definitions of a document, as the walk needs them.
struct Styles {
    /// Paragraph style id → role, and the numbering id and level the style gives its
    /// paragraphs (`List Bullet`, `List Number`), if any.
    roles: HashMap<String, (Role, Option<StyleNumbering>)>,
    /// Numbering id → (level → is a bullet list).
    bullets: HashMap<usize, HashMap<usize, bool>>,
}

/// Reads the package with docx-rs (on the reader thread) and walks it; the document is
/// dropped there too (its drop recurses as deep as its tables).
fn read(bytes: &[u8]) -> Result<Extract, String> {
    let docx = docx_rs::read_docx_with_options(
        bytes,
        ReadDocxOptions::default().with_image_previews(false),
    )
    .map_err(|e| format!("cannot be read as DOCX: {e}"))?;
    let styles = Styles::of(&docx);
    let mut ex = Extract::default();
    for child in &docx.document.children {
        match child {
            DocumentChild::Paragraph(p) => ex.paragraph(p, &styles),
            DocumentChild::Table(t) => ex.table(t),
            DocumentChild::StructuredDataTag(t) => ex.content_control(t, &styles),
            _ => {}
        }
    }
    Ok(ex)
}

impl Styles {
    fn of(docx: &Docx) -> Styles {
        let mut roles = HashMap::new();
        for style in &docx.styles.styles {
            if style.style_type != StyleType::Paragraph {
                continue;
            }
            let name = serde_json::to_value(&style.name)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let role = role_of_name(&name)
                .or_else(|| outline_role(style.paragraph_property.outline_lvl.as_ref()))
                .unwrap_or(Role::Body);
            let numbering = style
                .paragraph_property
                .numbering_property
                .as_ref()
                .and_then(|n| Some((n.id.as_ref()?.id, n.level.as_ref().map(|l| l.val))));
            roles.insert(style.style_id.clone(), (role, numbering));
        }
        let mut bullets = HashMap::new();
        for num in &docx.numberings.numberings {
            let Some(abs) = docx
                .numberings
                .abstract_nums
                .iter()
                .find(|a| a.id == num.abstract_num_id)
            else {
                continue;
            };
            let levels = abs
                .levels
                .iter()
                .map(|l| (l.level, l.format.val == "bullet" || l.format.val == "none"))
                .collect();
            bullets.insert(num.id, levels);
        }
        Styles { roles, bullets }
    }

    /// The role of a paragraph: its style's (by id; an id that is not defined is read as a
    /// name, as in documents whose styles.xml lacks the built-in styles), else its own
    /// outline level.
    fn role(&self, p: &Paragraph) -> Role {
        let by_style = p.property.style.as_ref().and_then(|s| {
            self.roles
                .get(&s.val)
                .map(|r| r.0)
                .filter(|r| *r != Role::Body)
                .or_else(|| role_of_name(&s.val))
        });
        by_style
            .or_else(|| outline_role(p.property.outline_lvl.as_ref()))
            .unwrap_or(Role::Body)
    }

    /// The list level of a paragraph and whether it is a bullet, when it is a list item.
    /// The paragraph's own numbering overrides its style's; numbering id 0 means none.
    fn list_item(&self, p: &Paragraph) -> Option<(usize, usize, bool)> {
        let own = p.property.numbering_property.as_ref();
        let styled = p
            .property
            .style
            .as_ref()
            .and_then(|s| self.roles.get(&s.val))
            .and_then(|r| r.1);
        let id = own
            .and_then(|n| n.id.as_ref())
            .map(|i| i.id)
            .or(styled.map(|s| s.0))?;
        let level = own
            .and_then(|n| n.level.as_ref())
            .map(|l| l.val)
            .or(styled.and_then(|s| s.1))
            .unwrap_or(0)
            .min(8);
        if id == 0 {
            return None;
        }
        let bullet = self
            .bullets
            .get(&id)
            .and_then(|l| l.get(&level))
            .copied()
            .unwrap_or(true);
        Some((id, level, bullet))
    }
}

/// `Title`, `heading N` (case-insensitive; Word writes the built-in names in English
/// whatever the language of the style ids), `HeadingN` as a style id.
fn role_of_name(name: &str) -> Option<Role> {
    let lower = name.trim().to_lowercase();
    if lower == "title" {
        return Some(Role::Title);
    }
    let rest = lower.strip_prefix("heading")?.trim_start();
    let level: u8 = rest.parse().ok()?;
    (1..=9).contains(&level).then_some(Role::Heading(level))
}

fn outline_role(level: Option<&docx_rs::OutlineLvl>) -> Option<Role> {
    // Levels 0..=8 are headings; 9 is body text.
    level
        .filter(|l| l.v < 9)
        .map(|l| Role::Heading(l.v as u8 + 1))
}

impl Extract {
    /// Starts a block: a blank line after the previous one, a line end between two items
    /// of one list (`list`: its numbering id). Returns where the block starts.
    fn begin_block(&mut self, list: Option<usize>) -> usize {
        if !self.text.is_empty() {
            let same_list = list.is_some() && list == self.last_list;
            self.text.push_str(if same_list { "\n" } else { "\n\n" });
        }
        self.last_list = list;
        self.text.len()
    }

    fn paragraph(&mut self, p: &Paragraph, styles: &Styles) {
        let mut line = String::new();
        paragraph_text(p, &mut line);
        let line = line.trim_end();
        if line.trim().is_empty() {
            return;
        }
        let role = styles.role(p);
        match role {
            Role::Title | Role::Heading(_) => {
                let start = self.begin_block(None);
                self.text.push_str(line.trim_start());
                let text = collapse_ws(line);
                if role == Role::Title && self.title_paragraph.is_none() {
                    self.title_paragraph = Some(text.clone());
                }
                let level = match role {
                    Role::Heading(l) => l,
                    _ => 1,
                };
                self.headings.push(Heading { start, level, text });
            }
            Role::Body => match styles.list_item(p) {
                Some((id, level, bullet)) => {
                    let marker = self.marker(id, level, bullet);
                    self.begin_block(Some(id));
                    for _ in 0..level {
                        self.text.push_str("  ");
                    }
                    self.text.push_str(&marker);
                    self.text.push_str(line.trim_start());
                }
                None => {
                    self.begin_block(None);
                    self.text.push_str(line);
                }
            },
        }
    }

    /// `- ` for a bullet, `N. ` for the next item of a numbered list at `level`.
    fn marker(&mut self, id: usize, level: usize, bullet: bool) -> String {
        let counters = self.counters.entry(id).or_default();
        counters.resize(level + 1, 0);
        counters[level] += 1;
        if bullet {
            "- ".to_string()
        } else {
            format!("{}. ", counters[level])
        }
    }

    /// A table: one line per row, cells joined by ` | `; atomic, so that the chunker
    /// keeps it whole when it fits.
    fn table(&mut self, t: &Table) {
        let rows = table_rows(t);
        if rows.is_empty() {
            return;
        }
        let start = self.begin_block(None);
        self.text.push_str(&rows.join("\n"));
        self.atomic.push((start, self.text.len()));
    }

    fn content_control(&mut self, t: &StructuredDataTag, styles: &Styles) {
        let mut runs = String::new();
        for child in &t.children {
            match child {
                StructuredDataTagChild::Paragraph(p) => self.paragraph(p, styles),
                StructuredDataTagChild::Table(t) => self.table(t),
                StructuredDataTagChild::StructuredDataTag(t) => self.content_control(t, styles),
                StructuredDataTagChild::Run(r) => run_text(r, &mut runs),
                _ => {}
            }
        }
        if !runs.trim().is_empty() {
            self.begin_block(None);
            self.text.push_str(runs.trim_end());
        }
    }
}

/// The rows of a table, each its cells' text joined by ` | ` (rows without text left
/// out). A table inside a cell is written inline: its rows joined by ` / `.
fn table_rows(t: &Table) -> Vec<String> {
    let mut rows = Vec::new();
    for TableChild::TableRow(row) in &t.rows {
        let cells: Vec<String> = row
            .cells
            .iter()
            .map(|TableRowChild::TableCell(cell)| {
                let mut parts = Vec::new();
                for content in &cell.children {
                    match content {
                        TableCellContent::Paragraph(p) => {
                            let mut s = String::new();
                            paragraph_text(p, &mut s);
                            parts.push(collapse_ws(&s));
                        }
                        TableCellContent::Table(inner) => parts.push(table_rows(inner).join(" / ")),
                        TableCellContent::StructuredDataTag(sdt) => {
                            let mut s = String::new();
                            sdt_text(sdt, &mut s);
                            parts.push(collapse_ws(&s));
                        }
                        _ => {}
                    }
                }
                parts.retain(|p| !p.is_empty());
                parts.join(" ")
            })
            .collect();
        if cells.iter().any(|c| !c.is_empty()) {
            rows.push(cells.join(" | ").trim_end().to_string());
        }
    }
    rows
}

/// The text of a content control inside a table cell, flattened.
fn sdt_text(t: &StructuredDataTag, out: &mut String) {
    for child in &t.children {
        match child {
            StructuredDataTagChild::Run(r) => run_text(r, out),
            StructuredDataTagChild::Paragraph(p) => {
                out.push(' ');
                paragraph_text(p, out);
            }
            StructuredDataTagChild::Table(t) => {
                out.push(' ');
                out.push_str(&table_rows(t).join(" / "));
            }
            StructuredDataTagChild::StructuredDataTag(t) => sdt_text(t, out),
            _ => {}
        }
    }
}

/// The visible text of a paragraph as it reads now: runs, inserted and moved-in text,
/// hyperlinks and content controls; deleted and moved-out text and field codes are left
/// out.
fn paragraph_text(p: &Paragraph, out: &mut String) {
    for child in &p.children {
        paragraph_child_text(child, out);
    }
}

fn paragraph_child_text(child: &ParagraphChild, out: &mut String) {
    match child {
        ParagraphChild::Run(r) => run_text(r, out),
        ParagraphChild::Insert(ins) => {
            for c in &ins.children {
                if let InsertChild::Run(r) = c {
                    run_text(r, out);
                }
            }
        }
        ParagraphChild::MoveTo(m) => {
            for c in &m.children {
                if let MoveToChild::Run(r) = c {
                    run_text(r, out);
                }
            }
        }
        ParagraphChild::Hyperlink(h) => {
            for c in &h.children {
                paragraph_child_text(c, out);
            }
        }
        ParagraphChild::StructuredDataTag(t) => {
            for c in &t.children {
                if let StructuredDataTagChild::Run(r) = c {
                    run_text(r, out);
                }
            }
        }
        _ => {}
    }
}

fn run_text(r: &Run, out: &mut String) {
    for child in &r.children {
        match child {
            RunChild::Text(t) => push_clean(out, &t.text),
            RunChild::Tab(_) | RunChild::PTab(_) => out.push('\t'),
            RunChild::Break(_) | RunChild::CarriageReturn(_) => out.push('\n'),
            _ => {}
        }
    }
}

/// Appends text with CR as a line end and other control characters left out.
fn push_clean(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '\r' => out.push('\n'),
            '\t' | '\n' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_names() {
        assert_eq!(role_of_name("heading 1"), Some(Role::Heading(1)));
        assert_eq!(role_of_name("Heading 3"), Some(Role::Heading(3)));
        assert_eq!(role_of_name("Heading2"), Some(Role::Heading(2)));
        assert_eq!(role_of_name("Title"), Some(Role::Title));
        assert_eq!(role_of_name("heading 10"), None);
        assert_eq!(role_of_name("Heading Char"), None);
        assert_eq!(role_of_name("berschrift1"), None);
        assert_eq!(role_of_name("Subtitle"), None);
    }

    #[test]
    fn depth_is_limited() {
        let deep = format!("<a>{}</a>", "<b>".repeat(MAX_DOCX_DEPTH));
        let err = scan_xml(deep.as_bytes(), "word/document.xml", None).unwrap_err();
        assert!(err.contains("deep"), "{err}");
        let fine = format!(
            "{}{}",
            "<b>".repeat(MAX_DOCX_DEPTH),
            "</b>".repeat(MAX_DOCX_DEPTH)
        );
        scan_xml(fine.as_bytes(), "x.xml", None).expect("at the limit");
        let err = scan_xml(&b"<a><b attr=\"1\""[..], "x.xml", None).unwrap_err();
        assert!(err.contains("malformed"), "{err}");
    }

    #[test]
    fn parts_are_counted_as_they_inflate() {
        use std::io::Write;
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.start_file("word/media/a.bin", zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(&vec![7u8; 3 << 20]).unwrap();
        let bytes = w.finish().unwrap().into_inner();
        let mut zip = zip::ZipArchive::new(Cursor::new(bytes.as_slice())).unwrap();
        let mut budget = 1 << 20;
        let err = read_part(&mut zip, 0, &mut budget, None).unwrap_err();
        assert!(err.contains("unpacks to more than"), "{err}");
        let mut budget = 4 << 20;
        read_part(&mut zip, 0, &mut budget, None).unwrap();
        assert_eq!(budget, 1 << 20, "what is left");
    }

    #[test]
    fn core_title_is_read_with_entities() {
        let core = r#"<?xml version="1.0"?><cp:coreProperties xmlns:cp="c" xmlns:dc="d"><dc:title>R&amp;D  plan &#x2013; 2026</dc:title></cp:coreProperties>"#;
        let mut found = Relations::default();
        scan_xml(core.as_bytes(), "docProps/core.xml", Some(&mut found)).unwrap();
        assert_eq!(found.title.as_deref(), Some("R&D  plan \u{2013} 2026"));
    }
}
