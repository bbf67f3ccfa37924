//! Mapping what an issue mentions — paths, traceback paths, dotted module names, Java and
//! Kotlin qualified names — onto the repository's files, by whole path components so
//! `db/models/query.py` never matches `xdb/models/query.py`, and by the package declarations
//! the files actually make, so `com.foo.Bar` finds `…/com/foo/Bar.java` whatever the source
//! root and a Kotlin file whose folder does not follow its package.

use std::collections::HashMap;

/// Resolves mentions to file indices.
#[derive(Debug, Default)]
pub struct PathResolver {
    paths: Vec<String>,
    by_basename: HashMap<String, Vec<u32>>,
    /// Qualified type (and Kotlin top-level) names → the files declaring them.
    by_qualified: HashMap<String, Vec<u32>>,
    /// (package, file name) → files.
    by_package_file: HashMap<(String, String), Vec<u32>>,
    /// The most components any path has: a longer mention or module name can only match in
    /// its last this many components, so longer prefixes and suffixes are not tried (a
    /// megabyte of `a.a.a…` in an issue would otherwise cost quadratic time).
    deepest_path: usize,
    /// The most dotted parts any qualified name in `by_qualified` has.
    deepest_qualified: usize,
}

/// What a file of a language with packages declares, for [`PathResolver::with_packages`].
#[derive(Debug, Clone, Copy)]
pub struct Declared<'a> {
    /// The file's index.
    pub file: u32,
    /// Its package (`com.example.shop`).
    pub package: &'a str,
    /// Its top-level names: classes, interfaces, objects, Kotlin functions and the file
    /// facade (`ShopKt`).
    pub names: &'a [String],
}

/// A dotted name resolved to a module file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleMatch {
    /// The file index.
    pub file: u32,
    /// Whether the file is a package's `__init__.py`.
    pub is_package: bool,
    /// The dotted components after the module (`Q` in `django.db.models.Q`).
    pub rest: Vec<String>,
}

impl PathResolver {
    /// A resolver over these repository-relative paths (file `i` is the `i`-th path).
    pub fn new<'a>(paths: impl IntoIterator<Item = &'a str>) -> Self {
        let mut resolver = PathResolver::default();
        for (i, path) in paths.into_iter().enumerate() {
            let basename = path.rsplit('/').next().unwrap_or(path);
            resolver
                .by_basename
                .entry(basename.to_owned())
                .or_default()
                .push(i as u32);
            resolver.deepest_path = resolver.deepest_path.max(path.split('/').count());
            resolver.paths.push(path.to_owned());
        }
        resolver
    }

    /// Adds the package declarations of Java and Kotlin files: each top-level name qualified by
    /// its package, and each file name within its package.
    #[must_use]
    pub fn with_packages<'a>(mut self, declared: impl IntoIterator<Item = Declared<'a>>) -> Self {
        for d in declared {
            let basename = self.paths[d.file as usize]
                .rsplit('/')
                .next()
                .unwrap_or("")
                .to_owned();
            self.by_package_file
                .entry((d.package.to_owned(), basename))
                .or_default()
                .push(d.file);
            for name in d.names {
                let qualified = format!("{}.{name}", d.package);
                self.deepest_qualified = self.deepest_qualified.max(qualified.split('.').count());
                let files = self.by_qualified.entry(qualified).or_default();
                if !files.contains(&d.file) {
                    files.push(d.file);
                }
            }
        }
        self
    }

    /// The file a source path names (a mention or a stack frame's `com/foo/Bar.java`): by the
    /// package its folders spell when one file of that package has that name, else as
    /// [`resolve_path`](Self::resolve_path) does.
    pub fn resolve_source(&self, path: &str) -> Vec<u32> {
        if let Some((dirs, basename)) = path.trim_matches('/').rsplit_once('/') {
            let package = dirs.replace('/', ".");
            if let Some(files) = self.by_package_file.get(&(package, basename.to_owned())) {
                return files.clone();
            }
        }
        self.resolve_path(path)
    }

    /// The path of file `file`.
    pub fn path(&self, file: u32) -> &str {
        &self.paths[file as usize]
    }

    fn ends_with_components(path: &str, suffix: &[&str]) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        parts.len() >= suffix.len() && parts[parts.len() - suffix.len()..] == *suffix
    }

    /// Files a mentioned path refers to: the longest suffix of the mention (in whole
    /// components) that some file paths end with. A path printed under `site-packages/` or an
    /// absolute checkout path thus finds the repository file; a bare name finds every file of
    /// that name. A mention with directories must match two components or more.
    pub fn resolve_path(&self, mention: &str) -> Vec<u32> {
        let components: Vec<&str> = mention
            .split(['/', '\\'])
            .filter(|c| !c.is_empty() && *c != ".")
            .collect();
        let Some(basename) = components.last() else {
            return Vec::new();
        };
        let Some(candidates) = self.by_basename.get(*basename) else {
            return Vec::new();
        };
        // A mention with directories must match at least its last directory too: a printed
        // `site-packages/numpy/core/base.py` must not pick every `base.py` of the repository.
        let last_start = components.len().saturating_sub(2);
        let first_start = components.len().saturating_sub(self.deepest_path);
        for start in first_start.min(last_start)..=last_start {
            let suffix = &components[start..];
            let found: Vec<u32> = candidates
                .iter()
                .copied()
                .filter(|&f| Self::ends_with_components(self.path(f), suffix))
                .collect();
            if !found.is_empty() {
                return found;
            }
        }
        Vec::new()
    }

    /// The module file a dotted name refers to, trying the longest module prefix first
    /// (`a.b.c` as `a/b/c.py`, then `a/b/c/__init__.py`, then `a/b.py`, …), then the longest
    /// prefix that is a declared qualified name (`com.foo.Bar.baz` as the file declaring
    /// `com.foo.Bar`). Prefixes of one component are not tried: `np.array` or `self.x` name no
    /// module of the repository. A name declared by several files resolves to none.
    pub fn resolve_module(&self, dotted: &str) -> Option<ModuleMatch> {
        self.resolve_python_module(dotted)
            .or_else(|| self.resolve_qualified(dotted))
    }

    fn resolve_qualified(&self, dotted: &str) -> Option<ModuleMatch> {
        if self.by_qualified.is_empty() {
            return None;
        }
        let parts: Vec<&str> = dotted.split('.').collect();
        (2..=parts.len().min(self.deepest_qualified))
            .rev()
            .find_map(
                |end| match self.by_qualified.get(&parts[..end].join("."))?[..] {
                    [file] => Some(ModuleMatch {
                        file,
                        is_package: false,
                        rest: parts[end..].iter().map(|s| (*s).to_owned()).collect(),
                    }),
                    _ => None,
                },
            )
    }

    fn resolve_python_module(&self, dotted: &str) -> Option<ModuleMatch> {
        let parts: Vec<&str> = dotted.split('.').collect();
        // `a.b.c` is `a/b/c.py` or `a/b/c/__init__.py`: at most `deepest_path` parts.
        for end in (2..=parts.len().min(self.deepest_path)).rev() {
            let module = parts[..end].join("/");
            for (candidate, is_package) in [
                (format!("{module}.py"), false),
                (format!("{module}/__init__.py"), true),
            ] {
                let found = self.resolve_exact_suffix(&candidate);
                if let [file] = found[..] {
                    let rest = parts[end..].iter().map(|s| (*s).to_owned()).collect();
                    return Some(ModuleMatch {
                        file,
                        is_package,
                        rest,
                    });
                }
            }
        }
        None
    }

    /// Files whose path ends with all of `suffix`'s components.
    fn resolve_exact_suffix(&self, suffix: &str) -> Vec<u32> {
        let components: Vec<&str> = suffix.split('/').collect();
        let basename = components.last().copied().unwrap_or_default();
        self.by_basename
            .get(basename)
            .map_or_else(Vec::new, |candidates| {
                candidates
                    .iter()
                    .copied()
                    .filter(|&f| Self::ends_with_components(self.path(f), &components))
                    .collect()
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolver() -> PathResolver {
        PathResolver::new([
            "django/db/models/query.py",
            "django/db/models/__init__.py",
            "django/db/models/sql/query.py",
            "django/contrib/admin/utils.py",
            "django/utils/__init__.py",
            "src/_pytest/fixtures.py",
        ])
    }

    #[test]
    fn resolves_paths_by_longest_component_suffix() {
        let r = resolver();
        assert_eq!(r.resolve_path("django/db/models/query.py"), [0]);
        assert_eq!(
            r.resolve_path("/venv/lib/site-packages/django/db/models/sql/query.py"),
            [2]
        );
        assert_eq!(r.resolve_path("models/query.py"), [0]);
        assert_eq!(r.resolve_path("query.py"), [0, 2]);
        assert_eq!(
            r.resolve_path("xdb/models/query.py"),
            [0],
            "falls back to the longest suffix that exists"
        );
        assert!(r.resolve_path("setup.py").is_empty());
        assert!(r.resolve_path("").is_empty());
    }

    #[test]
    fn resolves_modules_longest_prefix_first() {
        let r = resolver();
        let m = r
            .resolve_module("django.contrib.admin.utils.quote")
            .unwrap();
        assert_eq!(
            (m.file, m.is_package, m.rest),
            (3, false, vec!["quote".to_owned()])
        );
        let m = r.resolve_module("django.db.models.Q").unwrap();
        assert_eq!((m.file, m.is_package), (1, true));
        assert_eq!(
            r.resolve_module("_pytest.fixtures.FixtureDef")
                .unwrap()
                .file,
            5
        );
        assert!(r.resolve_module("np.array").is_none());
        assert!(r.resolve_module("self.value").is_none());
    }

    #[test]
    fn resolves_qualified_names_by_declared_packages() {
        let paths = [
            "core/src/main/java/com/foo/Bar.java",
            "lib/src/commonMain/kotlin/Flow.kt",
            "a/src/jvmMain/kotlin/com/foo/Platform.kt",
            "b/src/jsMain/kotlin/com/foo/Platform.kt",
        ];
        let names: Vec<Vec<String>> = vec![
            vec!["Bar".into()],
            vec!["Flow".into(), "FlowKt".into(), "collect".into()],
            vec!["PlatformKt".into()],
            vec!["PlatformKt".into()],
        ];
        let packages = ["com.foo", "kotlinx.flow", "com.foo", "com.foo"];
        let r = PathResolver::new(paths).with_packages((0..4).map(|i| Declared {
            file: i as u32,
            package: packages[i],
            names: &names[i],
        }));
        let m = r.resolve_module("com.foo.Bar.baz").unwrap();
        assert_eq!((m.file, m.rest), (0, vec!["baz".to_owned()]));
        assert_eq!(r.resolve_module("kotlinx.flow.collect").unwrap().file, 1);
        assert!(
            r.resolve_module("com.foo.PlatformKt").is_none(),
            "two files declare it"
        );
        assert_eq!(
            r.resolve_source("kotlinx/flow/Flow.kt"),
            [1],
            "package, not folders"
        );
        assert_eq!(r.resolve_source("com/foo/Bar.java"), [0]);
        assert_eq!(r.resolve_source("com/foo/Platform.kt"), [2, 3]);
        assert!(r.resolve_source("org/other/Bar.java").is_empty());
    }
}
