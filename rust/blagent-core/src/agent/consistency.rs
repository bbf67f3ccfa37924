//! Permutation self-consistency of a listwise rerank (Tang et al., "Found in the Middle:
//! Permutation Self-Consistency Improves Listwise Ranking in Large Language Models", 2024).
//!
//! The same files are ranked twice, shown in one order and then in the [`second_order`]: the
//! reverse, with no file left at the place it had. A model that judges the files gives two
//! similar rankings; one that echoes the order it was shown gives two opposite ones, and one
//! that favours a place (the first, the last, the middle) puts a different file there each
//! time. [`agreement`] measures that (Kendall's τ-b, negative values cut to 0) and scales the
//! model's weight in the final fusion; [`aggregate`] merges the two rankings by mean position,
//! which removes the position bias of each.

/// The order the files are shown in the second time: `shown` reversed, and for an odd count
/// the middle file swapped with the one after it. Plain reversal leaves the middle file in the
/// middle, so a model that favours the middle place would agree with itself (with five files,
/// Qwen2.5-Coder-0.5B put the middle one first in both orders); this order moves every file,
/// and still contradicts the first order in all but one pair, so an echo has no agreement.
pub(crate) fn second_order<T: Clone>(shown: &[T]) -> Vec<T> {
    let mut order: Vec<T> = shown.iter().rev().cloned().collect();
    let n = order.len();
    if n % 2 == 1 && n > 1 {
        order.swap(n / 2, n / 2 + 1);
    }
    order
}

/// Each shown file's position in `order`; files `order` does not list share the last place.
#[allow(clippy::cast_precision_loss)]
fn positions(order: &[usize], shown: &[usize]) -> Vec<f32> {
    shown
        .iter()
        .map(|f| order.iter().position(|o| o == f).unwrap_or(order.len()) as f32)
        .collect()
}

/// Kendall's τ-b between two position vectors (ties allowed); 0 when either has no order.
fn tau_b(a: &[f32], b: &[f32]) -> f32 {
    let (mut concordant, mut discordant, mut tied_a, mut tied_b, mut pairs) =
        (0i64, 0i64, 0i64, 0i64, 0i64);
    for i in 0..a.len() {
        for j in i + 1..a.len() {
            pairs += 1;
            let da = a[i].total_cmp(&a[j]) as i64;
            let db = b[i].total_cmp(&b[j]) as i64;
            if da == 0 {
                tied_a += 1;
            }
            if db == 0 {
                tied_b += 1;
            }
            match da * db {
                1 => concordant += 1,
                -1 => discordant += 1,
                _ => {}
            }
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let denominator = (((pairs - tied_a) * (pairs - tied_b)) as f64).sqrt();
    if denominator == 0.0 {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let tau = ((concordant - discordant) as f64 / denominator) as f32;
    tau
}

/// How far two rankings of the `shown` files agree: Kendall's τ-b of their positions (a file a
/// ranking leaves out is tied last in it), 0 when they disagree more than they agree.
pub(crate) fn agreement(first: &[usize], second: &[usize], shown: &[usize]) -> f32 {
    tau_b(&positions(first, shown), &positions(second, shown)).max(0.0)
}

/// The files either ranking lists, by their summed positions; ties in `first`'s order, then
/// `second`'s.
pub(crate) fn aggregate(first: &[usize], second: &[usize], shown: &[usize]) -> Vec<usize> {
    let (a, b) = (positions(first, shown), positions(second, shown));
    let mut listed: Vec<(usize, f32, f32)> = shown
        .iter()
        .enumerate()
        .filter(|(_, f)| first.contains(f) || second.contains(f))
        .map(|(i, &f)| (f, a[i], b[i]))
        .collect();
    listed.sort_by(|x, y| {
        (x.1 + x.2)
            .total_cmp(&(y.1 + y.2))
            .then(x.1.total_cmp(&y.1))
            .then(x.2.total_cmp(&y.2))
    });
    listed.into_iter().map(|(f, _, _)| f).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHOWN: [usize; 5] = [10, 11, 12, 13, 14];

    #[test]
    fn an_echo_of_the_shown_order_has_no_agreement_a_judgement_full_agreement() {
        let reversed: Vec<usize> = SHOWN.iter().rev().copied().collect();
        assert!(agreement(&SHOWN, &reversed, &SHOWN).abs() < 1e-6);
        assert!((agreement(&SHOWN, &SHOWN, &SHOWN) - 1.0).abs() < 1e-6);
        // One swap of neighbours out of ten pairs: τ = (9 - 1) / 10.
        let swapped = [10, 12, 11, 13, 14];
        assert!((agreement(&SHOWN, &swapped, &SHOWN) - 0.8).abs() < 1e-6);
    }

    #[test]
    fn the_second_order_moves_every_file_and_contradicts_the_first() {
        for n in 1..=9 {
            let shown: Vec<usize> = (0..n).collect();
            let second = second_order(&shown);
            let mut sorted = second.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, shown, "a permutation of {n}");
            if n > 1 {
                assert!(
                    second.iter().enumerate().all(|(place, &f)| place != f),
                    "{n}: {second:?} leaves a file in place"
                );
                assert!(
                    agreement(&shown, &second, &shown).abs() < 1e-6,
                    "{n}: an echo"
                );
            }
        }
        assert_eq!(second_order(&SHOWN), [14, 13, 11, 12, 10]);
    }

    #[test]
    fn a_model_that_names_the_middle_file_does_not_agree_with_itself() {
        // It answers with the one file shown in the middle, as Qwen2.5-Coder-0.5B did.
        let middle = |shown: &[usize]| vec![shown[shown.len() / 2]];
        let first = middle(&SHOWN);
        let reversed: Vec<usize> = SHOWN.iter().rev().copied().collect();
        // Plain reversal keeps 12 in the middle: the bias looks like a judgement.
        assert!((agreement(&first, &middle(&reversed), &SHOWN) - 1.0).abs() < 1e-6);
        assert!(agreement(&first, &middle(&second_order(&SHOWN)), &SHOWN).abs() < 1e-6);
    }

    #[test]
    fn short_lists_tie_the_files_they_leave_out() {
        // Both put 12 first and say nothing else: they agree.
        assert!((agreement(&[12], &[12], &SHOWN) - 1.0).abs() < 1e-6);
        // Each names only the file it was shown first: they disagree.
        assert!(agreement(&[10], &[14], &SHOWN).abs() < 1e-6);
        // Nothing listed: no order, no agreement.
        assert!(agreement(&[], &[12], &SHOWN).abs() < 1e-6);
    }

    #[test]
    fn aggregate_is_by_mean_position_ties_in_the_first_order() {
        let reversed: Vec<usize> = SHOWN.iter().rev().copied().collect();
        // An echo: every file sums to 4; ties keep the first ranking's order.
        assert_eq!(aggregate(&SHOWN, &reversed, &SHOWN), SHOWN);
        assert_eq!(aggregate(&[12, 10], &[12, 14, 10], &SHOWN), [12, 10, 14]);
        assert!(aggregate(&[], &[], &SHOWN).is_empty());
    }
}
