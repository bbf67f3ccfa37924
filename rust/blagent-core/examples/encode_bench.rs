//! Encoder throughput on a JSON list of texts, without Python: a quick loop for tuning.
//!
//!     cargo run --release --example encode_bench -- MODEL_DIR TEXTS.json [REPEATS] [PRECISION]
//!
//! PRECISION is `auto` (the default), `f32`, `bf16-amx`, `bf16-avx512` or `int8-avx512`.
//!
//! TEXTS.json is a list of strings, or an object with `texts` and reference `vectors` (as in
//! `tests/data/minilm_reference.json`); then the lowest cosine to the references is printed too.

use std::path::PathBuf;
use std::time::Instant;

use blagent_core::embed::{Encoder, Precision, TextKind};

/// The allocator the Python extension uses, so that the figures match the wheel's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[allow(clippy::print_stdout)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let model = PathBuf::from(args.next().ok_or("MODEL_DIR missing")?);
    let texts_path = PathBuf::from(args.next().ok_or("TEXTS.json missing")?);
    let repeats: usize = args.next().map_or(Ok(3), |s| s.parse())?;
    let precision = Precision::parse(&args.next().unwrap_or_else(|| "auto".into()))?;
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
    let encoder = Encoder::load_with(&model, None, precision)?;
    println!("precision: {}", precision.name());
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
        let (start, cpu_start) = (Instant::now(), cpu_seconds());
        encoder.embed(&texts, TextKind::Document)?;
        let rate = texts.len() as f64 / start.elapsed().as_secs_f64();
        let cpu_rate = texts.len() as f64 / (cpu_seconds() - cpu_start);
        println!("{rate:.1} chunks/s  {cpu_rate:.1} chunks per CPU second");
    }
    Ok(())
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

/// User and system CPU time of this process so far, from `/proc/self/stat` (0 elsewhere): a
/// figure that a machine shared with other work disturbs less than the wall clock.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the parenthesized command name; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: f64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse::<f64>().ok())
        .sum();
    ticks / 100.0
}
