//! Fixture-driven snapshot tests: every file under `tests/fixtures/{python,java,kotlin}` is a
//! case. Its chunks, symbols and skeleton are rendered as text and checked with insta;
//! invariants that must hold for every file are asserted alongside.

use std::fmt::Write as _;
use std::path::Path;

use blagent_core::chunk::{parse_file, ChunkOptions, ParsedFile};
use blagent_core::repo::{walk, SourceFile, WalkOptions};

fn fixtures() -> Vec<SourceFile> {
    language_fixtures("python")
}

fn language_fixtures(language: &str) -> Vec<SourceFile> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(language);
    let options = WalkOptions {
        include_tests: true,
        ..WalkOptions::default()
    };
    let out = walk(&root, &options).expect("fixture folder walks");
    assert!(
        out.skipped.is_empty(),
        "fixtures skipped: {:?}",
        out.skipped
    );
    out.files
}

fn render(file: &SourceFile, parsed: &ParsedFile) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "lossy: {}  syntax_errors: {}",
        file.lossy, parsed.syntax_errors
    );
    let _ = writeln!(out, "\n## chunks");
    for chunk in &parsed.chunks {
        let first = chunk
            .code(&file.text)
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        let _ = writeln!(
            out,
            "{:?} {}-{} {} | {}",
            chunk.kind,
            chunk.start_line,
            chunk.end_line,
            chunk.symbol.as_deref().unwrap_or("-"),
            first
        );
    }
    let _ = writeln!(out, "\n## symbols");
    for s in &parsed.symbols {
        let _ = writeln!(
            out,
            "{:?} {} {}-{}",
            s.kind, s.qualified, s.start_line, s.end_line
        );
    }
    if let Some(package) = &parsed.package {
        let _ = writeln!(out, "\n## package {package}");
    }
    let _ = writeln!(out, "\n## skeleton\n{}", parsed.skeleton);
    out
}

/// Every non-blank line belongs to exactly one chunk, and chunks follow each other in order.
fn assert_covers_every_line(file: &SourceFile, parsed: &ParsedFile) {
    let mut covered = vec![0u32; file.text.lines().count() + 2];
    let mut previous_end = 0;
    for chunk in &parsed.chunks {
        assert!(
            chunk.start_byte >= previous_end,
            "{}: chunks overlap or go backwards",
            file.path
        );
        previous_end = chunk.end_byte;
        assert!(
            file.text.is_char_boundary(chunk.start_byte)
                && file.text.is_char_boundary(chunk.end_byte)
        );
        for count in &mut covered[chunk.start_line..=chunk.end_line] {
            *count += 1;
        }
    }
    for (i, line) in file.text.lines().enumerate() {
        if !line.trim().is_empty() {
            assert_eq!(
                covered[i + 1],
                1,
                "{}: line {} covered {} times: {line:?}",
                file.path,
                i + 1,
                covered[i + 1]
            );
        }
    }
}

#[test]
fn fixture_snapshots() {
    let files = fixtures();
    assert!(
        files.len() >= 8,
        "expected the fixture folder, found {}",
        files.len()
    );
    let options = ChunkOptions::default();
    for file in &files {
        let parsed = parse_file(file, &options);
        assert_covers_every_line(file, &parsed);
        let name = file.path.trim_end_matches(".py").to_owned();
        insta::assert_snapshot!(name, render(file, &parsed));
    }
}

#[test]
fn jvm_fixture_snapshots() {
    let options = ChunkOptions::default();
    for language in ["java", "kotlin"] {
        let files = language_fixtures(language);
        assert!(files.len() >= 3, "expected the {language} fixtures");
        for file in &files {
            assert_eq!(file.language.name, language);
            let parsed = parse_file(file, &options);
            assert_covers_every_line(file, &parsed);
            let stem = file.path.rsplit_once('.').map_or(&*file.path, |(s, _)| s);
            insta::assert_snapshot!(format!("{language}_{stem}"), render(file, &parsed));
        }
    }
}

/// A long Java method and a long Kotlin composable (one statement holding trailing lambdas)
/// are cut at statement boundaries into pieces near the budget.
#[test]
fn jvm_members_are_split_at_statement_boundaries() {
    let options = ChunkOptions::default();
    for (language, path, symbol) in [
        ("java", "Dispatcher.java", "Dispatcher.dispatch"),
        ("kotlin", "Screen.kt", "Screen"),
    ] {
        let files = language_fixtures(language);
        let file = files.iter().find(|f| f.path == path).expect("fixture");
        let parsed = parse_file(file, &options);
        let pieces: Vec<_> = parsed
            .chunks
            .iter()
            .filter(|c| c.symbol.as_deref() == Some(symbol))
            .collect();
        assert!(pieces.len() >= 3, "{path}: {} pieces", pieces.len());
        for chunk in &pieces {
            let code = chunk.code(&file.text);
            assert!(
                code.len() <= options.max_bytes + 200,
                "{path}: piece of {} bytes",
                code.len()
            );
            let first = code.lines().next().unwrap().trim_start();
            assert!(
                !first.starts_with(')') && !first.starts_with(',') && !first.starts_with('}'),
                "{path}: piece starts mid-construct: {first}"
            );
        }
    }
}

#[test]
fn long_function_is_split_at_statement_boundaries_within_budget() {
    let files = fixtures();
    let file = files
        .iter()
        .find(|f| f.path == "long_function.py")
        .expect("fixture");
    let options = ChunkOptions::default();
    let parsed = parse_file(file, &options);
    let pieces: Vec<_> = parsed
        .chunks
        .iter()
        .filter(|c| c.symbol.as_deref() == Some("dispatch"))
        .collect();
    assert!(
        pieces.len() > 20,
        "a 2,000-line function must be split, got {} pieces",
        pieces.len()
    );
    for chunk in &pieces {
        let code = chunk.code(&file.text);
        assert!(
            code.len() <= options.max_bytes + 200,
            "piece {}-{} has {} bytes",
            chunk.start_line,
            chunk.end_line,
            code.len()
        );
        // Each piece starts at a statement: its first line is a complete `if`/`for`/`try`
        // header or a simple statement, never the middle of an expression.
        let first = code.lines().next().unwrap().trim_start();
        assert!(
            !first.starts_with(')') && !first.starts_with(','),
            "piece starts mid-construct: {first}"
        );
    }
}

#[test]
fn path_augmented_text_starts_with_the_path() {
    let files = fixtures();
    let file = files
        .iter()
        .find(|f| f.path == "nested.py")
        .expect("fixture");
    let parsed = parse_file(file, &ChunkOptions::default());
    assert!(parsed.chunks[0]
        .text(&file.text)
        .starts_with("# nested.py\n"));
}
