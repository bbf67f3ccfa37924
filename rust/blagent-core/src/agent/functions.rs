//! Function-level output: `path::Class.method` entities of the top files. The functions the
//! model named (phase 2's function-level variant), matched against the file's symbol table (a
//! qualified name, `Class::method`, or a bare name defined once), are fused with the LLM-free
//! function ranking ([`crate::retrieve::rank_functions`]) as files are ([`super::rank::fuse`]),
//! at the weight the model's files get: a trusted model leads, a distrusted one (weight near 0)
//! only breaks retrieval's near ties, and what it alone named comes last.

use std::collections::HashMap;

use super::rank::fuse;
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
/// order, fused with `ranked` (the LLM-free function ranking) at `model_weight`.
pub fn with_named(
    index: &RepoIndex,
    order: &[usize],
    named: &HashMap<usize, Vec<String>>,
    ranked: Vec<Entity>,
    model_weight: f32,
) -> Vec<Entity> {
    let mut model: Vec<Entity> = Vec::new();
    for (rank, &file) in order.iter().enumerate() {
        let indexed = &index.files[file];
        let model_named = named.get(&file).map_or(&[][..], Vec::as_slice);
        for symbol in model_named
            .iter()
            .filter_map(|n| match_symbol(&indexed.parsed.symbols, n))
        {
            let entity = Entity::of(indexed.path(), symbol, 1.0, rank + 1);
            if model.iter().all(|e| e.id != entity.id) {
                model.push(entity);
            }
        }
    }
    fuse_entities(model, ranked, model_weight)
}

/// `model`'s entities (best first) fused with `ranked`'s by [`fuse`] at `model_weight`.
fn fuse_entities(model: Vec<Entity>, ranked: Vec<Entity>, model_weight: f32) -> Vec<Entity> {
    let mut pool = ranked;
    let retrieval: Vec<usize> = (0..pool.len()).collect();
    let mut model_order = Vec::with_capacity(model.len());
    for entity in model {
        if let Some(at) = pool.iter().position(|e| e.id == entity.id) {
            pool[at].score = entity.score;
            model_order.push(at);
        } else {
            model_order.push(pool.len());
            pool.push(entity);
        }
    }
    let order = fuse(&model_order, &retrieval, model_weight, pool.len());
    let mut slots: Vec<Option<Entity>> = pool.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|at| slots[at].take())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(name: &str) -> Entity {
        Entity {
            id: format!("a.py::{name}"),
            path: "a.py".to_owned(),
            name: name.to_owned(),
            kind: "function".to_owned(),
            lines: (1, 2),
            score: 0.5,
            file_rank: 1,
            contributions: std::collections::BTreeMap::new(),
        }
    }

    fn ids(entities: &[Entity]) -> Vec<&str> {
        entities.iter().map(|e| e.name.as_str()).collect()
    }

    #[test]
    fn a_trusted_model_leads_the_functions_and_a_distrusted_one_does_not() {
        let ranked = || ["f", "g", "h"].map(entity).to_vec();
        let model = || {
            ["h", "new"]
                .map(|name| Entity {
                    score: 1.0,
                    ..entity(name)
                })
                .to_vec()
        };
        assert_eq!(
            ids(&fuse_entities(model(), ranked(), 8.0)),
            ["h", "new", "f", "g"]
        );
        // At weight 1 the model's second pick ties retrieval's second: retrieval's goes first.
        assert_eq!(
            ids(&fuse_entities(model(), ranked(), 1.0)),
            ["h", "f", "g", "new"]
        );
        assert_eq!(
            ids(&fuse_entities(model(), ranked(), 0.0)),
            ["f", "g", "h", "new"]
        );
        assert_eq!(
            ids(&fuse_entities(Vec::new(), ranked(), 8.0)),
            ["f", "g", "h"]
        );
        let fused = fuse_entities(model(), ranked(), 8.0);
        assert!(
            fused[..2].iter().all(|e| (e.score - 1.0).abs() < 1e-6),
            "the model's: score 1"
        );
    }
}
