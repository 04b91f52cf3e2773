//! Small file fixtures.

use std::path::Path;

/// Writes `contents` to `dir/name`, creating the missing directories on the way (`name`
/// may hold `/`-separated subdirectories).
///
/// # Panics
/// When a directory or the file cannot be written.
pub fn write_file(dir: &Path, name: &str, contents: impl AsRef<[u8]>) {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create fixture directory");
    }
    std::fs::write(path, contents).expect("write fixture file");
}

/// One line of text on a page of [`pdf`]: bold or regular Helvetica at `size` points.
#[derive(Debug, Clone, Copy)]
pub struct PdfLine<'a> {
    /// Helvetica-Bold instead of Helvetica.
    pub bold: bool,
    /// Font size in points.
    pub size: f32,
    /// The text (Latin-1 only; parentheses and backslashes are escaped).
    pub text: &'a str,
}

/// A minimal, valid PDF (Letter pages, the standard Type1 fonts Helvetica and
/// Helvetica-Bold, one text line per [`PdfLine`], laid out from the top of each page
/// down, each line 1.4 times the larger of its size and the size before it below the
/// line before), written by hand so that PDF tests
/// need no PDF-writing crate.
pub fn pdf(pages: &[Vec<PdfLine<'_>>]) -> Vec<u8> {
    let placed: Vec<Vec<PdfText<'_>>> = pages
        .iter()
        .map(|lines| {
            let mut y = 760.0f32;
            let mut prev = 0.0f32;
            lines
                .iter()
                .map(|l| {
                    y -= l.size.max(prev) * 1.4;
                    prev = l.size;
                    PdfText {
                        x: 72.0,
                        y,
                        size: l.size,
                        face: if l.bold {
                            PdfFace::Bold
                        } else {
                            PdfFace::Regular
                        },
                        text: l.text,
                    }
                })
                .collect()
        })
        .collect();
    pdf_placed(&placed)
}

/// A face of Helvetica for [`PdfText`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PdfFace {
    /// Helvetica.
    Regular,
    /// Helvetica-Bold.
    Bold,
    /// Helvetica-Oblique.
    Italic,
}

/// A piece of text placed on a page of [`pdf_placed`]: its own text object, drawn with
/// its baseline starting at (`x`, `y`) points from the bottom left.
#[derive(Debug, Clone, Copy)]
pub struct PdfText<'a> {
    /// Left edge, points from the left of the page.
    pub x: f32,
    /// Baseline, points from the bottom of the page (a Letter page is 792 high).
    pub y: f32,
    /// Font size in points.
    pub size: f32,
    /// The face.
    pub face: PdfFace,
    /// The text (Latin-1 only; parentheses and backslashes are escaped).
    pub text: &'a str,
}

/// A minimal, valid PDF like [`pdf`] with each piece of text placed where it says, in
/// the order given (the content stream order PDFium reads), for layouts such as table
/// cells side by side.
pub fn pdf_placed(pages: &[Vec<PdfText<'_>>]) -> Vec<u8> {
    let n = pages.len();
    // Objects: 1 catalog, 2 page tree, 3 to 5 fonts, then per page its page and
    // content objects.
    let mut objects: Vec<Vec<u8>> = Vec::new();
    objects.push(b"<< /Type /Catalog /Pages 2 0 R >>".to_vec());
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 6 + 2 * i)).collect();
    objects.push(format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")).into_bytes());
    for font in ["Helvetica", "Helvetica-Bold", "Helvetica-Oblique"] {
        objects.push(
            format!(
                "<< /Type /Font /Subtype /Type1 /BaseFont /{font} /Encoding /WinAnsiEncoding >>"
            )
            .into_bytes(),
        );
    }
    for (i, texts) in pages.iter().enumerate() {
        let mut content = String::new();
        for t in texts {
            let escaped = t
                .text
                .replace('\\', "\\\\")
                .replace('(', "\\(")
                .replace(')', "\\)");
            let font = match t.face {
                PdfFace::Regular => "F1",
                PdfFace::Bold => "F2",
                PdfFace::Italic => "F3",
            };
            content.push_str(&format!(
                "BT /{font} {} Tf 1 0 0 1 {:.1} {:.1} Tm ({escaped}) Tj ET\n",
                t.size, t.x, t.y
            ));
        }
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R /F2 4 0 R /F3 5 0 R >> >> /Contents {} 0 R >>",
                7 + 2 * i
            )
            .into_bytes(),
        );
        let latin1: Vec<u8> = content
            .chars()
            .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
            .collect();
        let mut stream = format!("<< /Length {} >>\nstream\n", latin1.len()).into_bytes();
        stream.extend_from_slice(&latin1);
        stream.extend_from_slice(b"\nendstream");
        objects.push(stream);
    }
    pdf_file(b"%PDF-1.4\n", &objects)
}

/// A PDF file from `header` (the `%PDF-1.x` line, and any comment lines) and the bodies
/// of its objects 1, 2, … (object 1 the catalog), with a correct cross-reference table
/// and trailer: for tests that build a PDF object by object.
pub fn pdf_file(header: &[u8], objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = header.to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

fn body(text: &str) -> PdfLine<'_> {
    PdfLine {
        bold: false,
        size: 11.0,
        text,
    }
}

fn head(size: f32, text: &str) -> PdfLine<'_> {
    PdfLine {
        bold: true,
        size,
        text,
    }
}

/// A three-page report for PDF tests: a title, numbered headings at two sizes (bold),
/// body text in Helvetica 11, a running header and page numbers on every page.
pub fn report_pdf() -> Vec<u8> {
    let furniture = |n: &'static str, mut lines: Vec<PdfLine<'static>>| {
        let mut page = vec![PdfLine {
            bold: false,
            size: 8.0,
            text: "Lighthouse Keeping Annual Report",
        }];
        page.append(&mut lines);
        page.push(PdfLine {
            bold: false,
            size: 8.0,
            text: n,
        });
        page
    };
    pdf(&[
        furniture(
            "1",
            vec![
                head(20.0, "Lighthouse Maintenance"),
                head(15.0, "1 Introduction"),
                body("The lamp room is inspected every morning by the keeper on duty."),
                body("Brass fittings are polished weekly and the lens is cleaned with"),
                body("alcohol. Keepers record the weather in the station log."),
                head(12.5, "1.1 Fuel supply"),
                body("Kerosene arrives by boat twice a month and is stored in the oil"),
                body("house, away from the tower."),
            ],
        ),
        furniture(
            "2",
            vec![
                head(15.0, "2 Fog signals"),
                body("When visibility drops below two nautical miles the foghorn is"),
                body("sounded every thirty seconds until the fog lifts completely."),
                head(12.5, "2.1 Compressed air"),
                body("The compressor engine must be started twenty minutes before use."),
            ],
        ),
        furniture(
            "3",
            vec![
                head(15.0, "3 Staffing"),
                body("Three keepers rotate through four-week shifts at the station,"),
                body("with relief arriving by the supply boat in calm weather."),
            ],
        ),
    ])
}
