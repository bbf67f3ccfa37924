"""Stock keeping."""


class OutOfStock(Exception):
    """Raised when a reservation exceeds the stock."""


class Inventory:
    """Units on hand per SKU."""

    def __init__(self, stock=None):
        self._stock = dict(stock or {})

    def reserve(self, sku: str, quantity: int) -> None:
        """Take `quantity` units of `sku` out of stock."""
        available = self._stock.get(sku, 0)
        if quantity > available:
            raise OutOfStock(f"only {available} of {sku} left")
        self._stock[sku] = available - quantity

    def restock(self, sku: str, quantity: int) -> None:
        self._stock[sku] = self._stock.get(sku, 0) + quantity
