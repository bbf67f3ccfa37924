//! Function-level output: `path::Class.method` entities of the top files. The functions the
//! model named (phase 2's function-level variant) come first, matched against the file's symbol
//! table (a qualified name, `Class::method`, or a bare name defined once); the LLM-free function
//! ranking ([`crate::retrieve::rank_functions`]) follows.

use std::collections::HashMap;

use crate::chunk::Symbol;
use crate::index::RepoIndex;
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

/// The model's functions (phase 2's function-level variant) of the files of `order`, in file
/// order (score 1), followed by `ranked` (the LLM-free function ranking) without repeats.
pub fn with_named(
    index: &RepoIndex,
    order: &[usize],
    named: &HashMap<usize, Vec<String>>,
    ranked: Vec<Entity>,
) -> Vec<Entity> {
    let mut out: Vec<Entity> = Vec::new();
    for (rank, &file) in order.iter().enumerate() {
        let indexed = &index.files[file];
        let model_named = named.get(&file).map_or(&[][..], Vec::as_slice);
        for symbol in model_named
            .iter()
            .filter_map(|n| match_symbol(&indexed.parsed.symbols, n))
        {
            let entity = Entity::of(indexed.path(), symbol, 1.0, rank + 1);
            if out.iter().all(|e| e.id != entity.id) {
                out.push(entity);
            }
        }
    }
    for entity in ranked {
        if out.iter().all(|e| e.id != entity.id) {
            out.push(entity);
        }
    }
    out
}
