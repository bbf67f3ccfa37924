//! Combining the model's ranking with retrieval's.
//!
//! The final list interleaves the two, team-draft style: the model's best file, retrieval's
//! best not yet taken, the model's next, and so on, each list skipping files already placed;
//! when the model ranked nothing valid the list is retrieval's alone. Retrieval's ranking is
//! complete (every indexed file), so the list always has `top_k` files when the repository does.
//!
//! Why this combination: it bounds the harm of a weak model. A file at retrieval rank `r` ends
//! at rank at most `2r`, and a file at model rank `a` at most `2a − 1`, whatever the other list
//! says: garbage model output can at worst halve retrieval's ranks (a gold file in the LLM-free
//! top 5 stays in the top 10), while a good model's first choice is always first.

/// The interleaving of `model` and `retrieval` (see the module documentation), `k` long at most.
pub fn interleave(model: &[usize], retrieval: &[usize], k: usize) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::with_capacity(k);
    let (mut a, mut b) = (model.iter().peekable(), retrieval.iter().peekable());
    let mut model_turn = true;
    while out.len() < k {
        let source = if model_turn { &mut a } else { &mut b };
        let next = source.find(|f| !out.contains(f));
        match next {
            Some(&file) => out.push(file),
            None if a.peek().is_none() && b.peek().is_none() => break,
            None => {}
        }
        model_turn = !model_turn;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternates_skips_repeats_and_falls_back_to_retrieval() {
        assert_eq!(interleave(&[7, 8], &[1, 7, 2, 3], 5), [7, 1, 8, 2, 3]);
        assert_eq!(interleave(&[], &[1, 2, 3], 2), [1, 2]);
        assert_eq!(interleave(&[4], &[], 3), [4]);
        assert_eq!(interleave(&[1, 2], &[2, 1], 10), [1, 2]);
    }

    #[test]
    fn bounds_how_far_either_list_can_push_a_file_down() {
        let retrieval: Vec<usize> = (0..30).collect();
        let adversarial: Vec<usize> = (10..30).rev().collect();
        let out = interleave(&adversarial, &retrieval, 30);
        for (r, file) in retrieval.iter().enumerate() {
            let rank = out.iter().position(|f| f == file).unwrap() + 1;
            assert!(
                rank <= 2 * (r + 1),
                "retrieval rank {} ended at {rank}",
                r + 1
            );
        }
        for (a, file) in adversarial.iter().enumerate() {
            let rank = out.iter().position(|f| f == file).unwrap() + 1;
            assert!(rank < 2 * (a + 1), "model rank {} ended at {rank}", a + 1);
        }
    }
}
