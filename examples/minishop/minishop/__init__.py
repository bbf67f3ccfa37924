"""minishop: a tiny shop used to demonstrate blagent."""

from .cart import Cart, LineItem
from .pricing import apply_coupon, Coupon

__all__ = ["Cart", "Coupon", "LineItem", "apply_coupon"]
