from decimal import Decimal

from minishop import Cart, LineItem
from minishop.inventory import Inventory


def test_total_without_coupon():
    cart = Cart()
    cart.add(LineItem("A", Decimal("2.50"), 2), Inventory({"A": 5}))
    assert cart.total() == Decimal("5.00")
