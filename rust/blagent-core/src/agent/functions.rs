//! Function-level output: `path::Class.method` entities of the top files. The functions the
//! model named (phase 2's function-level variant) come first, matched against the file's symbol
//! table (a qualified name, `Class::method`, or a bare name defined once); the retrieval
//! evidence's symbols follow (the LLM-free entities), so every top file with evidence has some.

use crate::chunk::Symbol;
use crate::retrieve::Entity;

/// The symbol a model-named function refers to in `symbols`.
pub fn match_symbol<'a>(symbols: &'a [Symbol], named: &str) -> Option<&'a Symbol> {
    let named = named.trim().trim_end_matches("()").replace("::", ".");
    let named = named.rsplit(".py.").next().unwrap_or(&named);
    if let Some(s) = symbols.iter().find(|s| s.qualified == named) {
        return Some(s);
    }
    let mut by_name = symbols.iter().filter(|s| s.name == named);
    match (by_name.next(), by_name.next()) {
        (Some(s), None) => Some(s),
        _ => None,
    }
}

/// The entities of one file: the model's functions first (score 1), then `fallback` (retrieval
/// entities of that file, scores kept) without repeats.
pub fn file_entities(
    path: &str,
    file_rank: usize,
    symbols: &[Symbol],
    named: &[String],
    fallback: Vec<Entity>,
) -> Vec<Entity> {
    let mut out: Vec<Entity> = Vec::new();
    for symbol in named.iter().filter_map(|n| match_symbol(symbols, n)) {
        if out.iter().all(|e| e.name != symbol.qualified) {
            out.push(Entity::of(path, symbol, 1.0, file_rank));
        }
    }
    for entity in fallback {
        if out.iter().all(|e| e.name != entity.name) {
            out.push(Entity {
                file_rank,
                ..entity
            });
        }
    }
    out
}
