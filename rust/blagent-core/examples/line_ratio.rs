//! Reads JSON pairs of lines (`["a", "b"]`, one per input line) on standard input and writes
//! `blagent_core::analysis::line_similarity` of each pair, one per output line. Used by
//! `bench/similarity_agreement.py` to compare the ratio with Python's difflib.

use std::io::{BufRead, BufWriter, Write};

use blagent_core::analysis::line_similarity;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for line in std::io::stdin().lock().lines() {
        let (a, b): (String, String) = serde_json::from_str(&line?)?;
        writeln!(out, "{}", line_similarity(&a, &b))?;
    }
    out.flush()?;
    Ok(())
}
