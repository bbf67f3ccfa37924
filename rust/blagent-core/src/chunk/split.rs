//! The chunking algorithm: AST units, greedy grouping of small siblings, recursive splitting of
//! large constructs at their children's statement boundaries, line windows only over regions
//! the parser could not recover.

use std::sync::Arc;

use tree_sitter::Node;

use super::symbols::MAX_NESTING;
use super::syntax::{body_start, children, definition_body, definition_name, qualified_name};
use super::{Chunk, ChunkKind, ChunkOptions, LineIndex};
use crate::repo::{DocStyle, Language, SourceFile};

/// A run of siblings waiting to become one chunk: `[start, end)`, and whether it holds any
/// statement yet (a group holding only a header, like `class A(B):`, does not).
#[derive(Clone, Copy)]
struct Group {
    start: usize,
    end: usize,
    has_content: bool,
}

struct Splitter<'a> {
    source: &'a str,
    /// The file's path, shared by its chunks.
    path: Arc<str>,
    language: &'static Language,
    options: &'a ChunkOptions,
    lines: LineIndex,
    chunks: Vec<Chunk>,
    /// How many splits enclose the current one.
    depth: usize,
    /// Line ranges left whole because they nest deeper than [`MAX_NESTING`].
    too_deep: Vec<(usize, usize)>,
}

/// Chunks a parsed file; also returns the line ranges kept as one chunk because splitting them
/// would nest deeper than [`MAX_NESTING`].
pub(super) fn chunk_tree(
    root: Node<'_>,
    file: &SourceFile,
    options: &ChunkOptions,
) -> (Vec<Chunk>, Vec<(usize, usize)>) {
    let mut splitter = Splitter {
        source: &file.text,
        path: Arc::from(file.path.as_str()),
        language: file.language,
        options,
        lines: LineIndex::new(&file.text),
        chunks: Vec::new(),
        depth: 0,
        too_deep: Vec::new(),
    };
    let top = children(file.language, root);
    splitter.split(&top, None, None, ChunkKind::Module);
    if file.language.braces {
        join_closing_text(&mut splitter.chunks, &file.text, &splitter.lines);
    }
    (splitter.chunks, splitter.too_deep)
}

/// Text between two chunks that is more than whitespace (a closing `}`, `} else {`, `});`)
/// joins the chunk before it, so every line belongs to a chunk.
fn join_closing_text(chunks: &mut [Chunk], source: &str, lines: &LineIndex) {
    for i in 0..chunks.len() {
        let next = chunks.get(i + 1).map_or(source.len(), |c| c.start_byte);
        let chunk = &mut chunks[i];
        let gap = &source[chunk.end_byte..next.max(chunk.end_byte)];
        let text = gap.trim_end().len();
        if text > 0 && !gap.trim().is_empty() {
            chunk.end_byte += text;
            chunk.end_line = lines.line(chunk.end_byte - 1);
        }
    }
}

/// Line windows over `[start, end)` of `source`.
pub(super) fn line_windows(
    path: &str,
    source: &str,
    start: usize,
    end: usize,
    options: &ChunkOptions,
) -> Vec<Chunk> {
    let lines = LineIndex::new(source);
    let mut chunks = Vec::new();
    push_windows(
        &mut chunks,
        &Arc::from(path),
        source,
        &lines,
        start,
        end,
        options.window_lines,
    );
    chunks
}

fn push_windows(
    chunks: &mut Vec<Chunk>,
    path: &Arc<str>,
    source: &str,
    lines: &LineIndex,
    start: usize,
    end: usize,
    window_lines: usize,
) {
    let mut begin = start;
    while begin < end {
        let mut stop = begin;
        for _ in 0..window_lines.max(1) {
            if let Some(i) = source[stop..end].find('\n') {
                stop += i + 1;
            } else {
                stop = end;
                break;
            }
        }
        if !source[begin..stop].trim().is_empty() {
            chunks.push(Chunk {
                path: Arc::clone(path),
                start_line: lines.line(begin),
                end_line: lines.line(stop.saturating_sub(1).max(begin)),
                start_byte: begin,
                end_byte: stop,
                symbol: None,
                kind: ChunkKind::Window,
            });
        }
        begin = stop;
    }
}

impl Splitter<'_> {
    /// The definition inside `node` (itself, or the one a decorator wraps), if it is one.
    fn definition<'t>(&self, node: Node<'t>) -> Option<Node<'t>> {
        let kind = node.kind();
        if Some(kind) == self.language.decorated_kind {
            return node.child_by_field_name("definition");
        }
        let lang = self.language;
        (lang.class_kinds.contains(&kind) || lang.function_kinds.contains(&kind)).then_some(node)
    }

    /// Where a chunk starting at `node` begins: the start of its line when only indentation
    /// precedes it, so chunks keep their first line's indentation. Read backwards from
    /// `offset`, so the many statements of one long line do not each read its indentation
    /// (a million spaces before 100,000 statements took 79 s).
    fn chunk_start(&self, offset: usize) -> usize {
        let line_start = self.lines.line_start(offset);
        if self.source[line_start..offset]
            .chars()
            .rev()
            .all(char::is_whitespace)
        {
            line_start
        } else {
            offset
        }
    }

    fn emit(&mut self, start: usize, end: usize, symbol: Option<&str>, kind: ChunkKind) {
        if self.source[start..end].trim().is_empty() {
            return;
        }
        self.chunks.push(Chunk {
            path: Arc::clone(&self.path),
            start_line: self.lines.line(start),
            end_line: self.lines.line(end.saturating_sub(1).max(start)),
            start_byte: start,
            end_byte: end,
            symbol: symbol.map(str::to_owned),
            kind,
        });
    }

    fn flush(&mut self, group: &mut Option<Group>, symbol: Option<&str>, kind: ChunkKind) {
        if let Some(g) = group.take() {
            self.emit(g.start, g.end, symbol, kind);
        }
    }

    /// Groups `children` into chunks of at most the budget. `header` is text that belongs in
    /// front of the first chunk (a class or function header); definitions become their own
    /// chunks; an oversized compound statement is split recursively.
    fn split(
        &mut self,
        children: &[Node<'_>],
        header: Option<Group>,
        scope: Option<&str>,
        kind: ChunkKind,
    ) {
        if self.depth >= MAX_NESTING {
            // Splitting recurses once per level: past the bound the rest stays one chunk.
            let start = header.map_or_else(
                || {
                    children
                        .first()
                        .map_or(0, |c| self.chunk_start(c.start_byte()))
                },
                |h| h.start,
            );
            let end = children.last().map_or(start, Node::end_byte);
            if end > start {
                self.emit(start, end, scope, kind);
                let lines = (self.lines.line(start), self.lines.line(end - 1));
                self.too_deep.push(lines);
            }
            return;
        }
        self.depth += 1;
        self.split_level(children, header, scope, kind);
        self.depth -= 1;
    }

    fn split_level(
        &mut self,
        children: &[Node<'_>],
        header: Option<Group>,
        scope: Option<&str>,
        kind: ChunkKind,
    ) {
        let max = self.options.max_bytes;
        let mut group = header;
        // Where the doc comments leading the next definition start, once seen.
        let mut lead: Option<usize> = None;
        let leading = self.leading_comments(children);
        for (i, &child) in children.iter().enumerate() {
            if let Some(def) = self.definition(child) {
                self.flush(&mut group, scope, kind);
                self.split_definition(child, def, scope, lead.take());
                continue;
            }
            if leading[i] {
                lead.get_or_insert(self.chunk_start(child.start_byte()));
                continue;
            }
            let child_start = self.chunk_start(child.start_byte());
            if let Some(g) = group.as_mut() {
                if child.end_byte() - g.start <= max {
                    g.end = child.end_byte();
                    g.has_content = true;
                    continue;
                }
            }
            let oversized = child.end_byte() - child_start > max;
            if oversized && self.is_splittable(child) {
                // Keep a bare header (e.g. `def f():`) in front of the first piece.
                let prefix = match group {
                    Some(g) if !g.has_content => Some(g.start),
                    _ => {
                        self.flush(&mut group, scope, kind);
                        None
                    }
                };
                group = None;
                self.split_compound(child, prefix.unwrap_or(child_start), scope, kind);
            } else if oversized && child.is_error() {
                self.flush(&mut group, scope, kind);
                let (start, end) = (child_start, child.end_byte());
                push_windows(
                    &mut self.chunks,
                    &self.path,
                    self.source,
                    &self.lines,
                    start,
                    end,
                    self.options.window_lines,
                );
            } else {
                match group {
                    Some(g) if !g.has_content => {
                        group = Some(Group {
                            start: g.start,
                            end: child.end_byte(),
                            has_content: true,
                        });
                    }
                    _ => {
                        self.flush(&mut group, scope, kind);
                        group = Some(Group {
                            start: child_start,
                            end: child.end_byte(),
                            has_content: true,
                        });
                    }
                }
            }
        }
        self.flush(&mut group, scope, kind);
    }

    /// For each of `children`, whether it is a comment in a run of comments right before a
    /// definition, in a language that documents definitions with leading comments (Javadoc,
    /// KDoc): the run then belongs to the definition's chunk. One pass from the end, so a run
    /// of comments is read once, not once per comment (200,000 comment lines took 301 s).
    fn leading_comments(&self, children: &[Node<'_>]) -> Vec<bool> {
        let lang = self.language;
        let mut leading = vec![false; children.len()];
        if lang.doc_style != DocStyle::LeadingComment {
            return leading;
        }
        // Whether the first child after the current one that is not a comment is a definition.
        let mut before_definition = false;
        for (i, child) in children.iter().enumerate().rev() {
            if lang.comment_kinds.contains(&child.kind()) {
                leading[i] = before_definition;
            } else {
                before_definition = self.definition(*child).is_some();
            }
        }
        leading
    }

    fn is_block(&self, node: Node<'_>) -> bool {
        self.language.block_kinds.contains(&node.kind())
    }

    /// Compound statements (`if`, `for`, `try`, …, their clauses and blocks, a Kotlin call's
    /// trailing lambda) can be split at their children's statement boundaries; anything else
    /// stays whole.
    fn is_splittable(&self, node: Node<'_>) -> bool {
        self.is_block(node)
            || node.kind().ends_with("_clause")
            || children(self.language, node)
                .iter()
                .any(|c| self.is_block(*c))
    }

    /// Splits a compound statement: its text up to its first block child is a header for the
    /// first piece; blocks and clauses are split in turn.
    fn split_compound(
        &mut self,
        node: Node<'_>,
        start: usize,
        scope: Option<&str>,
        kind: ChunkKind,
    ) {
        let own = [node];
        let node_children = children(self.language, node);
        let first_part = node_children
            .iter()
            .position(|c| self.is_block(*c) || c.kind().ends_with("_clause"));
        let (header_end, rest) = if self.is_block(node) {
            // A body split on its own: its statements are the units.
            (start, &own[..])
        } else {
            let header_end = match first_part {
                Some(i) if i > 0 => node_children[i - 1].end_byte(),
                // The block is the first child (`else:`, `try:`, `finally:`): the keyword
                // before it is the header.
                Some(0) => node_children[0].start_byte().max(start),
                _ => start.max(node.start_byte()),
            };
            (
                header_end,
                &node_children[first_part.unwrap_or(node_children.len())..],
            )
        };
        let header = Group {
            start,
            end: header_end.max(start),
            has_content: false,
        };
        let mut units = Vec::new();
        for part in rest {
            if self.is_block(*part) {
                units.extend(children(self.language, *part));
            } else {
                units.push(*part);
            }
        }
        if units.is_empty() {
            self.emit(start, node.end_byte(), scope, kind);
        } else {
            self.split(&units, Some(header), scope, kind);
        }
    }

    /// A class or function (with its decorators in `outer`, its doc comments from `lead`):
    /// one chunk when it fits, else its header leads the first piece of its body.
    fn split_definition(
        &mut self,
        outer: Node<'_>,
        def: Node<'_>,
        scope: Option<&str>,
        lead: Option<usize>,
    ) {
        let name = match definition_name(self.language, def, self.source) {
            Some((name, Some(receiver))) => format!("{receiver}.{name}"),
            Some((name, None)) => name,
            None => "<anonymous>".to_owned(),
        };
        let qualified = qualified_name(scope, &name);
        let is_class = self.language.class_kinds.contains(&def.kind());
        let start = lead.unwrap_or_else(|| self.chunk_start(outer.start_byte()));
        let body = definition_body(self.language, def);
        let fits = outer.end_byte() - start <= self.options.max_bytes;
        let Some(body) = body.filter(|_| !fits) else {
            let kind = if is_class {
                ChunkKind::Class
            } else {
                ChunkKind::Function
            };
            self.emit(start, outer.end_byte(), Some(&qualified), kind);
            return;
        };
        let kind = if is_class {
            ChunkKind::ClassBody
        } else {
            ChunkKind::Fragment
        };
        let header = Group {
            start,
            end: body_start(def, Some(body)).unwrap_or(body).start_byte(),
            has_content: false,
        };
        let units = children(self.language, body);
        self.split(&units, Some(header), Some(&qualified), kind);
    }
}
