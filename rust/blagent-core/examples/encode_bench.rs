//! Encoder throughput on a JSON list of texts, without Python: a quick loop for tuning.
//!
//!     cargo run --release --example encode_bench -- MODEL_DIR TEXTS.json [REPEATS]
//!
//! TEXTS.json is a list of strings, or an object with `texts` and reference `vectors` (as in
//! `tests/data/minilm_reference.json`); then the lowest cosine to the references is printed too.

use std::path::PathBuf;
use std::time::Instant;

use blagent_core::embed::{Encoder, TextKind};

/// The allocator the Python extension uses, so that the figures match the wheel's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[allow(clippy::print_stdout)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let model = PathBuf::from(args.next().ok_or("MODEL_DIR missing")?);
    let texts_path = PathBuf::from(args.next().ok_or("TEXTS.json missing")?);
    let repeats: usize = args.next().map_or(Ok(3), |s| s.parse())?;
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(texts_path)?)?;
    let (texts, references): (Vec<String>, Vec<Vec<f32>>) = if json.is_array() {
        (serde_json::from_value(json)?, Vec::new())
    } else {
        (
            serde_json::from_value(json["texts"].clone())?,
            serde_json::from_value(json["vectors"].clone())?,
        )
    };
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let encoder = Encoder::load(&model)?;
    if !references.is_empty() {
        let vectors = encoder.embed(&texts, TextKind::Document)?;
        let lowest = vectors
            .iter()
            .zip(&references)
            .map(|(a, b)| cosine(a, b))
            .fold(f32::INFINITY, f32::min);
        println!("lowest cosine to the references: {lowest:.7}");
    }
    encoder.embed(&texts[..8.min(texts.len())], TextKind::Document)?;
    for _ in 0..repeats {
        let start = Instant::now();
        encoder.embed(&texts, TextKind::Document)?;
        let rate = texts.len() as f64 / start.elapsed().as_secs_f64();
        println!("{rate:.1} chunks/s");
    }
    Ok(())
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}
