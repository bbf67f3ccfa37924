"""Coupons and discounts."""

from dataclasses import dataclass
from decimal import Decimal


class CouponError(ValueError):
    """A coupon that cannot be applied."""


@dataclass(frozen=True)
class Coupon:
    """A discount: `percent` off, or `amount` off, never both."""

    code: str
    percent: Decimal = Decimal("0")
    amount: Decimal = Decimal("0")
    minimum_spend: Decimal = Decimal("0")


def apply_coupon(total: Decimal, coupon: Coupon) -> Decimal:
    """Return `total` after applying `coupon`."""
    if total < coupon.minimum_spend:
        raise CouponError(f"coupon {coupon.code} needs a minimum spend of {coupon.minimum_spend}")
    if coupon.percent and coupon.amount:
        raise CouponError("a coupon cannot combine a percentage and a fixed amount")
    discounted = total - total * coupon.percent
    discounted -= coupon.amount
    return discounted


def best_coupon(total: Decimal, coupons: list) -> "Coupon | None":
    """The coupon that leaves the lowest total."""
    usable = [c for c in coupons if total >= c.minimum_spend]
    return min(usable, key=lambda c: apply_coupon(total, c), default=None)
