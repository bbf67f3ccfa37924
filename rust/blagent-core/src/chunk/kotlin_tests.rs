//! Kotlin as tree-sitter-kotlin-sg parses it: the shapes tree-sitter-kotlin-ng, the grammar
//! before it, failed on (multi-line delegation lists, one-line class bodies), and how
//! definitions without a `name` field, bodies without a `block` node, comments, imports and the
//! package are read from its trees.

use std::fmt::Write as _;

use super::*;
use crate::repo::language_for_path;

fn parse(text: &str) -> ParsedFile {
    let language = language_for_path("Spec.kt").expect("Kotlin");
    let file = SourceFile::new("Spec.kt".to_owned(), language, text.to_owned(), false);
    parse_file(&file, &ChunkOptions::default())
}

/// [`parse`] of a text the grammar reads without an error.
fn parse_clean(text: &str) -> ParsedFile {
    let parsed = parse(text);
    assert!(!parsed.syntax_errors, "{text}");
    parsed
}

/// Each symbol's kind and qualified name, in file order.
fn symbols(parsed: &ParsedFile) -> Vec<(SymbolKind, &str)> {
    parsed
        .symbols
        .iter()
        .map(|s| (s.kind, s.qualified.as_str()))
        .collect()
}

fn symbol<'p>(parsed: &'p ParsedFile, qualified: &str) -> &'p Symbol {
    parsed
        .symbols
        .iter()
        .find(|s| s.qualified == qualified)
        .unwrap_or_else(|| panic!("no {qualified} in {:?}", symbols(parsed)))
}

/// Every non-blank line of `text` is in a chunk (a line such as `} catch (e: E) {` may be in
/// two: the `}` ends one, the `catch` starts the next), and no two chunks share a byte.
fn assert_covered(parsed: &ParsedFile, text: &str) {
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let held = parsed
            .chunks
            .iter()
            .any(|c| c.start_line <= n && n <= c.end_line);
        assert!(held || line.trim().is_empty(), "line {n} `{line}`");
    }
    for pair in parsed.chunks.windows(2) {
        assert!(pair[0].end_byte <= pair[1].start_byte, "{pair:?}");
    }
}

/// kotlinpoet's `PropertySpec.kt`, shortened: constructors on their own lines, delegation
/// lists over several lines (`) :` / `Taggable by tagMap,` / `Annotatable,` / `Documentable {`).
/// tree-sitter-kotlin-ng read lines 7 to 43 as one syntax error, whose recovery took the class
/// away and left its methods top-level functions (`emit` for `PropertySpec.emit`).
const PROPERTY_SPEC: &str = r#"package com.squareup.kotlinpoet

import com.squareup.kotlinpoet.KModifier.Target.PROPERTY
import java.lang.reflect.Type

/** A generated property declaration. */
@OptIn(ExperimentalKotlinPoetApi::class)
public class PropertySpec
private constructor(
  builder: Builder,
  private val tagMap: TagMap = builder.buildTagMap(),
) :
  Taggable by tagMap,
  Annotatable,
  Documentable {
  public val name: String = builder.name

  internal fun emit(
    codeWriter: CodeWriter,
    implicitModifiers: Set<KModifier>,
  ) {
    codeWriter.emit("val")
  }

  override fun equals(other: Any?): Boolean {
    if (this === other) return true
    return toString() == other.toString()
  }

  public class Builder
  internal constructor(internal val name: String, internal val type: TypeName) :
    Taggable.Builder<Builder>,
    Annotatable.Builder<Builder> {
    public fun build(): PropertySpec = PropertySpec(this)
  }

  public companion object {
    @JvmStatic public fun builder(name: String): Builder = Builder(name)
  }
}

public fun PropertySpec.after(): Int = 1
"#;

#[test]
fn a_delegation_list_over_several_lines_keeps_its_class() {
    let parsed = parse_clean(PROPERTY_SPEC);
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Class, "PropertySpec"),
            (SymbolKind::Method, "PropertySpec.emit"),
            (SymbolKind::Method, "PropertySpec.equals"),
            (SymbolKind::Class, "PropertySpec.Builder"),
            (SymbolKind::Method, "PropertySpec.Builder.build"),
            (SymbolKind::Class, "PropertySpec.Companion"),
            (SymbolKind::Method, "PropertySpec.Companion.builder"),
            (SymbolKind::Function, "PropertySpec.after"),
        ]
    );
    let class = symbol(&parsed, "PropertySpec");
    assert_eq!(
        (class.start_line, class.end_line, class.body_line),
        (7, 40, Some(15))
    );
    assert_eq!(
        class.doc.as_deref(),
        Some("A generated property declaration.")
    );
    assert!(
        class.signature.ends_with("Annotatable, Documentable"),
        "{}",
        class.signature
    );
    let emit = symbol(&parsed, "PropertySpec.emit");
    assert_eq!((emit.start_line, emit.end_line), (18, 23));
    assert_eq!(
        emit.signature,
        "internal fun emit( codeWriter: CodeWriter, implicitModifiers: Set<KModifier>, )"
    );
    let chunks: Vec<(ChunkKind, usize, usize, Option<&str>)> = parsed
        .chunks
        .iter()
        .map(|c| (c.kind, c.start_line, c.end_line, c.symbol.as_deref()))
        .collect();
    assert_eq!(
        chunks,
        [
            (ChunkKind::Module, 1, 4, None),
            (ChunkKind::Class, 6, 40, Some("PropertySpec")),
            (ChunkKind::Function, 42, 42, Some("PropertySpec.after")),
        ]
    );
    assert_covered(&parsed, PROPERTY_SPEC);
    // Under a smaller budget the class's members are chunks of their own, named in it.
    let language = language_for_path("Spec.kt").expect("Kotlin");
    let file = SourceFile::new(
        "Spec.kt".to_owned(),
        language,
        PROPERTY_SPEC.to_owned(),
        false,
    );
    let small = ChunkOptions {
        max_bytes: 300,
        ..ChunkOptions::default()
    };
    let parsed = parse_file(&file, &small);
    let named: Vec<(ChunkKind, Option<&str>)> = parsed
        .chunks
        .iter()
        .map(|c| (c.kind, c.symbol.as_deref()))
        .collect();
    for member in [
        (ChunkKind::ClassBody, Some("PropertySpec")),
        (ChunkKind::Function, Some("PropertySpec.emit")),
        (ChunkKind::Function, Some("PropertySpec.equals")),
        (ChunkKind::Class, Some("PropertySpec.Builder")),
        (ChunkKind::Class, Some("PropertySpec.Companion")),
    ] {
        assert!(named.contains(&member), "{member:?} in {named:?}");
    }
    assert_covered(&parsed, PROPERTY_SPEC);
}

/// `class C { fun f() {} }` on one line, which tree-sitter-kotlin-ng could not parse, and the
/// declarations after it.
#[test]
fn a_one_line_class_body_and_what_follows_it() {
    let text = "class C { fun f() {} }\n\nclass D {\n    fun g() = 1\n}\n\nfun h() {}\n";
    let parsed = parse(text);
    // tree-sitter-kotlin-sg reads `fun f() {}` before the `}` on its line with a zero-width
    // statement separator it marks missing: nothing is left out, but the file is flagged.
    assert!(parsed.syntax_errors);
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Class, "C"),
            (SymbolKind::Method, "C.f"),
            (SymbolKind::Class, "D"),
            (SymbolKind::Method, "D.g"),
            (SymbolKind::Function, "h"),
        ]
    );
    let chunks: Vec<(ChunkKind, usize, usize, Option<&str>)> = parsed
        .chunks
        .iter()
        .map(|c| (c.kind, c.start_line, c.end_line, c.symbol.as_deref()))
        .collect();
    assert_eq!(
        chunks,
        [
            (ChunkKind::Class, 1, 1, Some("C")),
            (ChunkKind::Class, 3, 5, Some("D")),
            (ChunkKind::Function, 7, 7, Some("h")),
        ]
    );
    assert_eq!(symbol(&parsed, "C.f").signature, "fun f()");
}

/// An extension function is named by its receiver's simple type, read from the header before
/// the name (`receiver_type` in the tree), in a class too.
#[test]
fn extension_functions_are_named_by_their_receiver() {
    let text = "\
inline fun <T> List<T>.second(): T = this[1]
fun String?.orBlank(): String = this ?: \"\"
suspend fun <K, V> Map<K, List<V>>.firstKey(): K = keys.first()
fun kotlin.collections.Set<Int>.total() = sum()
fun ((Int) -> Unit).twice() { this(1); this(2) }
fun <T : Comparable<T>> T.atLeast(min: T): T = maxOf(this, min)
class Ops {
    fun Int.double() = this * 2
}
";
    let parsed = parse_clean(text);
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Function, "List.second"),
            (SymbolKind::Function, "String.orBlank"),
            (SymbolKind::Function, "Map.firstKey"),
            (SymbolKind::Function, "Set.total"),
            (SymbolKind::Function, "twice"),
            (SymbolKind::Function, "T.atLeast"),
            (SymbolKind::Class, "Ops"),
            (SymbolKind::Method, "Ops.Int.double"),
        ]
    );
    let second = symbol(&parsed, "List.second");
    assert_eq!(second.name, "second");
    assert_eq!(second.signature, "inline fun <T> List<T>.second(): T");
    let chunk = &parsed.chunks[0];
    assert_eq!(
        (chunk.kind, chunk.symbol.as_deref()),
        (ChunkKind::Function, Some("List.second"))
    );
}

/// A companion object is named `Companion` unless it has a name of its own.
#[test]
fn companion_objects_named_and_unnamed() {
    let text = "\
class Cart {
    companion object {
        fun empty(): Cart = Cart()
    }
}
class Money {
    companion object Factory : Parser<Money> {
        fun of(cents: Long) = Money()
    }
}
object Registry {
    fun register() {}
}
";
    let parsed = parse_clean(text);
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Class, "Cart"),
            (SymbolKind::Class, "Cart.Companion"),
            (SymbolKind::Method, "Cart.Companion.empty"),
            (SymbolKind::Class, "Money"),
            (SymbolKind::Class, "Money.Factory"),
            (SymbolKind::Method, "Money.Factory.of"),
            (SymbolKind::Class, "Registry"),
            (SymbolKind::Method, "Registry.register"),
        ]
    );
    assert_eq!(symbol(&parsed, "Cart.Companion").name, "Companion");
    assert_eq!(
        symbol(&parsed, "Money.Factory").signature,
        "companion object Factory : Parser<Money>"
    );
}

/// Secondary constructors are `constructor`; their header ends at the `{` of their body,
/// an empty one included, where tree-sitter-kotlin-sg puts the braces outside the body.
#[test]
fn secondary_constructors() {
    let text = "\
class Point(val x: Int, val y: Int) {
    constructor() : this(0, 0) {
        log(\"origin\")
    }
    constructor(x: Long) : this(x.toInt(), 0) {}
    constructor(s: String) : this(s.length, 0)
}
";
    let parsed = parse_clean(text);
    let constructors: Vec<(&str, &str, usize, Option<usize>)> = parsed
        .symbols
        .iter()
        .filter(|s| s.name == "constructor")
        .map(|s| {
            assert_eq!(s.kind, SymbolKind::Method);
            (
                s.qualified.as_str(),
                s.signature.as_str(),
                s.start_line,
                s.body_line,
            )
        })
        .collect();
    assert_eq!(
        constructors,
        [
            (
                "Point.constructor",
                "constructor() : this(0, 0)",
                2,
                Some(2)
            ),
            (
                "Point.constructor",
                "constructor(x: Long) : this(x.toInt(), 0)",
                5,
                Some(5)
            ),
            (
                "Point.constructor",
                "constructor(s: String) : this(s.length, 0)",
                6,
                None
            ),
        ]
    );
    assert!(parsed
        .skeleton
        .contains("    constructor() : this(0, 0)\n    constructor(x: Long)"));
}

/// KDoc is the `/** … */` comment right before a definition (its annotations included); other
/// comments and a KDoc cut off by a blank line are not.
#[test]
fn kdoc_documents_the_definition_after_it() {
    let text = "\
/**
 *
 * Adds two numbers.
 * @param a the first
 */
@JvmStatic
fun add(a: Int, b: Int) = a + b

/* Not KDoc. */
fun plain() {}

/** Cut off. */

fun apart() {}

// A line comment.
class Shop {
    /** The total in cents. */
    override fun total(): Long = 0
}
";
    let parsed = parse_clean(text);
    let docs: Vec<(&str, Option<&str>)> = parsed
        .symbols
        .iter()
        .map(|s| (s.qualified.as_str(), s.doc.as_deref()))
        .collect();
    assert_eq!(
        docs,
        [
            ("add", Some("Adds two numbers.")),
            ("plain", None),
            ("apart", None),
            ("Shop", None),
            ("Shop.total", Some("The total in cents.")),
        ]
    );
    // The KDoc leads its definition's chunk.
    let add = parsed
        .chunks
        .iter()
        .find(|c| c.symbol.as_deref() == Some("add"));
    assert_eq!(add.map(|c| (c.start_line, c.end_line)), Some((1, 7)));
    assert!(parsed
        .skeleton
        .contains("/** Adds two numbers. */\n@JvmStatic fun add(a: Int, b: Int)\n"));
}

/// The package and the imports (in tree-sitter-kotlin-sg's `import_list`); a long run of
/// imports is cut into chunks within the budget, as statements are.
#[test]
fn package_and_imports() {
    let mut text =
        "@file:JvmName(\"ShopKt\")\n\npackage com.example.shop\n\nimport kotlin.math.max\n\
                    import com.example.core.Money as Cash\nimport kotlinx.coroutines.*\n"
            .to_owned();
    for i in 0..100 {
        let _ = writeln!(text, "import com.example.generated.module{i}.Generated{i}");
    }
    text.push_str("\nfun main() {}\n");
    let parsed = parse_clean(&text);
    assert_eq!(parsed.package.as_deref(), Some("com.example.shop"));
    assert_eq!(parsed.imports.len(), 103);
    assert_eq!(
        parsed.imports[..3],
        [
            "import kotlin.math.max",
            "import com.example.core.Money as Cash",
            "import kotlinx.coroutines.*",
        ]
    );
    assert_eq!(
        parsed.imports[102],
        "import com.example.generated.module99.Generated99"
    );
    assert!(parsed.skeleton.starts_with(
        "package com.example.shop\nimport kotlin.math.max\nimport com.example.core.Money as Cash\n"
    ));
    let module: Vec<&Chunk> = parsed
        .chunks
        .iter()
        .filter(|c| c.kind == ChunkKind::Module)
        .collect();
    assert!(module.len() >= 3, "{module:?}");
    for chunk in module {
        assert!(chunk.end_byte - chunk.start_byte <= ChunkOptions::default().max_bytes);
    }
    assert_covered(&parsed, &text);
    assert_eq!(symbols(&parsed), [(SymbolKind::Function, "main")]);
}

/// A long function is cut at statement boundaries, inside its `try`, `catch`, `if` branches,
/// loops and trailing lambdas too (whose statements tree-sitter-kotlin-sg groups in `statements`
/// between braces that are not theirs), each piece within the budget and starting at a
/// statement, a compound statement's header (`try {`, `Column(…) {`) with its first piece.
#[test]
fn a_long_function_is_split_at_statement_boundaries() {
    let run = |tag: &str, indent: &str| {
        (0..60).fold(String::new(), |mut s, i| {
            let _ = writeln!(s, "{indent}val {tag}{i} = compute(\"{tag}\", {i})");
            s
        })
    };
    let text = format!(
        "fun big(flag: Boolean) {{\n    // Starts here.\n{}    try {{\n{}    }} catch (e: IOException) {{\n{}    }} finally {{\n        close()\n    }}\n    if (flag) {{\n{}    }} else {{\n{}    }}\n    Column(modifier = Modifier) {{\n{}    }}\n    for (i in 0 until 3) {{\n{}    }}\n}}\n\nfun after() = 1\n",
        run("a", "    "),
        run("t", "        "),
        run("c", "        "),
        run("i", "        "),
        run("e", "        "),
        run("l", "        "),
        run("f", "        "),
    );
    let parsed = parse_clean(&text);
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Function, "big"),
            (SymbolKind::Function, "after")
        ]
    );
    let big = symbol(&parsed, "big");
    assert_eq!(
        (big.signature.as_str(), big.body_line),
        ("fun big(flag: Boolean)", Some(1))
    );
    let max = ChunkOptions::default().max_bytes;
    let pieces: Vec<&Chunk> = parsed
        .chunks
        .iter()
        .filter(|c| c.symbol.as_deref() == Some("big"))
        .collect();
    assert!(pieces.len() >= 12, "{} pieces", pieces.len());
    for piece in &pieces {
        assert_eq!(piece.kind, ChunkKind::Fragment);
        let code = piece.code(&text);
        assert!(code.len() <= max + 200, "a piece of {} bytes", code.len());
        let first = code.lines().next().unwrap().trim_start();
        assert!(
            first.starts_with("val ")
                || first.starts_with("fun big")
                || [
                    "try {",
                    "catch (",
                    "finally {",
                    "if (flag)",
                    "Column(",
                    "for ("
                ]
                .iter()
                .any(|h| first.starts_with(h)),
            "a piece starts mid-construct: {first}"
        );
    }
    // The function's header and its leading comment open the first piece; each compound
    // statement's header opens the piece holding its first statements.
    let starts = |needle: &str| pieces.iter().any(|p| p.code(&text).contains(needle));
    assert!(pieces[0]
        .code(&text)
        .starts_with("fun big(flag: Boolean) {\n    // Starts here.\n    val a0"));
    for opening in [
        "    try {\n        val t0 ",
        "catch (e: IOException) {\n        val c0 ",
        "if (flag) {\n        val i0 ",
        "Column(modifier = Modifier) {\n        val l0 ",
        "for (i in 0 until 3) {\n        val f0 ",
    ] {
        assert!(starts(opening), "{opening:?}");
    }
    assert_covered(&parsed, &text);
}

/// Top-level properties, type aliases and the like are module statements; getters are part of
/// their property; `init` blocks stay in their class.
#[test]
fn other_top_level_statements_and_class_members() {
    let text = "\
val defaultCurrency: String
    get() = \"EUR\"

typealias Items = List<Item>

class Cart(val items: Items) {
    init {
        require(items.isNotEmpty())
    }
    val size get() = items.size
}
";
    let parsed = parse_clean(text);
    assert_eq!(symbols(&parsed), [(SymbolKind::Class, "Cart")]);
    let chunks: Vec<(ChunkKind, usize, usize)> = parsed
        .chunks
        .iter()
        .map(|c| (c.kind, c.start_line, c.end_line))
        .collect();
    assert_eq!(
        chunks,
        [(ChunkKind::Module, 1, 4), (ChunkKind::Class, 6, 11)]
    );
}

/// Found by a review: tree-sitter-kotlin-sg reads a top-level class with two modifiers and a
/// bare header (`private sealed class First {`) as an infix call with a lambda, with no syntax
/// error, so the class was lost and its methods became top-level functions. Such a node is
/// read again as declarations, at the file's lines.
#[test]
fn a_top_level_class_the_grammar_reads_as_a_call_is_read_again() {
    let text = "package shop\n\n/** Rules. */\ninternal abstract class PriceRule {\n    fun applyDiscount(total: Int): Int = total - 1\n\n    private sealed class Kind {\n        fun f() = 1\n    }\n}\n\nclass Cart {\n    fun total(): Int = 0\n}\n";
    let parsed = parse(text);
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Class, "PriceRule"),
            (SymbolKind::Method, "PriceRule.applyDiscount"),
            (SymbolKind::Class, "PriceRule.Kind"),
            (SymbolKind::Method, "PriceRule.Kind.f"),
            (SymbolKind::Class, "Cart"),
            (SymbolKind::Method, "Cart.total"),
        ]
    );
    let rule = symbol(&parsed, "PriceRule");
    assert_eq!(
        (rule.start_line, rule.end_line, rule.doc_line),
        (4, 10, Some(3))
    );
    assert!(
        rule.direct
            && rule
                .signature
                .starts_with("internal abstract class PriceRule")
    );
    let apply = symbol(&parsed, "PriceRule.applyDiscount");
    assert_eq!((apply.start_line, apply.end_line), (5, 5));
    assert_eq!(symbol(&parsed, "PriceRule.Kind.f").start_line, 8);
    // A top-level expression that holds no declaration is walked as it was.
    let parsed = parse("fun main() = 1\n\nprintln(\"x\")\n");
    assert_eq!(symbols(&parsed), [(SymbolKind::Function, "main")]);
}

/// Found by a review: a function defined in an `init` block was a method of the class.
#[test]
fn a_function_in_an_init_block_is_local() {
    let parsed =
        parse_clean("class A {\n    init {\n        fun local() {}\n    }\n\n    fun m() {}\n}\n");
    let local = symbol(&parsed, "A.local");
    assert!(
        local.in_function && local.kind == SymbolKind::Function,
        "{local:?}"
    );
    assert_eq!(symbol(&parsed, "A.m").kind, SymbolKind::Method);
}

/// Found by a review: the methods of enum entries' bodies were all named as the enum's own
/// (`Color.label` three times); an entry with a body is a class of its own.
#[test]
fn an_enum_entry_with_a_body_is_a_class() {
    let parsed = parse_clean("enum class Color(val hex: String) {\n    RED(\"f00\") {\n        override fun label() = \"r\"\n    },\n    GREEN(\"0f0\"),\n    BLUE(\"00f\") {\n        override fun label() = \"b\"\n    };\n\n    abstract fun label(): String\n}\n");
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Class, "Color"),
            (SymbolKind::Class, "Color.RED"),
            (SymbolKind::Method, "Color.RED.label"),
            (SymbolKind::Class, "Color.BLUE"),
            (SymbolKind::Method, "Color.BLUE.label"),
            (SymbolKind::Method, "Color.label"),
        ]
    );
}

/// Found by a review of the re-reading: a declaration on the line where the misread node
/// starts was read twice (the whole line was read again).
#[test]
fn a_declaration_before_a_misread_node_on_its_line_is_read_once() {
    let parsed = parse("fun a() = 1; internal abstract class PriceRule {\n    fun apply(): Int = 1\n}\n\nclass Cart\n");
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Function, "a"),
            (SymbolKind::Class, "PriceRule"),
            (SymbolKind::Method, "PriceRule.apply"),
            (SymbolKind::Class, "Cart"),
        ]
    );
}

/// Left from a review (nowinandroid's `Button.kt`): after a syntax error tree-sitter's recovery
/// can take the rest of the file along (there a `/**` read as a division), so that the
/// definitions after it are lost, read as calls or listed twice (once from the tree, once from
/// a header in the error). A file with errors is read again one top-level declaration at a time
/// where an error touches one. Here a half-written `if` leaves a brace open: the whole file
/// after the package was one error.
#[test]
fn an_error_stays_in_its_own_top_level_declaration() {
    let text = "package p\n\n/**\n * Half written.\n */\n@Ann\nfun a(x: Boolean) {\n    if (x) {\n        println(x)\n}\n\n/**\n * Second.\n */\n@Composable\nfun Second(x: Int) {\n    println(x)\n}\n\nobject Defaults {\n    val Width = 1\n    fun size() = 2\n}\n\nclass Clean {\n    fun ok() = 1\n}\n";
    let parsed = parse(text);
    assert!(parsed.syntax_errors);
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Function, "a"),
            (SymbolKind::Function, "Second"),
            (SymbolKind::Class, "Defaults"),
            (SymbolKind::Method, "Defaults.size"),
            (SymbolKind::Class, "Clean"),
            (SymbolKind::Method, "Clean.ok"),
        ]
    );
    let second = symbol(&parsed, "Second");
    assert_eq!(
        (second.start_line, second.end_line, second.doc_line),
        (15, 18, Some(12))
    );
    assert_eq!(second.doc.as_deref(), Some("Second."));
    // The half-written function is recovered by its header, within its own lines.
    let a = symbol(&parsed, "a");
    assert_eq!((a.start_line, a.end_line), (7, 10));
    assert_eq!(symbol(&parsed, "Defaults.size").start_line, 22);
    assert_eq!(symbol(&parsed, "Clean.ok").start_line, 26);
    assert!(
        parsed.skeleton.contains("object Defaults"),
        "{}",
        parsed.skeleton
    );
    assert_covered(&parsed, text);
}

/// tree-sitter-kotlin-sg reads `@Composable ()` as an annotation with arguments, so a slot
/// parameter of an annotated function type (`content: @Composable () -> Unit`, Compose's usual
/// one) was a syntax error, 45 of the 100 Kotlin files with errors in the Long Code Arena
/// trees. The grammar is given the text with such an annotation blanked; the symbols keep it.
#[test]
fn annotated_function_types_parse() {
    let text = "@Composable\nfun Slot(\n    modifier: Modifier = Modifier,\n    icon: @Composable (() -> Unit)? = null,\n    label: @Composable (offset: Dp) -> Unit,\n    content: @Composable RowScope.() -> Unit,\n    tabs: List<@Composable () -> Unit>,\n) {\n    Row(content = content)\n}\n\nprivate val empty: @Composable (List<Int>) -> Unit = {}\n\nclass Tab(val content: @Composable () -> Unit) {\n    fun show(@Named(\"x\") id: Int, f: @Ann () -> Unit) = f()\n}\n";
    let parsed = parse_clean(text);
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Function, "Slot"),
            (SymbolKind::Class, "Tab"),
            (SymbolKind::Method, "Tab.show"),
        ]
    );
    let slot = symbol(&parsed, "Slot");
    assert_eq!((slot.start_line, slot.end_line), (1, 10));
    assert!(
        slot.signature
            .contains("icon: @Composable (() -> Unit)? = null"),
        "{}",
        slot.signature
    );
    assert!(symbol(&parsed, "Tab.show")
        .signature
        .contains("@Named(\"x\") id: Int, f: @Ann () -> Unit"));
    // A parenthesized group that is no function type keeps its annotation: the grammar reads
    // what it read before.
    // Nested, and after `=`, `as` and `is`.
    for text in [
        "val x: @Composable (@Composable () -> Unit) -> Unit = {}\n",
        "typealias Slot = @Composable () -> Unit\n\nfun f(x: Any) = x as @Composable () -> Unit\n",
        "fun g(x: Any) = x is @A () -> Unit\n",
    ] {
        parse_clean(text);
    }
    let kept = "fun f(@Named (\"x\") id: Int) = id\n";
    let language = language_for_path("a.kt").expect("Kotlin");
    let blank = language.grammar_text.expect("Kotlin's");
    assert_eq!(blank(kept), None);
    assert_eq!(
        blank("val f: @A () -> Unit = {}\n").as_deref(),
        Some("val f:    () -> Unit = {}\n")
    );
}

/// From a review of the reading by top-level declarations: a multi-line annotation lay in the
/// segment above its declaration, so an error there lost the declaration (`f`), a declaration
/// with an error lost its KDoc (`h`), and a declaration the file's tree read whole was listed
/// twice (`G`).
#[test]
fn a_multi_line_annotation_stays_with_its_declaration() {
    let parsed = parse("package p\n\nfun a() {\n    broken(\n}\n\n@Suppress(\n    \"x\"\n)\nfun f() = 1\n\n/**\n * Doc of h.\n */\n@Deprecated(\n    \"old\"\n)\nfun h() {\n    broken(\n}\n\nfun g() = 2\n");
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Function, "a"),
            (SymbolKind::Function, "f"),
            (SymbolKind::Function, "h"),
            (SymbolKind::Function, "g"),
        ]
    );
    let h = symbol(&parsed, "h");
    assert_eq!(
        (h.start_line, h.doc_line, h.doc.as_deref()),
        (15, Some(12), Some("Doc of h."))
    );
    let parsed = parse(
        "@Test(\n)\nclass G(val t: T) {\n    fun run() {\n        t.get(\n        )\n    }\n} (\n",
    );
    assert_eq!(
        symbols(&parsed),
        [(SymbolKind::Class, "G"), (SymbolKind::Method, "G.run")]
    );
}

/// From the same review: a declaration read on its own can read worse than the file's tree
/// read it (an unclosed string: `R.f` with its KDoc became a header `f`); the tree's reading
/// then stands. And an annotated header without a body was recovered a second time.
#[test]
fn a_declaration_read_alone_is_taken_only_where_it_reads_better() {
    let parsed = parse("/** Doc. */\nfun R.f(): Int =\n    g() \"\n\n/** Doc of h. */\nfun R.h(): Int {\n    return 1\n}\n");
    assert_eq!(symbol(&parsed, "R.f").doc_line, Some(1));
    let parsed = parse("@Serializable\nclass Data(\n    val a: Int\n) (\n");
    assert_eq!(symbols(&parsed), [(SymbolKind::Class, "Data")]);
}

/// wire's `Message.kt`, shortened: Kotlin Multiplatform's `actual` on a primary constructor
/// written on a line of its own. tree-sitter-kotlin-sg read the line as an error and the
/// class's members as top-level functions; with the platform modifier blanked for the grammar
/// the class keeps them, and the signature keeps the modifier.
#[test]
fn a_platform_constructor_on_its_own_line_keeps_the_class_body() {
    let text = "actual abstract class Message<M : Message<M, B>, B : Message.Builder<M, B>>\nprotected actual constructor(\n  actual val adapter: ProtoAdapter<M>,\n  unknownFields: ByteString\n) : Serializable {\n  actual abstract fun newBuilder(): B\n\n  fun withoutUnknownFields(): M = newBuilder().build()\n\n  actual abstract class Builder<M : Message<M, B>, B : Builder<M, B>> protected constructor() {\n    fun build(): M = TODO()\n  }\n}\n\nexpect class Holder\n  internal expect constructor(value: Int) {\n  fun get(): Int\n}\n";
    let parsed = parse_clean(text);
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Class, "Message"),
            (SymbolKind::Method, "Message.newBuilder"),
            (SymbolKind::Method, "Message.withoutUnknownFields"),
            (SymbolKind::Class, "Message.Builder"),
            (SymbolKind::Method, "Message.Builder.build"),
            (SymbolKind::Class, "Holder"),
            (SymbolKind::Method, "Holder.get"),
        ]
    );
    let message = symbol(&parsed, "Message");
    assert_eq!((message.start_line, message.end_line), (1, 13));
    assert!(
        message.signature.contains("protected actual constructor("),
        "{}",
        message.signature
    );
    let language = language_for_path("a.kt").expect("Kotlin");
    let blank = language.grammar_text.expect("Kotlin's");
    assert_eq!(
        blank("class A\n  protected actual constructor(x: Int)\n").as_deref(),
        Some("class A\n                   constructor(x: Int)\n")
    );
    // With an annotation among the modifiers (found by a review).
    assert_eq!(
        blank("class A<T>\n  @PublishedApi internal actual constructor(x: T)\n").as_deref(),
        Some("class A<T>\n  @PublishedApi                 constructor(x: T)\n")
    );
    // Modifiers the grammar reads as they are are kept: on the constructor's line, or an
    // annotation on a line of its own (a secondary constructor's starts there).
    assert_eq!(
        blank("class A\n  @Inject internal constructor(x: Int)\n"),
        None
    );
    assert_eq!(
        blank("class A {\n  @Suppress(\"a // b\")\n  internal constructor()\n}\n"),
        None
    );
    // An annotation's string is its own, a comment after it is not.
    assert_eq!(
        blank("class A\n  @Url(\"http://a/*\") internal // c\n  constructor(x: Int)\n").as_deref(),
        Some("class A\n  @Url(\"http://a/*\")              \n  constructor(x: Int)\n")
    );
    // `actual` anywhere else, a call of a function named `constructor`, is the file's own.
    assert_eq!(blank("actual fun f() = actual(constructor)\n"), None);
}

/// Modifiers of a primary constructor on lines of their own that span lines or hold a comment
/// (Kotlin's compiler reads them; after a newline tree-sitter-kotlin-sg takes one modifier as
/// the class header's, not several, nor one followed by a comment): the class kept only its
/// header line and its members became those of a function named `constructor`.
#[test]
fn constructor_modifiers_across_lines_or_around_a_comment_keep_the_class_body() {
    for text in [
        "class Other\n  internal /* for tests */ constructor(value: Int) {\n  fun get(): Int = 2\n}\n",
        "class Other\n  internal // for tests\n  constructor(value: Int) {\n  fun get(): Int = 2\n}\n",
        "class Other\n  internal\n  protected constructor(value: Int) {\n  fun get(): Int = 2\n}\n",
        "actual class Other\n  internal\n  actual constructor(value: Int) {\n  fun get(): Int = 2\n}\n",
        "actual class Other\n  @Suppress(\"x()\")\n  actual\n  constructor(value: Int) {\n  fun get(): Int = 2\n}\n",
        "class Other\r\n  internal /* é */\r\n  constructor(value: Int) {\r\n  fun get(): Int = 2\r\n}\r\n",
    ] {
        let parsed = parse_clean(text);
        assert_eq!(
            symbols(&parsed),
            [(SymbolKind::Class, "Other"), (SymbolKind::Method, "Other.get")],
            "{text:?}"
        );
        let other = symbol(&parsed, "Other");
        let lines = text.matches('\n').count();
        assert_eq!((other.start_line, other.end_line), (1, lines), "{text:?}");
        assert!(other.signature.contains("internal") || other.signature.contains("actual"));
    }
}

/// Found by a review: a 1.5 KB line of 520 nested `"${` made tree-sitter-kotlin-sg's scanner
/// call `abort()` (its stack of open strings is 1 KB), which ended the process. A text with
/// more string templates than the bound is not given to the grammar; it is chunked as lines.
#[test]
fn string_templates_past_the_scanners_stack_are_not_parsed() {
    let nested = format!("val x = {}\nfun after() = 1\n", "\"${".repeat(520));
    let parsed = parse(&nested);
    assert!(parsed.syntax_errors && parsed.symbols.is_empty() && !parsed.chunks.is_empty());
    let templates = |n: usize| format!("fun f() = listOf({})\n", "\"${a}\", ".repeat(n));
    let parsed = parse_clean(&templates(400));
    assert_eq!(symbols(&parsed), [(SymbolKind::Function, "f")]);
    let parsed = parse(&templates(401));
    assert!(parsed.syntax_errors && parsed.symbols.is_empty());
}

/// Found by a second review: a NUL in a string stopped tree-sitter-kotlin-sg's scanner with
/// the string left on its stack, so 600 lines of `val x = "<NUL>` aborted the process with no
/// `${` in the file. The grammar reads a space there.
#[test]
fn nul_characters_in_strings_do_not_fill_the_scanners_stack() {
    let text = format!(
        "class A {{\n  fun f() = 1\n}}\n{}",
        "val x = \"\0\n".repeat(600)
    );
    let parsed = parse(&text);
    assert_eq!(
        symbols(&parsed)[..2],
        [(SymbolKind::Class, "A"), (SymbolKind::Method, "A.f")]
    );
    let language = language_for_path("a.kt").expect("Kotlin");
    let blank = language.grammar_text.expect("Kotlin's");
    assert_eq!(
        blank("val x = \"a\0b\"\n").as_deref(),
        Some("val x = \"a b\"\n")
    );
}

/// Found by a second review: the constructor's modifiers were blanked on a line inside a
/// block comment, and the line comment blanked with them held the block comment's end.
#[test]
fn a_line_comment_holding_a_block_comments_end_is_not_blanked() {
    let text = "class A {\n  /*\n    internal // old */\n    constructor(x: Int)\n  fun a() = 1\n}\nfun g() = 2\n";
    let parsed = parse_clean(text);
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Class, "A"),
            (SymbolKind::Method, "A.constructor"),
            (SymbolKind::Method, "A.a"),
            (SymbolKind::Function, "g"),
        ]
    );
}

/// A declaration after a `}` on the same line: tree-sitter-kotlin-sg wants a line break or `;`
/// between them (Kotlin's compiler does not), and read `class C { fun f() {} fun g() {} }` as
/// a class `g`, losing `C` and `f`. A `;` for the grammar in the last blank keeps all three;
/// a `} val` inside a string or comment changes nothing.
#[test]
fn declarations_after_a_brace_on_one_line() {
    let text = "class C { fun f() {} fun g() {} }\n\nclass D {\n    val x = 1\n    fun h() {}  private fun i() {} }\n\nfun top() = \"} val s\" // } fun t\n";
    // The grammar still wants a break before a body's closing brace (`fun g() {} }`): an
    // error it recovers from with every symbol in place.
    let parsed = parse(text);
    assert_eq!(
        symbols(&parsed),
        [
            (SymbolKind::Class, "C"),
            (SymbolKind::Method, "C.f"),
            (SymbolKind::Method, "C.g"),
            (SymbolKind::Class, "D"),
            (SymbolKind::Method, "D.h"),
            (SymbolKind::Method, "D.i"),
            (SymbolKind::Function, "top"),
        ]
    );
    assert_eq!(symbol(&parsed, "D.i").signature, "private fun i()");
}
