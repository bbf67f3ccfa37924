//! Criterion benches of the hot paths: tokenizing, BM25 indexing and scoring, chunking.
//! Whole-repository figures (index time, memory, query latency) come from
//! `bench/index_bench.py`.

#![allow(missing_docs)]

use std::fmt::Write as _;
use std::hint::black_box;

use blagent_core::chunk::{parse_file, ChunkOptions};
use blagent_core::index::{tokenize, Bm25, Bm25Params};
use blagent_core::repo::{language_for_path, SourceFile};
use criterion::{criterion_group, criterion_main, Criterion};

/// A synthetic module of `n` classes with a few methods each.
fn module(n: usize) -> String {
    let mut text = String::from("import os\nfrom typing import Optional\n\n");
    for i in 0..n {
        let _ = write!(
            text,
            "class Handler{i}(BaseHandler):\n    \"\"\"Handle request kind {i}.\"\"\"\n\n    def get_queryset(self, request, pk: Optional[int] = None):\n        qs = self.model.objects.filter(owner=request.user, kind={i})\n        return qs.order_by('-created_at')\n\n    def validate_payload(self, payload):\n        if 'name' not in payload:\n            raise ValueError('missing name for handler {i}')\n        return payload\n\n"
        );
    }
    text
}

fn benches(c: &mut Criterion) {
    let text = module(200);
    c.bench_function("tokenize 200-class module", |b| {
        b.iter(|| tokenize(black_box(&text)));
    });
    let docs: Vec<String> = (0..500)
        .map(|i| module(5).replace("Handler", &format!("H{i}x")))
        .collect();
    c.bench_function("bm25 build 500 docs", |b| {
        b.iter(|| Bm25::build(docs.iter().map(String::as_str), Bm25Params::default()));
    });
    let index = Bm25::build(docs.iter().map(String::as_str), Bm25Params::default());
    c.bench_function("bm25 query", |b| {
        b.iter(|| {
            index.score(black_box(
                "get_queryset raises ValueError missing name for handler",
            ))
        });
    });
    let python = language_for_path("x.py").expect("python");
    let file = SourceFile::new("pkg/handlers.py".to_owned(), python, text, false);
    c.bench_function("parse and chunk 200-class module", |b| {
        b.iter(|| parse_file(black_box(&file), &ChunkOptions::default()));
    });
}

criterion_group!(core, benches);
criterion_main!(core);
