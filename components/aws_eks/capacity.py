"""EC2 Capacity Blocks: adopt a reservation, or choose and buy an offering within a fee guard.

Three layers, kept apart:
- pure choice and checks on AWS's documented response shapes (`Offering`, `Block`,
  `choose_offering`, `fee_guard`, `check_block`, `scaling_times`): no I/O, unit-tested;
- thin boto3 calls (`describe_offerings`, `describe_block`, `purchase`) taking a client, so tests
  drive them through botocore's Stubber against the real EC2 service model;
- `CapacityBlockProvider`, a Pulumi dynamic provider that runs them at deploy time. It holds no
  client or credentials (it is pickled into state); it builds a client per call from the ambient
  AWS credentials and its own timeouts.

A purchased block cannot be cancelled: `delete` only forgets it (it says so). Blocks end at
11:30 UTC and AWS starts terminating instances 30 minutes before the end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, Iterable, List, Optional, Sequence

import pulumi
from pulumi.dynamic import ResourceProvider

from ..inference.errors import ConfigError

#: AWS terminates a block's instances this long before its end
TERMINATION_LEAD = timedelta(minutes=30)
#: kimi-k3 scales the node group to 0 this long before the end (vLLM drains before AWS stops it)
SCALE_DOWN_LEAD = timedelta(minutes=60)
USABLE_STATES = ("payment-pending", "scheduled", "active")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def _utc(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc) if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(timezone.utc)


def fmt(t: datetime) -> str:
    return _utc(t).strftime(TIME_FORMAT)


@dataclass(frozen=True)
class Offering:
    offering_id: str
    instance_type: str
    availability_zone: str
    instance_count: int
    start: datetime
    end: datetime
    duration_hours: int
    upfront_fee_usd: float
    currency: str = "USD"

    @classmethod
    def from_api(cls, d: dict) -> "Offering":
        return cls(d["CapacityBlockOfferingId"], d["InstanceType"], d["AvailabilityZone"],
                   int(d["InstanceCount"]), _utc(d["StartDate"]), _utc(d["EndDate"]),
                   int(d["CapacityBlockDurationHours"]), float(d["UpfrontFee"]),
                   d.get("CurrencyCode", "USD"))

    def describe(self) -> str:
        return (f"{self.offering_id} {self.instance_count} x {self.instance_type} in "
                f"{self.availability_zone} {fmt(self.start)}..{fmt(self.end)} "
                f"${self.upfront_fee_usd:,.2f}")


@dataclass(frozen=True)
class Block:
    reservation_id: str
    instance_type: str
    availability_zone: str
    instance_count: int
    start: datetime
    end: datetime
    state: str
    reservation_type: str = "capacity-block"

    @classmethod
    def from_api(cls, d: dict) -> "Block":
        return cls(d["CapacityReservationId"], d["InstanceType"], d["AvailabilityZone"],
                   int(d["TotalInstanceCount"]), _utc(d["StartDate"]), _utc(d["EndDate"]),
                   d["State"], d.get("ReservationType", "default"))

    def outputs(self) -> Dict[str, Any]:
        return {"reservation_id": self.reservation_id, "instance_type": self.instance_type,
                "availability_zone": self.availability_zone, "instance_count": self.instance_count,
                "start_date": fmt(self.start), "end_date": fmt(self.end), "state": self.state,
                "instances_stop_at": fmt(self.end - TERMINATION_LEAD)}


class CapacityError(ConfigError):
    """No usable capacity for the request (the message lists what AWS offered)."""


def choose_offering(offerings: Iterable[Offering], instance_type: str, instance_count: int,
                    duration_hours: int) -> Offering:
    """The cheapest offering that fits (then the earliest start); CapacityError if none does."""
    fits = [o for o in offerings
            if o.instance_type == instance_type and o.instance_count >= instance_count
            and o.duration_hours == duration_hours and o.currency == "USD"]
    if not fits:
        raise CapacityError("kimi-k3:capacityEarliestStart", None,
                            "widen capacityEarliestStart/capacityLatestStart, change "
                            "capacityDurationHours or try another aws:region",
                            f"has no Capacity Block offering of {instance_count} x {instance_type} "
                            f"for {duration_hours} h")
    return min(fits, key=lambda o: (o.upfront_fee_usd, o.start, o.offering_id))


def fee_guard(chosen: Offering, offerings: Sequence[Offering], max_upfront_fee_usd: float) -> None:
    """Refuse to buy above `max_upfront_fee_usd`, listing every offer with its price."""
    if chosen.upfront_fee_usd <= max_upfront_fee_usd:
        return
    offers = "; ".join(o.describe() for o in sorted(offerings, key=lambda o: o.upfront_fee_usd))
    raise CapacityError("kimi-k3:maxUpfrontFeeUsd", max_upfront_fee_usd,
                        f"raise it to at least {math.ceil(chosen.upfront_fee_usd)} to buy the cheapest, "
                        f"or adopt a reservation with capacityReservationId (offers: {offers})",
                        f"is below the cheapest fitting offer (${chosen.upfront_fee_usd:,.2f})")


def check_block(block: Block, instance_type: str, instance_count: int, now: datetime) -> None:
    """An adopted reservation must be a live capacity block of the right type and size."""
    key, rid = "kimi-k3:capacityReservationId", block.reservation_id
    if block.reservation_type != "capacity-block":
        raise CapacityError(key, rid, "give a Capacity Block reservation", "is an On-Demand reservation")
    if block.instance_type != instance_type:
        raise CapacityError(key, rid, f"use a block of {instance_type} or change kimi-k3:accelerator",
                            f"holds {block.instance_type}")
    if block.instance_count < instance_count:
        raise CapacityError(key, rid, f"use a block of at least {instance_count} instances or lower "
                            "kimi-k3:nodes/replicas", f"holds only {block.instance_count} instances")
    if block.state not in USABLE_STATES or block.end - TERMINATION_LEAD <= _utc(now):
        raise CapacityError(key, rid, "buy or adopt a block that has not ended",
                            f"is {block.state} (ends {fmt(block.end)})")


def scaling_times(start: datetime, end: datetime, now: datetime) -> Dict[str, Optional[str]]:
    """When the node group scales up (None if the block already started) and back to 0."""
    return {"scale_up_at": fmt(start) if _utc(start) > _utc(now) else None,
            "scale_down_at": fmt(_utc(end) - SCALE_DOWN_LEAD)}


# ---------------------------------------------------------------- boto3 calls (client passed in)

def describe_offerings(ec2, instance_type: str, instance_count: int, duration_hours: int,
                       earliest: Optional[datetime] = None, latest: Optional[datetime] = None
                       ) -> List[Offering]:
    args: Dict[str, Any] = {"InstanceType": instance_type, "InstanceCount": instance_count,
                            "CapacityDurationHours": duration_hours}
    if earliest is not None:
        args["StartDateRange"] = _utc(earliest)
    if latest is not None:
        args["EndDateRange"] = _utc(latest) + timedelta(hours=duration_hours)
    out: List[Offering] = []
    while True:
        page = ec2.describe_capacity_block_offerings(**args)
        out += [Offering.from_api(o) for o in page.get("CapacityBlockOfferings", [])]
        token = page.get("NextToken")
        if not token:
            return out
        args["NextToken"] = token


def describe_block(ec2, reservation_id: str) -> Block:
    page = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])
    found = page.get("CapacityReservations", [])
    if not found:
        raise CapacityError("kimi-k3:capacityReservationId", reservation_id,
                            "check the id and aws:region", "was not found")
    return Block.from_api(found[0])


def purchase(ec2, offering: Offering) -> Block:
    res = ec2.purchase_capacity_block(CapacityBlockOfferingId=offering.offering_id,
                                      InstancePlatform="Linux/UNIX")
    return Block.from_api(res["CapacityReservation"])


def ec2_client(region: str, max_attempts: int = 5):
    """A client with its own deadlines, from the ambient credentials (read at call time).

    Purchases use `max_attempts=1`: PurchaseCapacityBlock takes no idempotency token, so a retry
    after a timeout could buy a second block.
    """
    import boto3
    from botocore.config import Config

    return boto3.client("ec2", region_name=region, config=Config(
        connect_timeout=10, read_timeout=60, retries={"total_max_attempts": max_attempts, "mode": "standard"}))


def acquire(ec2, props: Dict[str, Any], now: datetime, purchase_client=None) -> Dict[str, Any]:
    """Adopt or buy per `props` (the dynamic resource's inputs); the block's outputs.

    `purchase_client` (default `ec2`) makes the one purchase call; give it one without retries.
    """
    itype, count = props["instance_type"], int(props["instance_count"])
    if props.get("reservation_id"):
        block = describe_block(ec2, props["reservation_id"])
        check_block(block, itype, count, now)
        return {**block.outputs(), "purchased": False, "upfront_fee_usd": None}
    hours = int(props["duration_hours"])
    earliest = _utc(props["earliest_start"]) if props.get("earliest_start") else None
    latest = _utc(props["latest_start"]) if props.get("latest_start") else None
    offers = describe_offerings(ec2, itype, count, hours, earliest, latest)
    chosen = choose_offering(offers, itype, count, hours)
    fee_guard(chosen, offers, float(props.get("max_upfront_fee_usd") or 0))
    block = purchase(purchase_client or ec2, chosen)
    return {**block.outputs(), "purchased": True, "upfront_fee_usd": chosen.upfront_fee_usd}


# ---------------------------------------------------------------- the dynamic provider

class CapacityBlockProvider(ResourceProvider):
    """Pulumi dynamic provider for one Capacity Block (adopted or bought). Holds no state."""

    def _inputs(self, props: Dict[str, Any]) -> Dict[str, Any]:
        return {k: v for k, v in props.items() if k != "__provider"}

    def check(self, olds, news):
        from pulumi.dynamic import CheckFailure, CheckResult

        news = self._inputs(news)
        failures = []
        if not news.get("instance_type"):
            failures.append(CheckFailure("instance_type", "required"))
        if not news.get("region"):
            failures.append(CheckFailure("region", "set aws:region"))
        return CheckResult(news, failures)

    def create(self, props):
        from pulumi.dynamic import CreateResult

        props = self._inputs(props)
        region = props["region"]
        outs = acquire(ec2_client(region), props, datetime.now(timezone.utc),
                       purchase_client=ec2_client(region, max_attempts=1))
        return CreateResult(outs["reservation_id"], {**props, **outs})

    def read(self, id_, props):
        from pulumi.dynamic import ReadResult

        props = self._inputs(props)
        block = describe_block(ec2_client(props["region"]), id_)
        return ReadResult(id_, {**props, **block.outputs()})

    def diff(self, id_, olds, news):
        from pulumi.dynamic import DiffResult

        news = self._inputs(news)
        # a purchased block can never be replaced by buying another one; only a different
        # adopted id (or region) is a different resource
        replaces = [k for k in ("reservation_id", "region") if news.get(k) != olds.get(k)
                    and (k != "reservation_id" or news.get(k))]
        return DiffResult(changes=bool(replaces), replaces=replaces, delete_before_replace=True)

    def delete(self, id_, props):
        # nothing to call: AWS cannot cancel a Capacity Block; destroy only forgets it
        pulumi.log.warn(f"Capacity Block {id_} is forgotten, not cancelled: it stays billed "
                        f"until {props.get('end_date')}")


class CapacityBlock(pulumi.dynamic.Resource, module="aws", name="CapacityBlock"):
    """The Capacity Block the GPU node group runs on (type `pulumi-python:dynamic/aws:CapacityBlock`).

    Inputs: `region`, `instance_type`, `instance_count`, and either `reservation_id` (adopt) or
    `duration_hours`, `earliest_start`, `latest_start`, `max_upfront_fee_usd` (buy).
    """

    reservation_id: pulumi.Output[str]
    availability_zone: pulumi.Output[str]
    instance_count: pulumi.Output[int]
    start_date: pulumi.Output[str]
    end_date: pulumi.Output[str]
    instances_stop_at: pulumi.Output[str]
    upfront_fee_usd: pulumi.Output[Any]
    purchased: pulumi.Output[bool]

    def __init__(self, name: str, props: Dict[str, Any], opts: Optional[pulumi.ResourceOptions] = None):
        outs = {k: None for k in ("reservation_id", "availability_zone", "start_date", "end_date",
                                  "instances_stop_at", "upfront_fee_usd", "purchased", "state")}
        super().__init__(CapacityBlockProvider(), name, {**outs, **props}, opts)
