"""Command line: price a cart from a JSON file."""

import argparse
import json
from decimal import Decimal

from .cart import Cart, LineItem
from .inventory import Inventory
from .pricing import Coupon


def main(argv=None):
    parser = argparse.ArgumentParser(prog="minishop")
    parser.add_argument("cart_file")
    parser.add_argument("--coupon-percent", type=Decimal, default=Decimal("0"))
    args = parser.parse_args(argv)
    with open(args.cart_file) as fh:
        data = json.load(fh)
    inventory = Inventory({row["sku"]: row["quantity"] for row in data})
    cart = Cart(coupon=Coupon("CLI", percent=args.coupon_percent))
    for row in data:
        cart.add(LineItem(row["sku"], Decimal(row["price"]), row["quantity"]), inventory)
    print(cart.total())
