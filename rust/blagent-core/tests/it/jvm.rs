//! Java and Kotlin end to end on a small mixed repository written by the test: test sources
//! left out, JVM stack frames and qualified names mapped to files by the packages the files
//! declare (not by their folders), symbols and entities qualified.

use std::path::Path;

use blagent_core::interface::{Granularity, LocalizeRequest};
use blagent_core::Localizer;

fn write_repo(root: &Path) {
    let files = [
        (
            "core/src/main/java/com/acme/shop/Cart.java",
            "package com.acme.shop;\n\nimport java.util.List;\n\n/** A cart. */\npublic class Cart {\n    \
             private List<Integer> items;\n\n    public int total() {\n        return items.size();\n    }\n}\n",
        ),
        (
            "core/src/main/java/com/acme/shop/Pricing.java",
            "package com.acme.shop;\n\npublic final class Pricing {\n    public static int apply(int cents, int percent) {\n        \
             return cents - cents * percent;\n    }\n}\n",
        ),
        (
            "core/src/test/java/com/acme/shop/CartTest.java",
            "package com.acme.shop;\n\nclass CartTest {\n    void total() { new Cart().total(); }\n}\n",
        ),
        (
            "app/src/main/kotlin/screens/Screens.kt",
            "package com.acme.ui\n\nfun render(cart: Cart): String {\n    return cart.total().toString()\n}\n\n\
             fun String.shout(): String = uppercase()\n",
        ),
        (
            "app/src/main/kotlin/screens/Other.kt",
            "package com.acme.ui\n\nobject Theme {\n    val dark = true\n}\n",
        ),
        ("tools/release.py", "def release():\n    return 'render the screens'\n"),
    ];
    for (rel, text) in files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
}

#[test]
fn a_kotlin_frame_finds_its_file_by_package_even_off_its_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_repo(dir.path());
    let issue = "Crash when showing the screen\n\n```\njava.lang.NullPointerException\n\
                 \tat com.acme.ui.ScreensKt.render(Screens.kt:4)\n\tat android.app.Activity.onCreate(Activity.java:10)\n```\n";
    let mut request = LocalizeRequest::new("jvm-1", dir.path(), issue);
    request.granularity = Granularity::Function;
    let result = Localizer::default().localize(&request).expect("localizes");
    assert_eq!(result.paths()[0], "app/src/main/kotlin/screens/Screens.kt");
    assert!(result.files[0].signals.contains_key("stack_frame"));
    assert!(
        !result.paths().iter().any(|p| p.contains("src/test/")),
        "test sources are left out: {:?}",
        result.paths()
    );
    let entities: Vec<&str> = result
        .entities
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    assert!(
        entities.contains(&"app/src/main/kotlin/screens/Screens.kt::render"),
        "{entities:?}"
    );
    assert!(
        entities.contains(&"app/src/main/kotlin/screens/Screens.kt::String.shout"),
        "{entities:?}"
    );
}

#[test]
fn a_qualified_name_finds_the_declaring_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_repo(dir.path());
    let issue = "Wrong discount\n\nCalling com.acme.shop.Pricing.apply(100, 10) returns -900 instead of 90.\n";
    let request = LocalizeRequest::new("jvm-2", dir.path(), issue);
    let result = Localizer::default().localize(&request).expect("localizes");
    assert_eq!(
        result.paths()[0],
        "core/src/main/java/com/acme/shop/Pricing.java"
    );
    assert!(result.files[0].signals.contains_key("module_mention"));
}

#[test]
fn a_named_build_module_narrows_the_ranking() {
    let dir = tempfile::tempdir().expect("tempdir");
    for module in ["billing-core", "billing-ui"] {
        let src = dir
            .path()
            .join(module)
            .join("src/main/java/com/acme/billing");
        std::fs::create_dir_all(&src).expect("mkdir");
        std::fs::write(
            dir.path().join(module).join("build.gradle.kts"),
            "plugins {}\n",
        )
        .expect("write");
        std::fs::write(
            src.join("Invoice.java"),
            "package com.acme.billing;\n\nclass Invoice {\n    int amount() { return 0; }\n}\n",
        )
        .expect("write");
    }
    let issue = "Invoice amount is zero in billing-ui\n\nThe invoice shows an amount of 0.\n";
    let result = Localizer::default()
        .localize(&LocalizeRequest::new("jvm-3", dir.path(), issue))
        .expect("localizes");
    assert_eq!(
        result.paths()[0],
        "billing-ui/src/main/java/com/acme/billing/Invoice.java"
    );
    assert!(result.files[0].signals.contains_key("module_mention"));
    assert!(!result.files[1].signals.contains_key("module_mention"));
}
