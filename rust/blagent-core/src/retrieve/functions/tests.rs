use std::fs;

use super::*;
use crate::index::{IndexOptions, RepoIndex};
use crate::retrieve::{complete, entity_id, score, FusionWeights};

const CART: &str = r#"TAX = 0.2


def _apply_tax(amount):
    return amount * (1 + TAX)


class Cart:
    def __init__(self):
        self.items = []

    def total(self):
        def price(item):
            return item.price * item.quantity
        return sum(price(i) for i in self.items)

    def checkout(self, wallet):
        amount = _apply_tax(self.total())
        if wallet.balance < amount:
            raise ValueError("insufficient funds for this cart")
        wallet.balance -= amount
"#;

const REPORT: &str = r#"from shop.cart import Cart


def render(cart):
    return "total: %s" % cart.total()


def unrelated():
    return 42
"#;

fn index() -> (tempfile::TempDir, SearchIndex) {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("shop")).unwrap();
    fs::write(dir.path().join("shop/cart.py"), CART).unwrap();
    fs::write(dir.path().join("shop/report.py"), REPORT).unwrap();
    let repo = RepoIndex::build(dir.path(), &IndexOptions::default()).unwrap();
    (dir, SearchIndex::from(repo))
}

fn candidates_for(index: &SearchIndex, issue: &str) -> (Scored, Vec<usize>, Vec<Candidate>) {
    let scored = score(index, issue, &FusionWeights::default(), None).unwrap();
    let files = complete(&index.repo, scored.ranked.iter().map(|&(f, _)| f));
    let candidates = function_candidates(index, &scored, &files).unwrap();
    (scored, files, candidates)
}

/// A candidate's `path::Class.method` id.
fn id_of(index: &SearchIndex, candidate: &Candidate) -> String {
    let file = &index.repo.files[candidate.file];
    entity_id(
        file.path(),
        &file.parsed.symbols[candidate.symbol].qualified,
    )
}

fn feature_of(index: &SearchIndex, candidates: &[Candidate], id: &str, feature: Feature) -> f32 {
    candidates
        .iter()
        .find(|c| id_of(index, c) == id)
        .unwrap_or_else(|| panic!("{id} is a candidate"))
        .get(feature)
}

#[test]
fn candidates_are_functions_and_methods_with_nested_ones_rolled_up() {
    let (_dir, index) = index();
    let (_, _, candidates) = candidates_for(&index, "The cart total is wrong");
    let mut ids: Vec<String> = candidates
        .iter()
        .map(|c| {
            index.repo.files[c.file].parsed.symbols[c.symbol]
                .qualified
                .clone()
        })
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            "Cart.__init__",
            "Cart.checkout",
            "Cart.total",
            "_apply_tax",
            "render",
            "unrelated"
        ]
    );
}

#[test]
fn a_qualified_mention_ranks_its_method_first() {
    let (_dir, index) = index();
    let issue = "`Cart.total` ignores the quantity of each item";
    let (scored, files, candidates) = candidates_for(&index, issue);
    assert!(
        feature_of(
            &index,
            &candidates,
            "shop/cart.py::Cart.total",
            Feature::Qualified
        ) > 0.0
    );
    assert!(
        feature_of(
            &index,
            &candidates,
            "shop/cart.py::Cart.total",
            Feature::Name
        ) > 0.0
    );
    // The nested `price` lies in `total`: its lines count for `total`.
    assert!(
        feature_of(
            &index,
            &candidates,
            "shop/cart.py::Cart.total",
            Feature::ChunkIssue
        ) > 0.0
    );
    let ranked = rank_functions(&index, &scored, &files, &FunctionWeights::default()).unwrap();
    assert_eq!(ranked[0].id, "shop/cart.py::Cart.total");
    assert_eq!(ranked[0].kind, "method");
    assert!(ranked.windows(2).all(|w| w[0].score >= w[1].score));
    // Each says why: what each feature added, summing to its score.
    assert!(ranked[0].contributions["qualified"] > 0.0);
    for entity in &ranked {
        let sum: f32 = entity.contributions.values().sum();
        assert!((sum - entity.score).abs() < 1e-5, "{entity:?}");
    }
}

#[test]
fn callees_users_frames_and_messages_of_named_functions() {
    let (_dir, index) = index();
    let issue = "checkout() raises although the balance suffices:\n\n```\nTraceback (most recent call last):\n  File \"/venv/lib/python3.11/site-packages/shop/cart.py\", line 21, in checkout\n    raise ValueError(\"insufficient funds for this cart\")\nValueError: insufficient funds for this cart\n```\n";
    let (_, _, candidates) = candidates_for(&index, issue);
    let get = |id: &str, f: Feature| feature_of(&index, &candidates, id, f);
    assert!(get("shop/cart.py::_apply_tax", Feature::Callee) > 0.0);
    assert!(get("shop/cart.py::Cart.total", Feature::Callee) > 0.0);
    assert!(get("shop/report.py::unrelated", Feature::Callee) == 0.0);
    assert!((get("shop/cart.py::Cart.checkout", Feature::Frame) - 1.0).abs() < 1e-6);
    assert!((get("shop/cart.py::Cart.checkout", Feature::Error) - 1.0).abs() < 1e-6);
    assert!(get("shop/cart.py::_apply_tax", Feature::Error) == 0.0);
    // `checkout` raises the named `ValueError`; nothing in `unrelated` is named.
    assert!(get("shop/cart.py::Cart.checkout", Feature::Uses) > 0.0);
    assert!(get("shop/report.py::unrelated", Feature::Uses) == 0.0);
}

#[test]
fn a_module_function_named_with_its_module_and_the_methods_of_a_named_class() {
    let (_dir, index) = index();
    let issue = "report.render(cart) shows wrong figures since Cart.total() changed";
    let (_, _, candidates) = candidates_for(&index, issue);
    let get = |id: &str, f: Feature| feature_of(&index, &candidates, id, f);
    assert!(get("shop/report.py::render", Feature::Qualified) > 0.0);
    assert!(get("shop/report.py::unrelated", Feature::Qualified) == 0.0);
    assert!(get("shop/cart.py::Cart.checkout", Feature::Class) > 0.0);
    assert!(get("shop/report.py::render", Feature::Uses) > 0.0);
    assert!(get("shop/report.py::render", Feature::FileRank) > 0.0);
    assert!(get("shop/cart.py::_apply_tax", Feature::Length) > 0.0);
}

#[test]
fn parameters_own_file_standing_and_tests_are_features() {
    let (_dir, index) = index();
    let issue = "Paying with a `wallet` whose balance is short: checkout raises, render is fine";
    let (_, _, candidates) = candidates_for(&index, issue);
    let get = |id: &str, feature| feature_of(&index, &candidates, id, feature);
    assert!(get("shop/cart.py::Cart.checkout", Feature::Parameter) > 0.0);
    assert!(get("shop/cart.py::Cart.total", Feature::Parameter).abs() < f32::EPSILON);
    // Each file's best chunk match is 1 in its own file, whatever the file's rank.
    for file in ["shop/cart.py", "shop/report.py"] {
        let best = candidates
            .iter()
            .filter(|c| index.repo.files[c.file].path() == file)
            .map(|c| c.get(Feature::ChunkInFile))
            .fold(0.0f32, f32::max);
        assert!((best - 1.0).abs() < 1e-6, "{file}: {best}");
    }
    assert!((get("shop/cart.py::Cart.checkout", Feature::NotTest) - 1.0).abs() < f32::EPSILON);
}

#[test]
fn linked_lines_point_at_the_functions_that_hold_them() {
    let (_dir, index) = index();
    let issue = "The cart total is wrong when checking out.\n\
        See https://github.com/acme/shop/blob/0123abc/shop/cart.py#L13-L14 and \
        shop/cart.py#L19, also report.py#L5 (and shop/cart.py#L1-L2, other/missing.py#L3).";
    let (_, _, candidates) = candidates_for(&index, issue);
    // A range inside `Cart.total`, one line of `Cart.checkout`, a bare file name's `render`;
    // not module lines, nor a file the repository lacks.
    let linked: Vec<String> = candidates
        .iter()
        .filter(|c| c.get(Feature::LineLink) > 0.0)
        .map(|c| {
            let file = &index.repo.files[c.file];
            let value = c.get(Feature::LineLink);
            let id = entity_id(file.path(), &file.parsed.symbols[c.symbol].qualified);
            format!("{id} {value}")
        })
        .collect();
    assert_eq!(
        linked,
        [
            "shop/cart.py::Cart.total 1",
            "shop/cart.py::Cart.checkout 1",
            "shop/report.py::render 1"
        ]
    );
    let (_, _, plain) = candidates_for(&index, "The cart total is wrong when checking out.");
    assert!(plain.iter().all(|c| c.get(Feature::LineLink) == 0.0));
}

#[test]
fn a_name_defined_twice_is_one_entity_at_its_best_place() {
    // A property's getter and setter, and a Java method's overloads, share an id: each id is
    // listed once, where its best-scoring definition ranks.
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("box.py"),
        "class Box:\n    @property\n    def size(self):\n        return self._size\n\n    \
         @size.setter\n    def size(self, value):\n        if value < 0:\n            \
         raise ValueError('negative size')\n        self._size = value\n\n    \
         def area(self):\n        return self._size ** 2\n",
    )
    .unwrap();
    fs::create_dir_all(dir.path().join("src")).unwrap();
    fs::write(
        dir.path().join("src/Shelf.java"),
        "class Shelf {\n    void put(String item) {\n        items.add(item);\n    }\n\n    \
         void put(String item, int count) {\n        for (int i = 0; i < count; i++) {\n            \
         items.add(item);\n        }\n    }\n}\n",
    )
    .unwrap();
    let repo = RepoIndex::build(dir.path(), &IndexOptions::default()).unwrap();
    let index = SearchIndex::from(repo);
    let issue = "Box.size accepts a negative size without raising; Shelf.put ignores the count";
    let (scored, files, candidates) = candidates_for(&index, issue);
    let definitions = |id: &str| candidates.iter().filter(|c| id_of(&index, c) == id).count();
    assert_eq!(definitions("box.py::Box.size"), 2);
    assert_eq!(definitions("src/Shelf.java::Shelf.put"), 2);
    let ranked = rank_functions(&index, &scored, &files, &FunctionWeights::default()).unwrap();
    let ids: Vec<&str> = ranked.iter().map(|e| e.id.as_str()).collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    assert!(ids.contains(&"box.py::Box.size") && ids.contains(&"src/Shelf.java::Shelf.put"));
    assert!(ranked.windows(2).all(|w| w[0].score >= w[1].score));
}

/// A chunk between functions credits the functions inside it, found among all of the file's
/// symbols for each such chunk: 45,000 statements between 45,000 functions took 27 s. The
/// symbols starting within the span are found by binary search; a span over a small class
/// still credits each of its methods.
#[test]
fn chunks_between_many_functions_find_what_they_cover_at_once() {
    use std::fmt::Write as _;

    let mut text = String::new();
    for i in 0..45_000 {
        let _ = writeln!(text, "zeta = {i}\ndef f{i}(): pass");
    }
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("alt.py"), text).unwrap();
    let repo = RepoIndex::build(dir.path(), &IndexOptions::default()).unwrap();
    let search = SearchIndex::from(repo);
    let (_, _, candidates) = candidates_for(&search, "zeta is wrong in f1");
    assert_eq!(candidates.len(), 45_000);
    let set = candidates::CandidateSet::new(&search.repo, &[0]);
    let symbols = set.symbols(0);
    let f1 = symbols.iter().position(|s| s.name == "f1").unwrap();
    assert_eq!(set.covering(0, (3, 4)), [set.slot(0, f1).unwrap()]);
    assert_eq!(set.covering(0, (4, 4)).len(), 1);
    assert!(set.covering(0, (3, 3)).is_empty() && set.covering(0, (5, 5)).is_empty());
    let (_dir, small) = index();
    let cart = (0..small.repo.files.len())
        .find(|&f| small.repo.files[f].path() == "shop/cart.py")
        .unwrap();
    let set = candidates::CandidateSet::new(&small.repo, &[cart]);
    let methods: Vec<&str> = set
        .covering(cart, (8, 21))
        .into_iter()
        .map(|item| set.symbol(item).name.as_str())
        .collect();
    assert_eq!(methods, ["__init__", "total", "checkout"]);
}

/// Found by a review: a first file of 60 functions filled the whole list, and Agentless's edit
/// stage, which shows a file only with locations of its own, never saw the second and third.
/// The best [`MAX_FUNCTIONS`] come first, then each candidate file's best up to
/// [`PER_FILE_FUNCTIONS`] of its own.
#[test]
fn every_candidate_file_lists_its_best_functions_after_the_best_overall() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("shop")).unwrap();
    let big = (0..60)
        .map(|i| format!("def invoice_total_{i}(invoice):\n    return invoice.total + {i}\n"))
        .collect::<Vec<_>>()
        .join("\n\n");
    fs::write(dir.path().join("shop/invoice.py"), big).unwrap();
    fs::write(dir.path().join("shop/cart.py"), CART).unwrap();
    fs::write(dir.path().join("shop/report.py"), REPORT).unwrap();
    let index = SearchIndex::from(RepoIndex::build(dir.path(), &IndexOptions::default()).unwrap());
    let issue = "invoice total is wrong: invoice_total gives the invoice total twice";
    let (scored, files, _) = candidates_for(&index, issue);
    let ranked = rank_functions(&index, &scored, &files, &FunctionWeights::default()).unwrap();
    assert!(ranked[..MAX_FUNCTIONS]
        .iter()
        .all(|e| e.path == "shop/invoice.py"));
    let tail = &ranked[MAX_FUNCTIONS..];
    for path in ["shop/cart.py", "shop/report.py"] {
        let own = tail.iter().filter(|e| e.path == path).count();
        let defined = if path == "shop/cart.py" { 4 } else { 2 };
        assert_eq!(own, defined.min(PER_FILE_FUNCTIONS), "{path}: {tail:?}");
    }
    assert!(!tail.iter().any(|e| e.path == "shop/invoice.py"));
    let ids: HashSet<&str> = ranked.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.len(), ranked.len(), "each id once");
}

/// A summary reads as prose: dots and underscores as spaces, the parameters' names, the
/// documentation's first line.
#[test]
fn summaries_are_name_parameters_and_documentation() {
    let file = crate::repo::SourceFile::new(
        "shop/cart.py".to_owned(),
        crate::repo::language_for_path("shop/cart.py").unwrap(),
        "class Cart:\n    def apply_coupon(self, coupon_code: Dict[str, int] = None, *rest, \
         **options):\n        \"\"\"Apply a coupon to the cart.\n\n        More.\"\"\"\n        \
         return 1\n\n\ndef _total():\n    return 0\n"
            .to_owned(),
        false,
    );
    let parsed = crate::chunk::parse_file(&file, &crate::chunk::ChunkOptions::default());
    let summaries: Vec<String> = parsed
        .symbols
        .iter()
        .filter(|s| super::candidates::is_candidate(s))
        .map(super::summary_text)
        .collect();
    assert_eq!(
        summaries,
        [
            "Cart apply coupon (coupon code, rest, options) Apply a coupon to the cart.",
            "total ()",
        ]
    );
    // A Java parameter keeps its type; a Kotlin one is its name.
    assert_eq!(
        super::parameter_names(
            "public Map<String, Integer> count(final List<String> words, int n)"
        ),
        ["final List<String> words", "int n"]
    );
    assert_eq!(
        super::parameter_names("fun String.slugify(separator: Char = '-', vararg keep: String)"),
        ["separator", "vararg keep"]
    );
}
