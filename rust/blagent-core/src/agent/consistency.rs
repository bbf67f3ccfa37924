//! Permutation self-consistency of a listwise rerank (Tang et al., "Found in the Middle:
//! Permutation Self-Consistency Improves Listwise Ranking in Large Language Models", 2024).
//!
//! The same files are ranked twice, shown in one order and then in the [`second_order`]: the
//! reverse, with no file left at the place it had. A model that judges the files gives two
//! similar rankings; one that echoes the order it was shown gives two opposite ones, and one
//! that favours a place (the first, the last, the middle) puts a different file there each
//! time. [`agreement`] measures that (Kendall's τ-b, negative values cut to 0) with the chance
//! of a model ranking at random reaching it (an exact permutation p-value); only a significant
//! agreement scales the model's weight in the final fusion ([`Agreement::weight`]).
//! [`aggregate`] merges the two rankings by mean position, which removes the position bias of
//! each.

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

/// Concordant minus discordant pairs of two position vectors, and the pairs each leaves
/// untied.
fn pair_counts(a: &[f32], b: &[f32]) -> (i64, i64, i64) {
    let (mut s, mut untied_a, mut untied_b) = (0i64, 0i64, 0i64);
    for i in 0..a.len() {
        for j in i + 1..a.len() {
            let da = a[i].total_cmp(&a[j]) as i64;
            let db = b[i].total_cmp(&b[j]) as i64;
            untied_a += da.abs();
            untied_b += db.abs();
            s += da * db;
        }
    }
    (s, untied_a, untied_b)
}

/// Kendall's τ-b from [`pair_counts`] (ties allowed); 0 when either vector has no order.
fn tau_b((s, untied_a, untied_b): (i64, i64, i64)) -> f32 {
    let denominator = ((untied_a * untied_b) as f64).sqrt();
    if denominator == 0.0 {
        return 0.0;
    }
    (s as f64 / denominator) as f32
}

/// Up to this many files the p-value is exact: every reordering is counted (9! = 362,880).
const EXACT_UP_TO: usize = 9;

/// The one-sided p-value of `a` and `b` agreeing as much as they do (`observed`, their
/// concordant-minus-discordant count): the share of the reorderings of `b` (ties kept) whose
/// count reaches it, that is the chance that a model ranking the files at random the second
/// time would agree as well. Exact up to [`EXACT_UP_TO`] files, Kendall's normal approximation
/// with ties above.
fn p_value(observed: i64, a: &[f32], b: &[f32]) -> f64 {
    let n = b.len();
    if n > EXACT_UP_TO {
        return normal_p_value(observed, a, b);
    }
    // Heap's algorithm: each swap gives the next of the n! orders.
    let mut order = b.to_vec();
    let mut counters = vec![0usize; n];
    // The first order counted is `b` itself, which reaches `observed`.
    let mut reached = 1u64;
    let mut i = 0;
    while i < n {
        if counters[i] < i {
            order.swap(if i % 2 == 0 { 0 } else { counters[i] }, i);
            reached += u64::from(pair_counts(a, &order).0 >= observed);
            counters[i] += 1;
            i = 0;
        } else {
            counters[i] = 0;
            i += 1;
        }
    }
    let orders: u64 = (1..=n as u64).product();
    reached as f64 / orders as f64
}

/// `normal_p_value`'s tie terms for one vector: Σ t(t−1)(2t+5), Σ t(t−1), Σ t(t−1)(t−2) over
/// its groups of `t` equal values.
fn tie_terms(v: &[f32]) -> (f64, f64, f64) {
    let mut sorted = v.to_vec();
    sorted.sort_by(f32::total_cmp);
    let mut terms = (0.0, 0.0, 0.0);
    for group in sorted.chunk_by(|x, y| x.total_cmp(y).is_eq()) {
        let t = group.len() as f64;
        terms.0 += t * (t - 1.0) * (2.0 * t + 5.0);
        terms.1 += t * (t - 1.0);
        terms.2 += t * (t - 1.0) * (t - 2.0);
    }
    terms
}

/// The normal approximation of [`p_value`]: the variance of the pair count under
/// independence with ties in both vectors (Kendall, Rank Correlation Methods, 1970).
fn normal_p_value(observed: i64, a: &[f32], b: &[f32]) -> f64 {
    let n = a.len() as f64;
    let (ta, tb) = (tie_terms(a), tie_terms(b));
    let variance = (n * (n - 1.0) * (2.0 * n + 5.0) - ta.0 - tb.0) / 18.0
        + ta.1 * tb.1 / (2.0 * n * (n - 1.0))
        + ta.2 * tb.2 / (9.0 * n * (n - 1.0) * (n - 2.0));
    if variance <= 0.0 {
        return 1.0;
    }
    0.5 * libm::erfc(observed as f64 / variance.sqrt() / std::f64::consts::SQRT_2)
}

/// The significance level: a model's two answers count as agreeing when a model ranking at
/// random would agree as much at most this often.
const ALPHA: f32 = 0.05;

/// How far two rankings of the same files agree, and how likely that is by chance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Agreement {
    /// Kendall's τ-b of the two rankings, negatives cut to 0.
    pub tau: f32,
    /// The one-sided p-value of `tau` (1 when `tau` is 0).
    pub p_value: f32,
}

impl Agreement {
    /// No agreement: an answer was missing.
    pub const NONE: Self = Self {
        tau: 0.0,
        p_value: 1.0,
    };

    /// What the model's weight is scaled by: `tau` when chance reaches it at most [`ALPHA`]
    /// of the time, else 0. A model that judges at random agrees with itself by chance half the
    /// time (τ > 0); only a significant agreement shows a judgement.
    pub fn weight(self) -> f32 {
        if self.p_value <= ALPHA {
            self.tau
        } else {
            0.0
        }
    }
}

/// How far two rankings of the `shown` files agree: Kendall's τ-b of their positions (a file a
/// ranking leaves out is tied last in it), 0 when they disagree more than they agree; and its
/// p-value.
pub(crate) fn agreement(first: &[usize], second: &[usize], shown: &[usize]) -> Agreement {
    let (a, b) = (positions(first, shown), positions(second, shown));
    let counts = pair_counts(&a, &b);
    let tau = tau_b(counts).max(0.0);
    if tau == 0.0 {
        return Agreement::NONE;
    }
    Agreement {
        tau,
        p_value: p_value(counts.0, &a, &b) as f32,
    }
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
        assert_eq!(agreement(&SHOWN, &reversed, &SHOWN), Agreement::NONE);
        let same = agreement(&SHOWN, &SHOWN, &SHOWN);
        assert!((same.tau - 1.0).abs() < 1e-6);
        // One order of the 5! = 120 agrees as much: the same one.
        assert!((same.p_value - 1.0 / 120.0).abs() < 1e-6);
        assert!((same.weight() - 1.0).abs() < 1e-6);
        // One swap of neighbours out of ten pairs: τ = (9 - 1) / 10; the orders with at most one
        // swap (1 + 4 of them) agree as much.
        let swapped = agreement(&SHOWN, &[10, 12, 11, 13, 14], &SHOWN);
        assert!((swapped.tau - 0.8).abs() < 1e-6);
        assert!((swapped.p_value - 5.0 / 120.0).abs() < 1e-6);
        assert!((swapped.weight() - 0.8).abs() < 1e-6);
        // Two swaps: τ = 0.6, reached by 1 + 4 + 9 orders of 120: chance, no weight.
        let two = agreement(&SHOWN, &[11, 10, 13, 12, 14], &SHOWN);
        assert!((two.tau - 0.6).abs() < 1e-6);
        assert!((two.p_value - 14.0 / 120.0).abs() < 1e-6);
        assert!(two.weight().abs() < f32::EPSILON);
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
                assert_eq!(
                    agreement(&shown, &second, &shown),
                    Agreement::NONE,
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
        assert!((agreement(&first, &middle(&reversed), &SHOWN).tau - 1.0).abs() < 1e-6);
        assert_eq!(
            agreement(&first, &middle(&second_order(&SHOWN)), &SHOWN),
            Agreement::NONE
        );
    }

    #[test]
    fn short_lists_tie_the_files_they_leave_out() {
        // Both put 12 first and say nothing else: they agree, but naming the same one file of
        // five is what chance does one time in five.
        let one = agreement(&[12], &[12], &SHOWN);
        assert!((one.tau - 1.0).abs() < 1e-6);
        assert!((one.p_value - 0.2).abs() < 1e-6);
        assert!(one.weight().abs() < f32::EPSILON);
        // Each names only the file it was shown first: they disagree.
        assert_eq!(agreement(&[10], &[14], &SHOWN), Agreement::NONE);
        // Nothing listed: no order, no agreement.
        assert_eq!(agreement(&[], &[12], &SHOWN), Agreement::NONE);
    }

    #[test]
    fn the_normal_approximation_is_close_to_the_exact_count_at_nine_files() {
        let shown: Vec<usize> = (0..9).collect();
        for (first, second) in [
            (
                vec![0, 1, 2, 3, 4, 5, 6, 7, 8],
                vec![1, 0, 3, 2, 5, 4, 8, 6, 7],
            ),
            (vec![0, 1, 2, 3, 4], vec![2, 0, 1, 5, 3, 8]),
            (vec![3, 1, 4], vec![1, 3, 5, 4]),
        ] {
            let (a, b) = (positions(&first, &shown), positions(&second, &shown));
            let observed = pair_counts(&a, &b).0;
            let exact = p_value(observed, &a, &b);
            let normal = normal_p_value(observed, &a, &b);
            assert!(
                (exact - normal).abs() < 0.02,
                "{first:?} {second:?}: exact {exact}, normal {normal}"
            );
        }
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
