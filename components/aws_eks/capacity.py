"""EC2 Capacity Blocks: adopt a reservation, or choose and buy an offering within a fee guard.

Three layers, kept apart:
- pure choice and checks on AWS's documented response shapes (`Offering`, `Block`,
  `choose_offering`, `fee_guard`, `check_block`, `scaling_times`): no I/O, unit-tested;
- thin boto3 calls (`describe_offerings`, `describe_block`, `stack_blocks`, `purchase`) taking
  a client, so tests drive them through botocore's Stubber against the real EC2 service model;
- `CapacityBlockProvider`, a Pulumi dynamic provider that runs them at deploy time. It holds no
  client or credentials (it is pickled into state); it builds a client per call from the
  stack's `aws:region`/`aws:profile`/credentials, passed in as inputs (aws_api.py).

Inputs are camelCase (`instanceType`, `instanceCount`, `reservationId`, `durationHours`,
`earliestStart`, `latestStart`, `maxUpfrontFeeUsd`, `stackIdentity`); the block's outputs keep
their names (`reservation_id`, `start_date`, ...: the program reads them). Stacks deployed before
the inputs were renamed hold the snake_case names in state: `CapacityBlockProvider.upgrade`
reads them under the new names, so such a stack's next `up` changes nothing.

Never buying twice: every purchase is tagged with the stack's ownership token (`IDENTITY_TAG` =
the random token of the stack's `StackOwner` record, owner.py, passed in as `stackIdentity`; not
`<organization>/<project>/<stack>`, which two users of one stack name share), and
before buying, `acquire` looks for a block of this instance type carrying that tag that is
active, scheduled or payment-pending, and adopts it. So a `pulumi up` interrupted after
PurchaseCapacityBlock (state has no record) adopts the block on the next run, and a purchase
whose response is lost (timeout, connection reset, 5xx) is looked up again at once.
PurchaseCapacityBlock takes no idempotency token and is never retried by the client.

A purchased block cannot be cancelled: `delete` only forgets it (it says so). Blocks end at
11:30 UTC and AWS starts terminating instances 30 minutes before the end. In buy mode a block
that has ended is followed by a new purchase (an update, under the same fee cap, preferring the
ended block's zone); an adopted block that has ended fails the update with the id and the fix.
A changed request (accelerator, nodes x replicas) re-checks an adopted block; in buy mode it is
refused at preview unless the bought block still holds it (`CapacityBlockProvider.diff`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import pulumi
from pulumi.dynamic import CheckFailure, CreateResult, DiffResult, ReadResult, UpdateResult

from ..dynamic.provider import DynamicResource
from ..inference.errors import ConfigError
from . import aws_api

#: AWS terminates a block's instances this long before its end
TERMINATION_LEAD = timedelta(minutes=30)
#: kimi-k3 scales the node group to 0 this long before the end (vLLM drains before AWS stops it)
SCALE_DOWN_LEAD = timedelta(minutes=60)
USABLE_STATES = ("payment-pending", "scheduled", "active")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
#: states of a reservation that will never run instances again
GONE_STATES = ("expired", "cancelled", "failed", "payment-failed", "unsupported", "unavailable", "unlisted")
#: tag on every block this stack buys: value = the stack's ownership token (StackOwner, owner.py), never
#: "<organization>/<project>/<stack>", which two users of one stack name share (that goes in `Name`)
IDENTITY_TAG = "kimi-k3:stack"
#: the zone type kimi-k3 buys in unless `allow_local_zones` (AvailabilityZone.ZoneType values:
#: "availability-zone | local-zone | wavelength-zone", EC2 API model, botocore 1.44.8)
AVAILABILITY_ZONE = "availability-zone"
#: a reservation DescribeCapacityReservations no longer lists (kimi-k3's own state value, set by
#: refresh: `read`); like the states in GONE_STATES it never runs instances again
UNLISTED = "unlisted"
#: after an ambiguous purchase error, look for the tagged block this many times, this far apart
RELOOK_TRIES = 6
RELOOK_INTERVAL_S = 10.0


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
    #: offerings made of several segments become several reservations; ultraserver offerings
    #: and partial days are other products: none of them is chosen (`choose_offering`)
    segments: int = 1
    ultraserver: bool = False
    extra_minutes: int = 0
    #: the zone types of the offering and of each of its segments (`ZoneType`, in the EC2 model of
    #: botocore 1.44.8 on CapacityBlockOffering and CapacityBlockOfferingSegment: a plain string,
    #: "availability-zone | local-zone | wavelength-zone" per AvailabilityZone.ZoneType); empty
    #: when AWS did not say (`resolve_zone_types` asks DescribeAvailabilityZones then)
    zone_types: Tuple[str, ...] = ()

    @classmethod
    def from_api(cls, d: dict) -> "Offering":
        segments = d.get("CapacityBlockOfferingSegments") or []
        zone_types = tuple(z for z in [d.get("ZoneType"), *(g.get("ZoneType") for g in segments)] if z)
        return cls(d["CapacityBlockOfferingId"], d["InstanceType"], d["AvailabilityZone"],
                   int(d["InstanceCount"]), _utc(d["StartDate"]), _utc(d["EndDate"]),
                   int(d["CapacityBlockDurationHours"]), float(d["UpfrontFee"]),
                   d.get("CurrencyCode", "USD"), max(1, len(segments)),
                   bool(d.get("UltraserverType")), int(d.get("CapacityBlockDurationMinutes") or 0),
                   tuple(sorted(set(zone_types))))

    @property
    def in_availability_zone(self) -> bool:
        """Only in Availability Zones (not a Local or Wavelength Zone, not unknown)."""
        return bool(self.zone_types) and set(self.zone_types) == {AVAILABILITY_ZONE}

    def describe(self) -> str:
        where = self.availability_zone
        if self.zone_types and not self.in_availability_zone:
            where += f" ({'/'.join(self.zone_types)})"
        return (f"{self.offering_id} {self.instance_count} x {self.instance_type} in "
                f"{where} {fmt(self.start)}..{fmt(self.end)} "
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
    tags: Tuple[Tuple[str, str], ...] = field(default=())

    @classmethod
    def from_api(cls, d: dict) -> "Block":
        return cls(d["CapacityReservationId"], d["InstanceType"], d["AvailabilityZone"],
                   int(d["TotalInstanceCount"]), _utc(d["StartDate"]), _utc(d["EndDate"]),
                   d["State"], d.get("ReservationType", "default"),
                   tuple((t.get("Key", ""), t.get("Value", "")) for t in d.get("Tags") or []))

    def tag(self, key: str) -> Optional[str]:
        return next((v for k, v in self.tags if k == key), None)

    def outputs(self) -> Dict[str, Any]:
        return {"reservation_id": self.reservation_id, "instance_type": self.instance_type,
                "availability_zone": self.availability_zone, "instance_count": self.instance_count,
                "start_date": fmt(self.start), "end_date": fmt(self.end), "state": self.state,
                "instances_stop_at": fmt(self.end - TERMINATION_LEAD)}


class CapacityError(ConfigError):
    """No usable capacity for the request (the message lists what AWS offered)."""


def choose_offering(offerings: Iterable[Offering], instance_type: str, instance_count: int,
                    duration_hours: int, prefer_zone: Optional[str] = None,
                    max_upfront_fee_usd: Optional[float] = None, allow_local_zones: bool = False) -> Offering:
    """The cheapest offering that fits (then the earliest start); CapacityError if none does.

    Only offerings in Availability Zones are chosen unless `allow_local_zones`: a purchase
    cannot be cancelled, and a cheaper Local or Wavelength Zone block would then fail the update
    when the node group looks for a subnet there (kimi-k3's VPC has subnets in the region's
    Availability Zones only: network.py). An offering whose zone type is unknown is never chosen.

    With `prefer_zone` (the zone of the block being replaced), the cheapest fitting offering in
    that zone wins if it is within `max_upfront_fee_usd`: the GPU node group then stays in its
    subnet (a block in another zone works too, but moves the node group: network.py).
    """
    shaped = [o for o in offerings
              if _shaped_as_asked(o, instance_type, instance_count, duration_hours)]
    fits = [o for o in shaped if o.in_availability_zone
            or (allow_local_zones and o.zone_types)]
    if not fits:
        raise _nothing_fits(shaped, instance_type, instance_count, duration_hours)
    if prefer_zone:
        here = [o for o in fits if o.availability_zone == prefer_zone
                and (max_upfront_fee_usd is None or o.upfront_fee_usd <= max_upfront_fee_usd)]
        if here:
            return min(here, key=lambda o: (o.upfront_fee_usd, o.start, o.offering_id))
    return min(fits, key=lambda o: (o.upfront_fee_usd, o.start, o.offering_id))


def _shaped_as_asked(o: Offering, instance_type: str, instance_count: int,
                     duration_hours: int) -> bool:
    """The type, at least the count and exactly the duration asked, priced in USD, one segment,
    not an UltraServer, no extra minutes."""
    return (o.instance_type == instance_type and o.instance_count >= instance_count
            and o.duration_hours == duration_hours and o.currency == "USD"
            and o.segments == 1 and not o.ultraserver and o.extra_minutes == 0)


def _nothing_fits(shaped: Sequence[Offering], instance_type: str, instance_count: int,
                  duration_hours: int) -> CapacityError:
    """The refusal when no offering fits: the zones are the reason if some had the right shape."""
    if shaped:
        offers = "; ".join(o.describe() for o in sorted(shaped, key=lambda o: o.upfront_fee_usd))
        return CapacityError("kimi-k3:capacityAllowLocalZones", None,
                             "widen capacityEarliestStart/capacityLatestStart or try another aws:region; "
                             "set kimi-k3:capacityAllowLocalZones=true (with kimi-k3:vpcId and a subnet "
                             f"in that zone) to buy there (offers: {offers})",
                             f"leaves no offering of {instance_count} x {instance_type}: every one is "
                             "outside the region's Availability Zones")
    return CapacityError("kimi-k3:capacityEarliestStart", None,
                         "widen capacityEarliestStart/capacityLatestStart, change "
                         "capacityDurationHours or try another aws:region",
                         f"has no Capacity Block offering of {instance_count} x {instance_type} "
                         f"for {duration_hours} h")


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


def ended(end: Any, now: datetime) -> bool:
    """Has a block ending at `end` stopped being usable (AWS terminates from 30 min before)?"""
    return _utc(end) - TERMINATION_LEAD <= _utc(now)


def adoptable(block: Block, identity: str, instance_type: str, instance_count: int, now: datetime) -> bool:
    """Is `block` one this stack bought (its tag) and can still run on?"""
    return (block.tag(IDENTITY_TAG) == identity and block.instance_type == instance_type
            and block.instance_count >= instance_count and block.state in USABLE_STATES
            and block.reservation_type == "capacity-block" and not ended(block.end, now))


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


def resolve_zone_types(ec2, offerings: Sequence[Offering]) -> List[Offering]:
    """`offerings` with the zone type of each one AWS did not state, from DescribeAvailabilityZones
    (`AllAvailabilityZones` so zones not opted in are described too; AvailabilityZone.ZoneType)."""
    from dataclasses import replace

    unknown = sorted({o.availability_zone for o in offerings if not o.zone_types})
    if not unknown:
        return list(offerings)
    page = ec2.describe_availability_zones(ZoneNames=unknown, AllAvailabilityZones=True)
    types = {z["ZoneName"]: z.get("ZoneType") for z in page.get("AvailabilityZones", [])}
    return [o if o.zone_types or not types.get(o.availability_zone)
            else replace(o, zone_types=(types[o.availability_zone],)) for o in offerings]


def not_found(reservation_id: str, region: Optional[str]) -> CapacityError:
    """The one line for a reservation id EC2 does not know (wrong id, region or account)."""
    where = region or "this region"
    return CapacityError("kimi-k3:capacityReservationId", reservation_id,
                         f"check the id (EC2 console, Capacity Reservations), aws:region (now {where}) "
                         "and that your credentials are for the account that holds it",
                         f"was not found in {where}")


def _is_not_found(err: Exception) -> bool:
    """EC2's answer to an unknown or malformed reservation id: InvalidCapacityReservationId.*
    (`.NotFound` as terraform-provider-aws matches it, internal/service/ec2/find.go; EC2 error
    codes are not in the API model, so any `InvalidCapacityReservationId.` code counts)."""
    from botocore.exceptions import ClientError

    return isinstance(err, ClientError) and str(err.response.get("Error", {}).get("Code", "")).startswith(
        "InvalidCapacityReservationId.")


def describe_block(ec2, reservation_id: str) -> Block:
    """The reservation `reservation_id`; CapacityError in one line when EC2 does not know it."""
    try:
        page = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])
    except Exception as err:  # noqa: BLE001 only the not-found codes are turned into a line
        if _is_not_found(err):
            raise not_found(reservation_id, ec2.meta.region_name) from None
        raise
    found = page.get("CapacityReservations", [])
    if not found:
        raise not_found(reservation_id, ec2.meta.region_name)
    return Block.from_api(found[0])


def refreshed(ec2, reservation_id: str) -> Optional[Block]:
    """The reservation as EC2 lists it now, or None when EC2 no longer lists it (refresh)."""
    try:
        return describe_block(ec2, reservation_id)
    except CapacityError:
        return None


def stack_blocks(ec2, identity: str, instance_type: str) -> List[Block]:
    """Blocks of `instance_type` tagged for this stack that are active, scheduled or paying.

    Only documented DescribeCapacityReservations filters are used (`instance-type`, `state`);
    the tag is matched here, on each reservation's `Tags`.
    """
    args: Dict[str, Any] = {"Filters": [{"Name": "instance-type", "Values": [instance_type]},
                                        {"Name": "state", "Values": list(USABLE_STATES)}]}
    out: List[Block] = []
    while True:
        page = ec2.describe_capacity_reservations(**args)
        out += [b for b in (Block.from_api(r) for r in page.get("CapacityReservations", []))
                if b.tag(IDENTITY_TAG) == identity]
        token = page.get("NextToken")
        if not token:
            return out
        args["NextToken"] = token


def purchase(ec2, offering: Offering, identity: str, stack_name: Optional[str] = None) -> Block:
    """Buy `offering`, tagged with the stack's ownership token (PurchaseCapacityBlock
    TagSpecifications) and, for people, named after the stack (`stack_name`: never matched)."""
    res = ec2.purchase_capacity_block(
        CapacityBlockOfferingId=offering.offering_id, InstancePlatform="Linux/UNIX",
        TagSpecifications=[{"ResourceType": "capacity-reservation", "Tags": [
            {"Key": IDENTITY_TAG, "Value": identity},
            {"Key": "Name", "Value": f"kimi-k3 {stack_name or identity}"}]}])
    reservations = res.get("CapacityReservations") or [res["CapacityReservation"]]
    if len(reservations) != 1:
        ids = [r["CapacityReservationId"] for r in reservations]
        raise CapacityError("kimi-k3:maxUpfrontFeeUsd", None, f"adopt one of {ids} with "
                            "kimi-k3:capacityReservationId", f"bought an offering that became {len(ids)} "
                            "reservations (kimi-k3 runs on one)")
    return Block.from_api(reservations[0])


def ec2_client(props: Dict[str, Any], max_attempts: int = 5):
    """An EC2 client for the stack's account and region, with bounded timeouts.

    Purchases use `max_attempts=1`: PurchaseCapacityBlock takes no idempotency token, so a retry
    after a timeout could buy a second block.
    """
    return aws_api.client("ec2", props, max_attempts=max_attempts)


def _definitive(err: Exception) -> bool:
    """True when AWS answered the purchase with a refusal (4xx): nothing was bought."""
    from botocore.exceptions import ClientError

    if isinstance(err, ClientError):
        status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        code = err.response.get("Error", {}).get("Code", "")
        return 400 <= int(status) < 500 or code in ("DryRunOperation", "UnauthorizedOperation")
    return False


def _adopted(block: Block) -> Dict[str, Any]:
    return {**block.outputs(), "purchased": True, "upfront_fee_usd": None, "adopted_by_tag": True}


def requested(props: Mapping[str, Any]) -> Dict[str, Any]:
    """What the program asks the block to hold (`instanceType`, `instanceCount`), in the shape
    of the `requested` output (kept from when the inputs had the outputs' names)."""
    return {"instance_type": props.get("instanceType"), "instance_count": int(props.get("instanceCount") or 0)}


def _with_request(outs: Dict[str, Any], props: Mapping[str, Any]) -> Dict[str, Any]:
    return {**outs, "requested": requested(props)}


def _first(blocks: Sequence[Block], prefer_zone: Optional[str]) -> Block:
    return min(blocks, key=lambda b: (b.availability_zone != prefer_zone, b.start, b.reservation_id))


def acquire(ec2, props: Dict[str, Any], now: datetime, purchase_client=None,
            sleep: Callable[[float], None] = time.sleep, prefer_zone: Optional[str] = None) -> Dict[str, Any]:
    """Adopt or buy per `props` (the dynamic resource's inputs); the block's outputs.

    `purchase_client` (default `ec2`) makes the one purchase call; give it one without retries.
    `prefer_zone`: the zone of the block this one replaces (buy mode), preferred within the cap.
    """
    itype, count = props["instanceType"], int(props["instanceCount"])
    if props.get("reservationId"):
        block = describe_block(ec2, props["reservationId"])
        check_block(block, itype, count, now)
        return _with_request({**block.outputs(), "purchased": False, "upfront_fee_usd": None}, props)
    identity = props.get("stackIdentity")
    if not identity:
        raise ValueError("stackIdentity is required to buy (the program passes it)")
    # a block this stack already bought (an interrupted `pulumi up`, a lost response): adopt it
    mine = [b for b in stack_blocks(ec2, identity, itype) if adoptable(b, identity, itype, count, now)]
    if mine:
        return _with_request(_adopted(_first(mine, prefer_zone)), props)
    hours = int(props["durationHours"])
    earliest = _utc(props["earliestStart"]) if props.get("earliestStart") else None
    latest = _utc(props["latestStart"]) if props.get("latestStart") else None
    offers = resolve_zone_types(ec2, describe_offerings(ec2, itype, count, hours, earliest, latest))
    cap_usd = float(props.get("maxUpfrontFeeUsd") or 0)
    chosen = choose_offering(offers, itype, count, hours, prefer_zone, cap_usd,
                             allow_local_zones=bool(props.get("allowLocalZones")))
    fee_guard(chosen, offers, cap_usd)
    try:
        block = purchase(purchase_client or ec2, chosen, identity, props.get("stackName"))
    except Exception as err:  # noqa: BLE001 decide below whether it may have gone through
        if _definitive(err):
            raise
        for attempt in range(RELOOK_TRIES):
            found = [b for b in stack_blocks(ec2, identity, itype) if adoptable(b, identity, itype, count, now)]
            if found:
                return _with_request({**_adopted(_first(found, chosen.availability_zone)),
                                      "upfront_fee_usd": chosen.upfront_fee_usd}, props)
            if attempt + 1 < RELOOK_TRIES:
                sleep(RELOOK_INTERVAL_S)
        raise CapacityError("kimi-k3:maxUpfrontFeeUsd", props.get("maxUpfrontFeeUsd"),
                            "check the EC2 console (Capacity Reservations) for a block tagged "
                            f"{IDENTITY_TAG}={identity}, then run `pulumi up` again: it adopts that "
                            "block before it would buy", f"purchase of {chosen.offering_id} got no answer "
                            f"({type(err).__name__}) and no tagged block is listed yet") from None
    return _with_request({**block.outputs(), "purchased": True, "upfront_fee_usd": chosen.upfront_fee_usd},
                         props)


def recheck(ec2, reservation_id: str, props: Dict[str, Any], now: datetime) -> Dict[str, Any]:
    """Buy mode, a changed request: the block this stack holds, checked against it (no purchase)."""
    block = describe_block(ec2, reservation_id)
    check_block(block, props["instanceType"], int(props["instanceCount"]), now)
    return _with_request(block.outputs(), props)


def request_refusal(olds: Mapping[str, Any], news: Mapping[str, Any]) -> Optional[CapacityError]:
    """Buy mode: a new request (accelerator, nodes x replicas) that the running block cannot hold.

    A purchased block cannot be cancelled, so kimi-k3 never buys a second one while the first
    still runs: the change is refused (at preview: `diff` raises it) with the ways out.
    """
    want = requested(news)
    # the block's own type and size (outputs)
    have_type, have_count = olds.get("instance_type"), int(olds.get("instance_count") or 0)
    if have_type == want["instance_type"] and have_count >= want["instance_count"]:
        return None
    key = "kimi-k3:accelerator" if have_type != want["instance_type"] else "kimi-k3:nodes"
    return CapacityError(
        key, f"{want['instance_count']} x {want['instance_type']}",
        f"keep the request the block holds, adopt a block that fits with kimi-k3:capacityReservationId, "
        f"or change it after the block ends ({olds.get('end_date')})",
        f"does not fit Capacity Block {olds.get('reservation_id')} that this stack bought "
        f"({have_count} x {have_type}); a purchase cannot be cancelled, so kimi-k3 does not buy another "
        "while it runs")


def region_refusal(olds: Mapping[str, Any], region: Optional[str]) -> CapacityError:
    """Buy mode, another aws:region while the block this stack bought still runs: the new region
    would get a second purchase (a block is regional and cannot be cancelled), so it is refused."""
    return CapacityError(
        "aws:region", region, f"keep aws:region {olds.get('region')} until the block ends ({olds.get('end_date')}), "
        "adopt a block of the new region with kimi-k3:capacityReservationId, or `pulumi destroy` first (it "
        "forgets the block, which stays billed)", f"would buy a second Capacity Block while "
        f"{olds.get('reservation_id')}, bought by this stack in {olds.get('region')}, runs; a purchase cannot be "
        "cancelled")


def next_block_notice(olds: Mapping[str, Any], news: Mapping[str, Any]) -> str:
    """What the next `up` does about a block whose end (as the stack last saw it) has passed:
    the update re-reads it first (an extended block keeps its id and runs on), then, in buy
    mode, buys the next one within the cap (or stops listing the offers); an adopted one fails
    naming the fix. Warned at preview by `diff`, so a purchase is never a surprise."""
    rid, end = olds.get("reservation_id"), olds.get("end_date")
    head = f"Capacity Block {rid} ended at {end} ({olds.get('state')} when last read)"
    if news.get("reservationId"):
        return (f"{head}: this `pulumi up` re-reads it and stops unless it was extended; adopt the next block "
                "with pulumi config set kimi-k3:capacityReservationId cr-..., or unset it and set "
                "kimi-k3:maxUpfrontFeeUsd to let kimi-k3 buy one")
    want = requested(news)
    cap_usd = float(news.get("maxUpfrontFeeUsd") or 0)
    keep = "this `pulumi up` keeps it if it was extended"
    if cap_usd <= 0:
        return (f"{head}: {keep}, else lists the Capacity Block offerings of {want['instance_count']} x "
                f"{want['instance_type']} and stops, buying nothing (kimi-k3:maxUpfrontFeeUsd is 0)")
    return (f"{head}: {keep}, else BUYS the next block of {want['instance_count']} x {want['instance_type']}, "
            f"the cheapest fitting offer if its upfront fee is at most ${cap_usd:,.2f} "
            "(kimi-k3:maxUpfrontFeeUsd; a purchase cannot be cancelled); to buy nothing, cancel this update "
            "and set kimi-k3:maxUpfrontFeeUsd 0 (lists the offers) or adopt a block with "
            "kimi-k3:capacityReservationId")


def read_outputs(ec2, id_: str, props: Mapping[str, Any]) -> Dict[str, Any]:
    """What refresh records: the block as EC2 lists it, or, once EC2 no longer lists it (an
    expired block ages out of DescribeCapacityReservations; terraform-provider-aws drops such a
    block from state, internal/service/ec2/find.go), the last known outputs with state
    `unlisted`: a block that will never run again, which the next `up` treats like an expired
    one (`diff`: buy the next in buy mode, a one-line refusal when adopted), never an error."""
    # after a buy-mode renewal (an update) the block held is no longer the resource's id
    block = refreshed(ec2, props.get("reservation_id") or id_)
    if block is None:
        return {**props, "state": UNLISTED}
    return {**props, **block.outputs()}


# ---------------------------------------------------------------- the dynamic provider

def _now() -> datetime:
    return datetime.now(timezone.utc)


def _over(olds: Mapping[str, Any]) -> bool:
    """Has the block in state ended (or gone)?"""
    return (bool(olds.get("end_date")) and ended(olds["end_date"], _now())) or olds.get("state") in GONE_STATES


def _forgotten(reservation_id: str, end_date: Any) -> str:
    return f"Capacity Block {reservation_id} is forgotten, not cancelled: it stays billed until {end_date}"


class CapacityBlockProvider(aws_api.AwsProvider):
    """Pulumi dynamic provider for one Capacity Block (adopted or bought). Holds no state."""

    #: the block's outputs (`instance_type`, `instance_count` and `reservation_id` were also the
    #: names of inputs before the inputs became camelCase)
    OUTPUTS = ("reservation_id", "instance_type", "instance_count", "availability_zone", "start_date",
               "end_date", "instances_stop_at", "upfront_fee_usd", "purchased", "state", "adopted_by_tag",
               "requested")
    #: inputs renamed to camelCase: old name -> new (stacks deployed before hold the old ones)
    RENAMED = {"duration_hours": "durationHours", "earliest_start": "earliestStart",
               "latest_start": "latestStart", "max_upfront_fee_usd": "maxUpfrontFeeUsd",
               "stack_identity": "stackIdentity"}
    #: renamed too, but the old names are also outputs (the block's): see `upgrade`
    RENAMED_OUTPUT_NAMES = {"instance_type": "instanceType", "instance_count": "instanceCount",
                            "reservation_id": "reservationId"}

    def upgrade(self, props):
        """Old state (no `instanceType`): the block's outputs had overwritten the inputs of the
        same names, so what was asked comes from `requested` (or, older still, is what the block
        holds), and the adopted id is the block's only when it was adopted (not `purchased`)."""
        p = super().upgrade(props)
        if "instanceType" in p or "instance_type" not in p:
            return p
        asked = p.get("requested") or {}
        p["instanceType"] = asked.get("instance_type", p.get("instance_type"))
        p["instanceCount"] = asked.get("instance_count", p.get("instance_count"))
        p["reservationId"] = None if p.get("purchased") else p.get("reservation_id")
        return p

    def _acquire(self, props: Dict[str, Any], prefer_zone: Optional[str] = None) -> Dict[str, Any]:
        return acquire(ec2_client(props), props, _now(), purchase_client=ec2_client(props, max_attempts=1),
                       prefer_zone=prefer_zone)

    def check_inputs(self, news):
        failures = []
        if not news.get("instanceType"):
            failures.append(CheckFailure("instanceType", "required"))
        if not news.get("region"):
            failures.append(CheckFailure("region", "set aws:region"))
        return failures

    def create(self, props):
        outs = self._acquire(props)
        return CreateResult(outs["reservation_id"], {**props, **outs})

    def read(self, id_, props):
        return ReadResult(id_, read_outputs(ec2_client(props), id_, props))

    def diff(self, id_, olds, news):
        """Which change of the inputs needs what (see the lifecycle in docs/aws-eks.md):

        - another region: another block (replace); in buy mode while the bought block runs,
          refused here (at preview): the replacement would buy a second block (`region_refusal`);
        - another adopted id than the block held: an update that adopts and checks it, not a
          replace: a delete-before-replace would first delete every resource whose replacing input
          comes from the block (the GPU node group's subnet, through the block's zone) instead of
          letting the launch template and the node group roll onto the new block;
        - adopted, the request changed (accelerator, nodes x replicas) or the block ended: an
          update, which re-checks the block (check_block) and fails loudly if it does not fit;
        - bought, the block ended: an update that buys the next one under the same fee cap,
          preferring the old block's zone;
        - bought, the request changed: an update that re-checks the block if it still holds the
          request, else refused right here (at preview), one line: never a second purchase
          while the first runs;
        - changing only the purchase request (fee cap, window) changes nothing;
        - whenever the held block looks over (by the state's end), a warning says what the update
          will do (`next_block_notice`): buy under which cap, list and stop, or stop (adopted).
        """
        if news.get("region") != olds.get("region"):
            if olds.get("purchased") and not news.get("reservationId") and not _over(olds):
                raise region_refusal(olds, news.get("region"))
            return DiffResult(changes=True, replaces=["region"], delete_before_replace=True)
        other_block = bool(news.get("reservationId")) and news["reservationId"] != olds.get("reservation_id")
        over = _over(olds)
        if over and not other_block:
            # said at preview, before the update decides: never a purchase the user did not see coming
            self.warn(next_block_notice(olds, news))
        request_changed = requested(news) != requested(olds)
        if not news.get("reservationId") and request_changed and not over:
            refusal = request_refusal(olds, news)
            if refusal is not None:
                raise refusal
        return DiffResult(changes=over or request_changed or other_block, replaces=[], delete_before_replace=True)

    def update(self, id_, olds, news):
        """Re-check an adopted block, re-check a bought one against a new request, or buy the
        next block after a bought one ended (preferring its zone); see `diff`."""
        if news.get("reservationId") or _over(olds):
            outs = self._acquire(news, None if news.get("reservationId") else olds.get("availability_zone"))
            held = olds.get("reservation_id")
            if olds.get("purchased") and not news.get("reservationId") and outs["reservation_id"] == held:
                # the block this stack bought, extended and found again by its tag: still the one
                # it paid for (the tag lookup knows no fee; `capacityCost` keeps the fee paid)
                outs = {**outs, "upfront_fee_usd": olds.get("upfront_fee_usd")}
            if olds.get("purchased") and held and held != outs["reservation_id"] and not _over(olds):
                self.warn(_forgotten(held, olds.get("end_date")))
        else:
            refusal = request_refusal(olds, news)
            if refusal is not None:
                raise refusal
            outs = recheck(ec2_client(news), olds["reservation_id"], news, _now())
            outs = {**outs, "purchased": olds.get("purchased"), "upfront_fee_usd": olds.get("upfront_fee_usd")}
        return UpdateResult({**news, **outs})

    def delete(self, id_, props):
        # nothing to call: AWS cannot cancel a Capacity Block; destroy only forgets it. The block
        # held is `reservation_id` (after a renewal or another adopted id, no longer the first id_)
        self.warn(_forgotten(props.get("reservation_id") or id_, props.get("end_date")))


class CapacityBlock(DynamicResource, module="aws", name="CapacityBlock"):
    """The Capacity Block the GPU node group runs on (type `pulumi-python:dynamic/aws:CapacityBlock`).

    Inputs: `region`, `aws`/`awsSecrets` (aws_api.py), `instanceType`, `instanceCount`, and
    either `reservationId` (adopt) or `durationHours`, `earliestStart`, `latestStart`,
    `maxUpfrontFeeUsd`, `stackIdentity` (the stack's ownership token, owner.py), `stackName` (the
    purchase's Name tag only) and `allowLocalZones` (buy).
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
        super().__init__(CapacityBlockProvider(), name, props, opts)
