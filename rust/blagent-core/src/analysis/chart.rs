//! The stage split as a PNG bar chart, drawn into an RGB buffer and encoded with the `png`
//! crate. Text uses the public-domain 8×8 bitmap font the `font8x8` crate ships, so no system
//! font is needed.

use super::report::Summary;
use super::stage::Stage;
use crate::error::{Error, Result};

const WIDTH: usize = 960;
const ROW_HEIGHT: usize = 48;
const TOP: usize = 80;
const LEFT: usize = 300;
const BAR_MAX: usize = 420;
/// Font scale: each font pixel is drawn as a `SCALE`×`SCALE` square.
const SCALE: usize = 2;
const GLYPH: usize = 8 * SCALE;

type Rgb = [u8; 3];
const BACKGROUND: Rgb = [255, 255, 255];
const INK: Rgb = [30, 30, 30];
const AXIS: Rgb = [150, 150, 150];

fn color(stage: Stage) -> Rgb {
    match stage {
        Stage::File => [214, 69, 65],
        Stage::Function => [232, 126, 4],
        Stage::Line => [240, 180, 0],
        Stage::PatchGeneration => [142, 68, 173],
        Stage::Localized => [52, 152, 219],
        Stage::Unclassified => [120, 120, 160],
        Stage::EmptyPatch => [127, 140, 141],
        Stage::Resolved => [39, 174, 96],
    }
}

/// An RGB image being drawn.
struct Canvas {
    width: usize,
    height: usize,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: usize, height: usize) -> Self {
        Canvas {
            width,
            height,
            pixels: BACKGROUND.repeat(width * height),
        }
    }

    fn rect(&mut self, x: usize, y: usize, w: usize, h: usize, rgb: Rgb) {
        for row in y..(y + h).min(self.height) {
            for col in x..(x + w).min(self.width) {
                let at = 3 * (row * self.width + col);
                self.pixels[at..at + 3].copy_from_slice(&rgb);
            }
        }
    }

    /// Draws `text` with its top-left corner at (x, y); characters outside ASCII show as `?`.
    fn text(&mut self, x: usize, y: usize, text: &str, rgb: Rgb) {
        for (i, c) in text.chars().enumerate() {
            let code = if c.is_ascii() {
                c as usize
            } else {
                '?' as usize
            };
            let glyph = font8x8::legacy::BASIC_LEGACY[code];
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..8 {
                    if (bits >> col) & 1 == 1 {
                        self.rect(
                            x + i * GLYPH + col * SCALE,
                            y + row * SCALE,
                            SCALE,
                            SCALE,
                            rgb,
                        );
                    }
                }
            }
        }
    }

    fn encode(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let internal = |e: png::EncodingError| Error::Internal(format!("PNG encoding failed: {e}"));
        let mut encoder = png::Encoder::new(&mut out, self.width as u32, self.height as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(internal)?;
        writer.write_image_data(&self.pixels).map_err(internal)?;
        writer.finish().map_err(internal)?;
        Ok(out)
    }
}

/// The chart as PNG bytes: one horizontal bar per stage (unclassified only when present),
/// labelled with its count and its share of all instances.
pub fn render_chart(summary: &Summary) -> Result<Vec<u8>> {
    let rows: Vec<(Stage, usize)> = Stage::ALL
        .iter()
        .map(|&s| (s, summary.count(s)))
        .filter(|&(s, n)| !matches!(s, Stage::Unclassified | Stage::Localized) || n > 0)
        .collect();
    let height = TOP + rows.len() * ROW_HEIGHT + 50;
    let mut canvas = Canvas::new(WIDTH, height);
    let title = format!(
        "Where APR runs fail: {} instances, top-{} files",
        summary.instances, summary.top_k
    );
    canvas.text(20, 20, &title, INK);
    canvas.text(
        20,
        46,
        "first failed stage; bars: share of all instances",
        AXIS,
    );
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
    for (i, &(stage, n)) in rows.iter().enumerate() {
        let y = TOP + i * ROW_HEIGHT;
        let label = stage.label();
        canvas.text(
            (LEFT - 16).saturating_sub(label.len() * GLYPH),
            y + 12,
            label,
            INK,
        );
        let len = (n * BAR_MAX).div_ceil(max);
        canvas.rect(LEFT, y + 4, len, ROW_HEIGHT - 10, color(stage));
        let share = if summary.instances == 0 {
            0.0
        } else {
            100.0 * n as f64 / summary.instances as f64
        };
        canvas.text(LEFT + len + 12, y + 12, &format!("{n} ({share:.1}%)"), INK);
    }
    canvas.rect(LEFT - 2, TOP, 2, rows.len() * ROW_HEIGHT, AXIS);
    canvas.text(
        LEFT,
        height - 34,
        &format!("{} unresolved with a patch", summary.unresolved),
        AXIS,
    );
    canvas.encode()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_png_with_every_stage_row() {
        let criteria = crate::analysis::Criteria {
            top_k: 3,
            function_top_k: 3,
            function_rule: crate::analysis::FunctionRule::Any,
        };
        let summary = Summary::new(&[], &criteria, true);
        let bytes = render_chart(&summary).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let reader = decoder.read_info().unwrap();
        let info = reader.info();
        assert_eq!(
            (info.width as usize, info.height as usize),
            (WIDTH, TOP + 6 * ROW_HEIGHT + 50)
        );
    }

    #[test]
    fn text_draws_ink_and_skips_spaces() {
        let mut canvas = Canvas::new(40, 20);
        canvas.text(0, 0, " A", INK);
        let inked = |x0: usize, x1: usize| {
            (0..20).any(|y| (x0..x1).any(|x| canvas.pixels[3 * (y * 40 + x)] == INK[0]))
        };
        assert!(!inked(0, GLYPH));
        assert!(inked(GLYPH, 2 * GLYPH));
    }
}
