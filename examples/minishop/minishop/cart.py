"""Shopping carts."""

from dataclasses import dataclass, field
from decimal import Decimal

from .inventory import Inventory
from .pricing import Coupon, apply_coupon


@dataclass
class LineItem:
    """A product and how many of it."""

    sku: str
    unit_price: Decimal
    quantity: int = 1

    @property
    def subtotal(self) -> Decimal:
        return self.unit_price * self.quantity


@dataclass
class Cart:
    """The items a customer is about to buy."""

    items: list = field(default_factory=list)
    coupon: "Coupon | None" = None

    def add(self, item: LineItem, inventory: Inventory) -> None:
        """Add an item after checking stock."""
        inventory.reserve(item.sku, item.quantity)
        self.items.append(item)

    def subtotal(self) -> Decimal:
        return sum((item.subtotal for item in self.items), Decimal("0"))

    def total(self) -> Decimal:
        """The amount to pay, after the coupon."""
        amount = self.subtotal()
        if self.coupon is not None:
            amount = apply_coupon(amount, self.coupon)
        return amount.quantize(Decimal("0.01"))
