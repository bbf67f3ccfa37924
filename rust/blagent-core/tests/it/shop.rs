//! The three-file shop repository several tests localize in.

use std::path::Path;

/// Writes `shop/pricing.py` (`apply_discount`), `shop/cart.py` (`Cart.total`) and
/// `shop/inventory.py` (`Inventory.reserve`) under `root`.
pub fn write_shop(root: &Path) {
    for (rel, text) in [
        (
            "shop/pricing.py",
            "def apply_discount(total, percent):\n    return total - total * percent\n",
        ),
        (
            "shop/cart.py",
            "class Cart:\n    def total(self):\n        return 0\n",
        ),
        (
            "shop/inventory.py",
            "class Inventory:\n    def reserve(self, sku):\n        return sku\n",
        ),
    ] {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
}
