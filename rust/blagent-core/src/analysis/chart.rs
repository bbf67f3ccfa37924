//! The stage split as a figure for a paper: one horizontal bar per stage, in pipeline order,
//! labelled with its count and share, drawn with `plotters` as SVG (vector) and PNG.
//!
//! Text needs a TrueType font: the first of [`FONT_FILES`] that exists is read (a regular
//! file, bounded) and registered with plotters' `ab_glyph` backend once per process. Without
//! one, no chart is drawn and the caller says so; the summaries do not depend on it.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::FontStyle;

use super::report::Summary;
use super::stage::Stage;
use crate::error::{Error, Result};

const WIDTH: u32 = 960;
const ROW_HEIGHT: u32 = 44;
/// The family name the chart's text asks for (registered from the font found).
const FAMILY: &str = "sans-serif";
/// Fonts looked for, in order: `DejaVu` Sans and Liberation Sans where Linux distributions
/// install them, then macOS's Arial.
pub const FONT_FILES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
];
const MAX_FONT_BYTES: u64 = 32 << 20;

/// The figure in both formats.
#[derive(Debug, Clone)]
pub struct Chart {
    /// SVG text.
    pub svg: String,
    /// PNG bytes.
    pub png: Vec<u8>,
}

fn color(stage: Stage) -> RGBColor {
    match stage {
        Stage::File => RGBColor(214, 69, 65),
        Stage::Function => RGBColor(232, 126, 4),
        Stage::Line => RGBColor(240, 180, 0),
        Stage::PatchGeneration => RGBColor(142, 68, 173),
        Stage::Localized => RGBColor(52, 152, 219),
        Stage::Unclassified => RGBColor(120, 120, 160),
        Stage::EmptyPatch => RGBColor(127, 140, 141),
        Stage::Resolved => RGBColor(39, 174, 96),
    }
}

/// Registers the first font of [`FONT_FILES`] that exists; `Err` names the places tried.
fn font() -> std::result::Result<(), String> {
    static FONT: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        for path in FONT_FILES {
            let Ok(bytes) = crate::repo::read::read_bounded(Path::new(path), MAX_FONT_BYTES) else {
                continue;
            };
            // Registered once per process and kept for its lifetime, as plotters requires.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if plotters::style::register_font(FAMILY, FontStyle::Normal, bytes).is_ok() {
                return Ok(());
            }
        }
        Err(format!(
            "no TrueType font for the chart's text (looked for {})",
            FONT_FILES.join(", ")
        ))
    })
    .clone()
}

/// The rows drawn: every stage with instances, and the four failure stages always.
fn rows(summary: &Summary) -> Vec<(Stage, usize)> {
    Stage::ALL
        .iter()
        .map(|&s| (s, summary.count(s)))
        .filter(|&(s, n)| {
            n > 0
                || matches!(
                    s,
                    Stage::File | Stage::Function | Stage::Line | Stage::PatchGeneration
                )
        })
        .collect()
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    summary: &Summary,
) -> std::result::Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let rows = rows(summary);
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1) as f64;
    // Pipeline order from the top: row 0 is drawn highest.
    let last = rows.len().saturating_sub(1);
    root.fill(&WHITE).map_err(err)?;
    let title = if summary.evaluated {
        format!(
            "Where the APR run failed: {} instances, {} unresolved with a patch",
            summary.instances, summary.unresolved
        )
    } else {
        format!(
            "Localization stages: {} instances (no evaluation report)",
            summary.instances
        )
    };
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FAMILY, 22))
        .margin(18)
        .x_label_area_size(44)
        .y_label_area_size(190)
        // An integer range is inclusive as a segmented axis: one segment per row.
        .build_cartesian_2d(0.0..max * 1.3, (0..last).into_segmented())
        .map_err(err)?;
    let label = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) if *i < rows.len() => rows[last - i].0.label().to_owned(),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(rows.len())
        .y_label_formatter(&label)
        .y_label_style((FAMILY, 16))
        .x_label_style((FAMILY, 14))
        .x_label_formatter(&|v| format!("{v:.0}"))
        .x_desc(format!(
            "instances (first failed stage; file stage: top {} files, function stage: {} rule)",
            summary.top_k,
            match summary.function_rule {
                super::stage::FunctionRule::Any => "any",
                super::stage::FunctionRule::All => "all",
            }
        ))
        .axis_desc_style((FAMILY, 14))
        .draw()
        .map_err(err)?;
    // Failure stages as a share of the unresolved instances with a patch (as the study
    // reports them), empty patches and resolved ones of all instances; without a report,
    // every stage of all instances.
    let share = |stage: Stage| {
        let percent = summary
            .stages
            .iter()
            .find(|s| s.stage == stage)
            .map_or(0.0, |s| s.percent);
        match stage {
            Stage::EmptyPatch | Stage::Resolved => format!("{percent:.1}% of all"),
            _ if summary.evaluated => format!("{percent:.1}% of unresolved"),
            _ => format!("{percent:.1}% of all"),
        }
    };
    chart
        .draw_series(rows.iter().enumerate().map(|(i, &(stage, n))| {
            let y = last - i;
            let mut bar = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(y)),
                    (n as f64, SegmentValue::Exact(y + 1)),
                ],
                color(stage).filled(),
            );
            bar.set_margin(7, 7, 0, 0);
            bar
        }))
        .map_err(err)?;
    chart
        .draw_series(rows.iter().enumerate().map(|(i, &(stage, n))| {
            Text::new(
                format!("{n} ({})", share(stage)),
                (n as f64 + max * 0.015, SegmentValue::CenterOf(last - i)),
                (FAMILY, 15).into_font().color(&BLACK),
            )
        }))
        .map_err(err)?;
    root.present().map_err(err)
}

/// Draws the chart of `summary`. `Ok(None)` when no font for its text is found (with the
/// reason), errors only when drawing or encoding fails.
pub fn render_chart(summary: &Summary) -> Result<std::result::Result<Chart, String>> {
    if let Err(why) = font() {
        return Ok(Err(why));
    }
    let height = 130 + ROW_HEIGHT * rows(summary).len() as u32;
    let internal = |what: &str, e: String| Error::Internal(format!("chart {what}: {e}"));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        draw(&root, summary).map_err(|e| internal("SVG", e))?;
    }
    let mut pixels = vec![0u8; (WIDTH * height * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (WIDTH, height)).into_drawing_area();
        draw(&root, summary).map_err(|e| internal("PNG", e))?;
    }
    let mut png = Vec::new();
    let encode = |e: png::EncodingError| internal("PNG encoding", e.to_string());
    let mut encoder = png::Encoder::new(&mut png, WIDTH, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .add_text_chunk(PNG_KEYWORD.to_owned(), MARK.to_owned())
        .map_err(encode)?;
    let mut writer = encoder.write_header().map_err(encode)?;
    writer.write_image_data(&pixels).map_err(encode)?;
    writer.finish().map_err(encode)?;
    // The mark goes right after the opening tag, so the file still starts as an SVG does.
    let svg = match svg.find('>') {
        Some(end) => format!("{}\n{SVG_MARK}{}", &svg[..=end], &svg[end + 1..]),
        None => svg,
    };
    Ok(Ok(Chart { svg, png }))
}

/// What the charts say wrote them: a comment after the SVG's opening tag, a `Software` text
/// chunk in the PNG. A chart file without it was not written by blagent, and is not written over.
const MARK: &str = "blagent analyze-failures";
const SVG_MARK: &str = "<!-- blagent analyze-failures -->";
const PNG_KEYWORD: &str = "Software";

/// Whether `bytes` are a chart SVG that blagent wrote: its mark is on the second line.
pub fn is_chart_svg(bytes: &[u8]) -> bool {
    let mut lines = bytes.split(|&b| b == b'\n');
    lines.next().is_some_and(|first| first.starts_with(b"<svg"))
        && lines
            .next()
            .is_some_and(|second| second.starts_with(SVG_MARK.as_bytes()))
}

/// Whether `bytes` are a chart PNG that blagent wrote (its text chunk: keyword, NUL, text).
pub fn is_chart_png(bytes: &[u8]) -> bool {
    let chunk = [b"tEXt", PNG_KEYWORD.as_bytes(), b"\0", MARK.as_bytes()].concat();
    bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.windows(chunk.len()).any(|w| w == chunk)
}

#[cfg(test)]
mod tests {
    use super::super::stage::{Criteria, FunctionRule};
    use super::*;

    #[test]
    fn draws_every_failure_stage_as_svg_and_png() {
        let criteria = Criteria {
            top_k: 3,
            function_top_k: 3,
            function_rule: FunctionRule::Any,
        };
        let summary = Summary::new(&[], &criteria, true);
        let Ok(chart) = render_chart(&summary).unwrap() else {
            // A machine without any of the fonts: nothing to check but the reason.
            assert!(font().unwrap_err().contains("no TrueType font"));
            return;
        };
        assert!(is_chart_svg(chart.svg.as_bytes()));
        assert!(chart.svg.starts_with("<svg"));
        assert!(is_chart_png(&chart.png));
        assert!(!is_chart_png(b"\x89PNG\r\n\x1a\nsomeone else's picture"));
        assert!(!is_chart_svg(b"<svg></svg>"));
        for label in ["file", "function", "line", "patch generation"] {
            assert!(
                chart.svg.contains(&format!("\n{label}\n</text>")),
                "{label}"
            );
        }
        assert!(
            !chart.svg.contains("\nresolved\n</text>"),
            "empty rows besides the failures are left out"
        );
        let decoder = png::Decoder::new(std::io::Cursor::new(chart.png));
        let reader = decoder.read_info().unwrap();
        assert_eq!(
            (reader.info().width, reader.info().height),
            (WIDTH, 130 + 4 * ROW_HEIGHT)
        );
    }
}
