"""What a planned stack bills per hour: the parts, each priced from the catalog, and the total.

The parts are counted by each target from what the program registers (the resources' types and
inputs, as plan.json lists them) and from the plan (accelerator nodes): `Target.cost_parts`
(components/program/contract.py; aws_eks/cost_parts.py, ctyun_hcc/cost_parts.py), built with
`part` here so every part carries the catalog's price, source and date.

Each part is priced for the stack's region (`prices.price(key, region)`: a figure read for
another region leaves the part unknown) and parts priced per GB (the S3 mirror) count the GB
the stack stores (`stored_gb`: the checkpoint's size).

The total (`usd_per_hour`) is stated only when every part has a price, or when the user gives a
contracted price for the whole stack (`kimi-k3:usdPerHour`); otherwise it is None and
`known_usd_per_hour` is the floor the priced parts make, with the unpriced parts listed. Pure.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Dict, Mapping, Optional, Sequence

from .prices import price

CONTRACT_KEY = "kimi-k3:usdPerHour"
CATALOG = "components/cost/prices.py"


@dataclass(frozen=True)
class Part:
    key: str
    what: str
    quantity: int
    unit: str
    unit_usd_per_hour: Optional[float]
    source: str
    read: str
    note: str = ""

    @property
    def usd_per_hour(self) -> Optional[float]:
        if self.unit_usd_per_hour is None:
            return None
        return round(self.unit_usd_per_hour * self.quantity, 6)

    def to_dict(self) -> Dict[str, Any]:
        return {**asdict(self), "usd_per_hour": self.usd_per_hour}


def part(key: str, quantity: int, note: str = "") -> Part:
    """A part as a target counts it: `note` says why this quantity; `for_stack` prices it."""
    p = price(key)
    return Part(key, p.what, int(quantity), p.unit, None, p.source, p.read, note)


def for_stack(p: Part, region: Optional[str], stored_gb: Optional[int]) -> Part:
    """`p` priced for the stack's region, with the stored GB as the quantity of a per-GB price
    (unknown, saying so, when the size is not known)."""
    pr = price(p.key, region)
    if pr.unit == "GB-hour":
        if not stored_gb or stored_gb <= 0:
            return replace(p, unit=pr.unit, unit_usd_per_hour=None, source=pr.source, read="",
                           note="; ".join(x for x in (p.note, "the stored size is not known") if x))
        p = replace(p, quantity=int(stored_gb), note="; ".join(
            x for x in (p.note, f"{int(stored_gb):,} GB stored") if x))
    return replace(p, unit=pr.unit, unit_usd_per_hour=pr.usd_per_hour, source=pr.source, read=pr.read,
                   note="; ".join(x for x in (p.note, pr.note) if x))


def count(resources: Sequence[Mapping[str, Any]], rtype: str) -> int:
    return sum(1 for r in resources if r.get("type") == rtype)


def inputs_of(r: Mapping[str, Any]) -> Mapping[str, Any]:
    i = r.get("inputs")
    return i if isinstance(i, Mapping) else {}


def positive_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0




def check_contract(value: Optional[float]) -> Optional[float]:
    """A contracted price must be a finite, positive number of USD per hour (ValueError if not)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value <= 0:
        raise ValueError(f"{CONTRACT_KEY} {value!r} is not a price; give the stack's contracted "
                         "USD per hour as a positive number, e.g. 98.5")
    return float(value)


def estimate(target: str, resources: Sequence[Mapping[str, Any]], node_shape: str, nodes: int,
             contract_usd_per_hour: Optional[float] = None, *, region: Optional[str] = None,
             stored_gb: Optional[int] = None) -> Dict[str, Any]:
    """plan.json's `cost`: {usd_per_hour, known_usd_per_hour, unknown, parts, source, region, ...}.

    The parts are the target's (contract.py `Target.cost_parts`: what it registers that bills),
    priced for `region` (None: not known, so region-bound figures stay unknown);
    KeyError for a target that is not registered."""
    from ..program.registry import load_target  # the targets import this module

    contract = check_contract(contract_usd_per_hour)
    parts = [for_stack(p, region, stored_gb)
             for p in load_target(target).cost_parts(resources, node_shape, nodes)]
    known = round(sum(p.usd_per_hour for p in parts if p.usd_per_hour is not None), 6)
    unknown = [p.key for p in parts if p.usd_per_hour is None]
    if contract is not None:
        total, source = contract, f"contracted price ({CONTRACT_KEY})"
    elif not unknown:
        total, source = known, f"list prices ({CATALOG}), each part with its source and date"
    else:
        total, source = None, (f"list prices ({CATALOG}); no public price for {', '.join(unknown)}: "
                               f"set {CONTRACT_KEY} to your contracted price")
    return {"usd_per_hour": total, "known_usd_per_hour": known, "unknown": unknown,
            "contract_usd_per_hour": contract, "source": source, "region": region,
            "parts": [p.to_dict() for p in parts]}


def _count(p: Mapping[str, Any]) -> str:
    """`what xN`, or `what (N GB)` for a part priced per GB."""
    return f"{p['what']} ({p['quantity']:,} GB)" if p["unit"] == "GB-hour" else f"{p['what']} x{p['quantity']}"


def summary_line(cost: Mapping[str, Any]) -> str:
    """One line for the plan's summary."""
    if cost.get("usd_per_hour") is not None:
        return f"${cost['usd_per_hour']:,.2f}/h ({cost['source']})"
    priced = [p for p in cost["parts"] if p["usd_per_hour"] is not None]
    floor = (f"at least ${cost['known_usd_per_hour']:,.2f}/h known ("
             + ", ".join(_count(p) for p in priced) + "); ") if priced else ""
    region = cost.get("region")
    missing = ", ".join(_count(p)
                        + (f" (a figure for other regions, none for {region})"
                           if region and p["source"] == f"no figure read for {region}" else "")
                        for p in cost["parts"] if p["usd_per_hour"] is None)
    return f"unknown: {floor}no public price for {missing}; set {CONTRACT_KEY} to your contracted price"
