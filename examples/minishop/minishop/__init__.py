"""minishop: a tiny shop used to demonstrate blagent."""

from .cart import Cart, LineItem
from .pricing import Coupon, apply_coupon

__all__ = ["Cart", "Coupon", "LineItem", "apply_coupon"]
