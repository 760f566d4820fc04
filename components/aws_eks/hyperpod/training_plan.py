"""SageMaker training plans: adopt one, or choose and buy an offering under a fee cap, never twice.

The HyperPod counterpart of the Capacity Block (components/aws_eks/capacity.py), in the same
three layers:
- pure choice and checks on the response shapes of the pinned SageMaker model (botocore
  1.44.8: SearchTrainingPlanOfferings, DescribeTrainingPlan, CreateTrainingPlan): `Offering`,
  `TrainingPlan`, `choose_offering`, `fee_guard`, `check_plan`;
- thin boto3 calls taking a client (`search_offerings`, `describe_plan`, `create_plan`), so the
  tests drive them through botocore's Stubber against the real model;
- `TrainingPlanProvider`, the dynamic provider: no client or credential is kept (aws_api.py).

Facts it relies on (same model): SearchTrainingPlanOfferings has no zone filter, each offering's
`ReservedCapacityOfferings[]` says its `AvailabilityZone` (so the zone is chosen here, among the
zones the stack has subnets in: input `zones`); `UpfrontFee` is a string; there is no operation
to cancel or delete a plan (the training-plan operations are Create, Describe,
DescribeExtensionHistory, Extend, List and Search), so `delete` only forgets it and says so.
Statuses (Pending, Scheduled, Active, Expired, Failed): "After successful upfront payment, the
plan's status becomes Scheduled ... When the plan start date arrives, it becomes Active"
(CreateTrainingPlan's documentation in the model).

**Never buying twice.** A plan's name is the purchase's idempotency key: CreateTrainingPlan
requires `TrainingPlanName`, unique in the account and region (ResourceInUse otherwise), and
DescribeTrainingPlan accepts the name. kimi-k3 names the plan from the stack's own random token
(`stackToken`, a record in the stack's state made once: no other stack has it) and a generation
(`kimi-k3-<token>-<n>`), and looks the name up before buying: a `pulumi up` interrupted after
CreateTrainingPlan (state has no record) finds the plan on the next run and adopts it; a purchase
whose answer is lost (timeout, reset, 5xx) is looked up again, never repeated (the purchase
client makes one attempt). A plan of that name that ended or failed moves to the next
generation. The purchase is also tagged with the token and the stack's name, for people.

**Neither adopted nor allowed to buy** (`maxUpfrontFeeUsd` 0, the default): the offerings are
listed, cheapest first, in the error, and nothing is bought; every other resource of the stack
waits for this one, so nothing is created.

**Before adopting or buying**, the provider checks the add-ons created after the plan against
EKS (inputs `clusterVersion`, `addons`; addon_check.py): a withdrawn version, or an operator
add-on that no longer takes its roles as kimi-k3 gives them, stops `up` before the purchase.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import pulumi
from pulumi.dynamic import CheckFailure, CreateResult, DiffResult, ReadResult, UpdateResult

from ...dynamic.provider import DynamicResource
from ...inference.errors import ConfigError
from .. import aws_api
from . import addon_check

HYPERPOD = "hyperpod-cluster"  # SageMakerResourceName
USABLE = ("Pending", "Scheduled", "Active")
GONE = ("Expired", "Failed")
UNLISTED = "Unlisted"  # kimi-k3's own: refresh found no plan (never an API value)
IDENTITY_TAG = "kimi-k3:stack"
NAME_TAG = "kimi-k3:stack-name"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
RELOOK_TRIES = 6
RELOOK_INTERVAL_S = 10.0
#: how many generations of this stack's plan names are looked at before giving up
MAX_GENERATIONS = 50


def _utc(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc) if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(timezone.utc)


def fmt(t: Any) -> str:
    return _utc(t).strftime(TIME_FORMAT)


def fee(text: Any) -> Optional[float]:
    """`UpfrontFee` (a string in the model) as a price: None unless a finite amount >= 0."""
    try:
        value = float(str(text).strip())
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def plan_name(token: str, generation: int) -> str:
    """`kimi-k3-<token>-<n>`: within TrainingPlanName's pattern `[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}`."""
    clean = "".join(c for c in str(token) if c.isascii() and c.isalnum())[:24]
    if not clean:
        raise ValueError("stackToken has no letters or digits")
    return f"kimi-k3-{clean}-{int(generation)}"


@dataclass(frozen=True)
class Reserved:
    """One `ReservedCapacityOfferings[]` / `ReservedCapacitySummaries[]` entry."""

    instance_type: str
    instance_count: int
    zone: str
    start: Optional[datetime]
    end: Optional[datetime]
    kind: str = "Instance"

    @classmethod
    def from_api(cls, d: Mapping[str, Any], count_key: str = "InstanceCount") -> "Reserved":
        """`count_key`: `InstanceCount` in an offering's ReservedCapacityOffering,
        `TotalInstanceCount` in a plan's ReservedCapacitySummary (each shape has only its own)."""
        return cls(d.get("InstanceType", ""), int(d.get(count_key) or 0), d.get("AvailabilityZone") or "",
                   _utc(d["StartTime"]) if d.get("StartTime") else None,
                   _utc(d["EndTime"]) if d.get("EndTime") else None, d.get("ReservedCapacityType") or "Instance")


@dataclass(frozen=True)
class Offering:
    offering_id: str
    target_resources: Tuple[str, ...]
    upfront_fee_usd: Optional[float]
    currency: str
    duration_hours: int
    reserved: Tuple[Reserved, ...]
    fee_text: str = ""

    @classmethod
    def from_api(cls, d: Mapping[str, Any]) -> "Offering":
        return cls(d["TrainingPlanOfferingId"], tuple(d.get("TargetResources") or ()), fee(d.get("UpfrontFee")),
                   d.get("CurrencyCode") or "", int(d.get("DurationHours") or 0),
                   tuple(Reserved.from_api(r) for r in d.get("ReservedCapacityOfferings") or ()),
                   str(d.get("UpfrontFee")))

    @property
    def zone(self) -> str:
        return self.reserved[0].zone if self.reserved else ""

    @property
    def start(self) -> Optional[datetime]:
        return self.reserved[0].start if self.reserved else None

    def describe(self) -> str:
        r = self.reserved[0] if self.reserved else None
        what = f"{r.instance_count} x {r.instance_type} in {r.zone or '?'}" if r else "no capacity listed"
        window = f" {fmt(r.start)}..{fmt(r.end)}" if r and r.start and r.end else ""
        price = f"${self.upfront_fee_usd:,.2f}" if self.upfront_fee_usd is not None else repr(self.fee_text)
        extra = f" ({len(self.reserved)} segments)" if len(self.reserved) > 1 else ""
        return f"{self.offering_id} {what}{window}{extra} {price}" + \
            ("" if self.currency in ("USD", "") else f" {self.currency}")


@dataclass(frozen=True)
class TrainingPlan:
    arn: str
    name: str
    status: str
    start: Optional[datetime]
    end: Optional[datetime]
    upfront_fee_usd: Optional[float]
    instance_count: int
    target_resources: Tuple[str, ...]
    reserved: Tuple[Reserved, ...]
    status_message: str = ""

    @classmethod
    def from_api(cls, d: Mapping[str, Any]) -> "TrainingPlan":
        return cls(d["TrainingPlanArn"], d["TrainingPlanName"], d["Status"],
                   _utc(d["StartTime"]) if d.get("StartTime") else None,
                   _utc(d["EndTime"]) if d.get("EndTime") else None, fee(d.get("UpfrontFee")),
                   int(d.get("TotalInstanceCount") or 0), tuple(d.get("TargetResources") or ()),
                   tuple(Reserved.from_api(r, "TotalInstanceCount") for r in d.get("ReservedCapacitySummaries") or ()),
                   d.get("StatusMessage") or "")

    @property
    def zones(self) -> List[str]:
        return sorted({r.zone for r in self.reserved if r.zone})

    @property
    def instance_types(self) -> List[str]:
        return sorted({r.instance_type for r in self.reserved if r.instance_type})

    def outputs(self) -> Dict[str, Any]:
        return {"trainingPlanArn": self.arn, "trainingPlanName": self.name, "status": self.status,
                "availabilityZone": self.zones[0] if self.zones else None,
                "startTime": fmt(self.start) if self.start else None,
                "endTime": fmt(self.end) if self.end else None,
                "instanceCount": self.instance_count,
                "instanceType": self.instance_types[0] if self.instance_types else None}


class TrainingPlanError(ConfigError):
    """No usable training plan for the request (the message lists what SageMaker offered)."""


def _offers(offerings: Iterable[Offering]) -> str:
    ranked = sorted(offerings, key=lambda o: (o.upfront_fee_usd is None, o.upfront_fee_usd or 0.0, o.offering_id))
    return "; ".join(o.describe() for o in ranked) or "none"


def fits(o: Offering, instance_type: str, count: int, hours: int, zones: Sequence[str]) -> bool:
    """One reservation of `count` x `instance_type` for `hours` in one of `zones`, for HyperPod,
    priced in USD. Several segments (discontinuous or in several zones) and UltraServers are
    other products: none is chosen."""
    if len(o.reserved) != 1 or HYPERPOD not in o.target_resources:
        return False
    r = o.reserved[0]
    return (r.instance_type == instance_type and r.instance_count >= count and r.kind == "Instance"
            and o.duration_hours == hours and o.currency == "USD" and o.upfront_fee_usd is not None
            and (not zones or r.zone in zones))


def choose_offering(offerings: Sequence[Offering], instance_type: str, count: int, hours: int,
                    zones: Sequence[str], prefer_zone: Optional[str] = None) -> Offering:
    """The cheapest fitting offering (then the earliest, then the id); `prefer_zone` (the zone of
    the plan being replaced) wins among equals. TrainingPlanError when none fits."""
    fitting = [o for o in offerings if fits(o, instance_type, count, hours, zones)]
    if not fitting:
        where = f" in {', '.join(zones)}" if zones else ""
        raise TrainingPlanError("kimi-k3:capacityEarliestStart", None,
                                "widen capacityEarliestStart/capacityLatestStart, change capacityDurationHours "
                                f"or try another aws:region (offers: {_offers(offerings)})",
                                f"has no training plan offering of {count} x {instance_type} for {hours} h "
                                f"for a HyperPod cluster{where} in one reservation")
    return min(fitting, key=lambda o: (o.upfront_fee_usd, o.zone != prefer_zone,
                                       o.start or datetime.max.replace(tzinfo=timezone.utc), o.offering_id))


def fee_guard(chosen: Offering, offerings: Sequence[Offering], max_upfront_fee_usd: float) -> None:
    """Buy only under the cap; a cap of 0 (the default) never buys, whatever the price."""
    price = chosen.upfront_fee_usd or 0.0
    if max_upfront_fee_usd <= 0:
        raise TrainingPlanError("kimi-k3:maxUpfrontFeeUsd", max_upfront_fee_usd,
                                f"set it to at least {max(1, math.ceil(price))} to buy the cheapest, or adopt "
                                f"a plan you own with kimi-k3:trainingPlanArn (offers, cheapest first: "
                                f"{_offers(offerings)})",
                                "is 0, so kimi-k3 buys no training plan (a purchase cannot be cancelled); "
                                "nothing was created")
    if price <= max_upfront_fee_usd:
        return
    raise TrainingPlanError("kimi-k3:maxUpfrontFeeUsd", max_upfront_fee_usd,
                            f"raise it to at least {math.ceil(price)} to buy the cheapest, or adopt a plan "
                            f"with kimi-k3:trainingPlanArn (offers: {_offers(offerings)})",
                            f"is below the cheapest fitting offer (${price:,.2f})")


def ended(end: Any, now: datetime) -> bool:
    return bool(end) and _utc(end) <= _utc(now)


def check_plan(plan: TrainingPlan, instance_type: str, count: int, zones: Sequence[str], now: datetime) -> None:
    """An adopted plan must be live, for HyperPod, of the right type and size, in one zone the
    stack has a subnet in."""
    key, arn = "kimi-k3:trainingPlanArn", plan.arn
    if plan.status not in USABLE or ended(plan.end, now):
        why = f": {plan.status_message}" if plan.status_message else ""
        raise TrainingPlanError(key, arn, "adopt or buy a plan that has not ended",
                                f"is {plan.status}{why} (ends {fmt(plan.end) if plan.end else '?'})")
    if HYPERPOD not in plan.target_resources:
        raise TrainingPlanError(key, arn, "adopt a plan bought for hyperpod-cluster",
                                f"is for {', '.join(plan.target_resources) or 'nothing'}, not a HyperPod cluster")
    if plan.instance_types != [instance_type]:
        raise TrainingPlanError(key, arn, f"use a plan of {instance_type} or change kimi-k3:accelerator",
                                f"holds {', '.join(plan.instance_types) or 'no instance type'}")
    if plan.instance_count < count:
        raise TrainingPlanError(key, arn, f"use a plan of at least {count} instances or lower kimi-k3:replicas",
                                f"holds only {plan.instance_count} instances")
    if len(plan.zones) != 1:
        raise TrainingPlanError(key, arn, "adopt a plan whose capacity is in one Availability Zone",
                                f"spans {', '.join(plan.zones) or 'no zone'} (one HyperPod instance group, one subnet)")
    if zones and plan.zones[0] not in zones:
        raise TrainingPlanError(key, arn, f"add a private subnet in {plan.zones[0]} (kimi-k3:privateSubnetIds) "
                                "or adopt a plan in a zone of your subnets",
                                f"is in {plan.zones[0]}, where the stack has no subnet ({', '.join(zones)})")


# ---------------------------------------------------------------- boto3 calls (client passed in)

def search_offerings(sm, instance_type: str, count: int, hours: int, earliest: Optional[str] = None,
                     latest: Optional[str] = None) -> List[Offering]:
    args: Dict[str, Any] = {"InstanceType": instance_type, "InstanceCount": count, "DurationHours": hours,
                            "TargetResources": [HYPERPOD]}
    if earliest:
        args["StartTimeAfter"] = _utc(earliest)
    if latest:
        args["EndTimeBefore"] = _utc(latest) + timedelta(hours=hours)
    page = sm.search_training_plan_offerings(**args)
    return [Offering.from_api(o) for o in page.get("TrainingPlanOfferings", [])]


def _code(err: Exception) -> str:
    from botocore.exceptions import ClientError

    return str(err.response.get("Error", {}).get("Code", "")) if isinstance(err, ClientError) else ""


def describe_plan(sm, name_or_arn: str) -> Optional[TrainingPlan]:
    """The plan, or None when SageMaker does not know it (ResourceNotFound)."""
    try:
        return TrainingPlan.from_api(sm.describe_training_plan(TrainingPlanName=name_or_arn))
    except Exception as err:  # noqa: BLE001 only ResourceNotFound means "no such plan"
        if _code(err) == "ResourceNotFound":
            return None
        raise


def create_plan(sm, name: str, offering: Offering, token: str, stack_name: Optional[str]) -> str:
    """Buy `offering` as `name`, tagged for the stack; the plan's ARN."""
    tags = [{"Key": IDENTITY_TAG, "Value": token}]
    if stack_name:
        tags.append({"Key": NAME_TAG, "Value": stack_name[:256]})
    return sm.create_training_plan(TrainingPlanName=name, TrainingPlanOfferingId=offering.offering_id,
                                   Tags=tags)["TrainingPlanArn"]


def _definitive(err: Exception) -> bool:
    """AWS refused the purchase (4xx): nothing was bought."""
    from botocore.exceptions import ClientError

    if isinstance(err, ClientError):
        status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return 400 <= int(status) < 500
    return False


def not_found(arn: str, region: Optional[str]) -> TrainingPlanError:
    where = region or "this region"
    return TrainingPlanError("kimi-k3:trainingPlanArn", arn, "check the ARN (aws sagemaker list-training-plans), "
                             f"aws:region (now {where}) and that your credentials are for its account",
                             f"was not found in {where}")


# ---------------------------------------------------------------- adopt or buy

def request_of(props: Mapping[str, Any]) -> Dict[str, Any]:
    return {"instanceType": props.get("instanceType"), "instanceCount": int(props.get("instanceCount") or 0)}


def _zones(props: Mapping[str, Any]) -> List[str]:
    return [z for z in props.get("zones") or [] if isinstance(z, str) and z]


def adopt(sm, props: Mapping[str, Any], now: datetime) -> Dict[str, Any]:
    plan = describe_plan(sm, props["trainingPlanArn"])
    if plan is None:
        raise not_found(props["trainingPlanArn"], getattr(sm.meta, "region_name", None))
    check_plan(plan, props["instanceType"], int(props["instanceCount"]), _zones(props), now)
    return {**plan.outputs(), "purchased": False, "upfrontFeeUsd": plan.upfront_fee_usd, "generation": None,
            "requested": request_of(props)}


def _adopt_mine(sm, props: Mapping[str, Any], now: datetime, token: str, gen: int):
    """This stack's plan of the first live generation from `gen` on (bought by an earlier run,
    interrupted or its answer lost), adopted; else None and the first free generation."""
    itype, count, zones = props["instanceType"], int(props["instanceCount"]), _zones(props)
    for _ in range(MAX_GENERATIONS):
        mine = describe_plan(sm, plan_name(token, gen))
        if mine is None:
            return None, gen
        if mine.status in USABLE and not ended(mine.end, now):
            check_plan(mine, itype, count, zones, now)
            return {**mine.outputs(), "purchased": True, "upfrontFeeUsd": mine.upfront_fee_usd,
                    "generation": gen, "adoptedByName": True, "requested": request_of(props)}, gen
        gen += 1
    raise TrainingPlanError("kimi-k3:maxUpfrontFeeUsd", props.get("maxUpfrontFeeUsd"),
                            "adopt a plan with kimi-k3:trainingPlanArn", f"found {MAX_GENERATIONS} ended "
                            f"plans named {plan_name(token, 1)[:-2]}-*; kimi-k3 stops looking")


def _relook(sm, props: Mapping[str, Any], name: str, chosen, err: Exception, sleep: Callable[[float], None]):
    """After a purchase call without a definitive answer: the plan by its name, looked up
    RELOOK_TRIES times (never bought again); refused when SageMaker never lists it."""
    for attempt in range(RELOOK_TRIES):
        found = describe_plan(sm, name)
        if found is not None:
            return found
        if attempt + 1 < RELOOK_TRIES:
            sleep(RELOOK_INTERVAL_S)
    raise TrainingPlanError("kimi-k3:maxUpfrontFeeUsd", props.get("maxUpfrontFeeUsd"),
                            f"check `aws sagemaker describe-training-plan --training-plan-name {name}`, "
                            "then run `pulumi up` again: it adopts that plan before it would buy",
                            f"purchase of {chosen.offering_id} as {name} got no answer "
                            f"({type(err).__name__}) and SageMaker does not list it yet") from None


def _bought_outputs(sm, name: str, arn: Optional[str], found, chosen, itype: str) -> Dict[str, Any]:
    """The bought plan's outputs: as SageMaker describes it, or as it was offered while it is not
    readable yet."""
    if found is None:
        found = describe_plan(sm, name)
    if found is not None:
        return found.outputs()
    r = chosen.reserved[0]
    return {"trainingPlanArn": arn, "trainingPlanName": name, "status": "Pending",
            "availabilityZone": r.zone, "startTime": fmt(r.start) if r.start else None,
            "endTime": fmt(r.end) if r.end else None, "instanceCount": r.instance_count, "instanceType": itype}


def acquire(sm, props: Mapping[str, Any], now: datetime, purchase_client=None,
            sleep: Callable[[float], None] = time.sleep, generation: int = 1,
            prefer_zone: Optional[str] = None) -> Dict[str, Any]:
    """Adopt `trainingPlanArn`, or this stack's plan of the first live generation from
    `generation` on, or buy one as that generation (see the module docstring); the outputs."""
    if props.get("trainingPlanArn"):
        return adopt(sm, props, now)
    token = props.get("stackToken")
    if not token:
        raise ValueError("stackToken is required to buy (the program passes it)")
    mine, gen = _adopt_mine(sm, props, now, token, max(1, int(generation)))
    if mine is not None:
        return mine
    itype, count, zones = props["instanceType"], int(props["instanceCount"]), _zones(props)
    hours = int(props["durationHours"])
    offers = search_offerings(sm, itype, count, hours, props.get("earliestStart"), props.get("latestStart"))
    chosen = choose_offering(offers, itype, count, hours, zones, prefer_zone)
    fee_guard(chosen, offers, float(props.get("maxUpfrontFeeUsd") or 0))
    name = plan_name(token, gen)
    arn, found = None, None
    try:
        arn = create_plan(purchase_client or sm, name, chosen, token, props.get("stackName"))
    except Exception as err:  # noqa: BLE001 decide whether it may have gone through
        if _definitive(err) and _code(err) != "ResourceInUse":
            raise
        found = _relook(sm, props, name, chosen, err, sleep)
    outs = _bought_outputs(sm, name, arn, found, chosen, itype)
    return {**outs, "purchased": True, "upfrontFeeUsd": chosen.upfront_fee_usd, "generation": gen,
            "offeringId": chosen.offering_id, "requested": request_of(props)}


def request_refusal(olds: Mapping[str, Any], news: Mapping[str, Any]) -> Optional[TrainingPlanError]:
    """Buy mode, a new request the running plan cannot hold: refused (never a second purchase)."""
    want = request_of(news)
    have_type, have_count = olds.get("instanceType"), int(olds.get("instanceCount") or 0)
    if have_type == want["instanceType"] and have_count >= want["instanceCount"]:
        return None
    key = "kimi-k3:accelerator" if have_type != want["instanceType"] else "kimi-k3:replicas"
    return TrainingPlanError(
        key, f"{want['instanceCount']} x {want['instanceType']}",
        "keep the request the plan holds, adopt a plan that fits with kimi-k3:trainingPlanArn, or change it "
        f"after the plan ends ({olds.get('endTime')})",
        f"does not fit training plan {olds.get('trainingPlanName')} that this stack bought ({have_count} x "
        f"{have_type}); a purchase cannot be cancelled, so kimi-k3 does not buy another while it runs")


# ---------------------------------------------------------------- the dynamic provider

def _now() -> datetime:
    return datetime.now(timezone.utc)


def _over(olds: Mapping[str, Any]) -> bool:
    return ended(olds.get("endTime"), _now()) or olds.get("status") in (*GONE, UNLISTED)


def sagemaker(props: Mapping[str, Any], max_attempts: int = 5):
    """A SageMaker client for the stack (`max_attempts=1` for the purchase: a retry after a
    timeout could buy twice, were it not for the name; one attempt keeps it to one call)."""
    return aws_api.client("sagemaker", props, max_attempts=max_attempts)


def _forgotten(name: str, end: Any) -> str:
    return (f"training plan {name} is forgotten, not cancelled (SageMaker has no API for that): it stays paid "
            f"until {end}")


def next_plan_notice(olds: Mapping[str, Any], news: Mapping[str, Any]) -> str:
    """What the next `up` does about a plan whose end (as the stack last saw it) has passed: an
    adopted one is re-read and stops the update unless it was extended (ExtendTrainingPlan keeps
    the ARN); in buy mode the next generation is bought within the cap, or the offers are listed.
    Warned at preview by `diff`, so a purchase is never a surprise."""
    head = (f"training plan {olds.get('trainingPlanName') or olds.get('trainingPlanArn')} ended at "
            f"{olds.get('endTime')} ({olds.get('status')} when last read)")
    if news.get("trainingPlanArn"):
        return (f"{head}: this `pulumi up` re-reads it and stops unless it was extended; adopt the next plan with "
                "pulumi config set kimi-k3:trainingPlanArn arn:..., or unset it and set kimi-k3:maxUpfrontFeeUsd "
                "to let kimi-k3 buy one")
    cap_usd = float(news.get("maxUpfrontFeeUsd") or 0)
    what = f"{news.get('instanceCount')} x {news.get('instanceType')}"
    keep = "this `pulumi up` keeps it if it was extended"
    if cap_usd <= 0:
        return (f"{head}: {keep}, else lists the training plan offerings of {what} and stops, buying "
                "nothing (kimi-k3:maxUpfrontFeeUsd is 0)")
    return (f"{head}: {keep}, else BUYS the next training plan of {what}, the cheapest fitting offer if its "
            f"upfront fee is at most ${cap_usd:,.2f} (kimi-k3:maxUpfrontFeeUsd; a purchase cannot be cancelled); "
            "to buy nothing, cancel this update and set kimi-k3:maxUpfrontFeeUsd 0 (lists the offers) or adopt a "
            "plan with kimi-k3:trainingPlanArn")


class TrainingPlanProvider(aws_api.AwsProvider):
    """One training plan (adopted or bought). Holds no state."""

    OUTPUTS = ("trainingPlanArn", "trainingPlanName", "status", "availabilityZone", "startTime", "endTime",
               "instanceCount", "instanceType", "upfrontFeeUsd", "purchased", "generation", "adoptedByName",
               "offeringId", "requested")
    INPUTS = {"region": None, aws_api.AWS_INPUT: None, aws_api.SECRETS_INPUT: None, "trainingPlanArn": None,
              "instanceType": None, "instanceCount": None, "durationHours": None, "earliestStart": None,
              "latestStart": None, "maxUpfrontFeeUsd": None, "stackToken": None, "stackName": None, "zones": None,
              "clusterVersion": None, "addons": None}

    def check_inputs(self, news):
        out = []
        for key in ("region", "instanceType", "instanceCount"):
            if not news.get(key):
                out.append(CheckFailure(key, "required"))
        return out

    def _check_addons(self, props) -> None:
        """The add-ons installed after the plan, checked before it is bought or adopted
        (addon_check.py); the program always passes `clusterVersion` and `addons`."""
        if not props.get("addons"):
            return
        for note in addon_check.verify(aws_api.client("eks", props), str(props.get("clusterVersion")),
                                       props["addons"]):
            self.warn(note)

    def _acquire(self, props, generation: int = 1, prefer_zone: Optional[str] = None):
        self._check_addons(props)
        return acquire(sagemaker(props), props, _now(), purchase_client=sagemaker(props, max_attempts=1),
                       generation=generation, prefer_zone=prefer_zone)

    def create(self, props):
        outs = self._acquire(props)
        return CreateResult(outs.get("trainingPlanArn") or outs["trainingPlanName"], {**props, **outs})

    def diff(self, id_, olds, news):
        """Another region: another plan (replace; in buy mode while the bought plan runs, refused
        here: the new region would get a second purchase). Another adopted ARN: an update that adopts and
        checks it. Adopted, a changed request or an ended plan: an update that re-checks it.
        Bought, ended: an update that buys the next generation under the same cap. Bought, a
        changed request the plan cannot hold: refused here (at preview). The cap or the window
        alone changes nothing. A plan that looks over (by the state's end) gets a warning saying
        what the update will do (`next_plan_notice`), and the update reads it again first
        (`_extended`: an extended plan is kept, not bought again).

        `trainingPlanArn` is an input (adopt) and an output (the plan held, bought ones too): the
        state's value is the plan held, so only an ARN the user gives can differ from it (a bought
        plan's ARN against no input is the same plan). A replace is never used for another plan:
        delete-before-replace would first delete what takes a replacing input from the plan (the
        HyperPod cluster: its vpcConfig, through the plan's zone, replaces on change)."""
        o, n = self.inputs(olds), self.inputs(news)
        if o.get("region") != n.get("region"):
            if olds.get("purchased") and not n.get("trainingPlanArn") and not _over(olds):
                # the new region would get a second purchase while this one runs (never twice)
                raise TrainingPlanError(
                    "aws:region", n.get("region"), f"keep aws:region {o.get('region')} until the plan ends "
                    f"({olds.get('endTime')}), adopt a plan of the new region with kimi-k3:trainingPlanArn, or "
                    "`pulumi destroy` first (it forgets the plan, which stays paid)", "would buy a second "
                    f"training plan while {olds.get('trainingPlanName')}, bought by this stack in "
                    f"{o.get('region')}, runs; a purchase cannot be cancelled")
            return DiffResult(changes=True, replaces=["region"], delete_before_replace=True)
        other_plan = bool(n.get("trainingPlanArn")) and n["trainingPlanArn"] != o.get("trainingPlanArn")
        over, changed = _over(olds), request_of(olds.get("requested") or olds) != request_of(news)
        if over and not other_plan:
            # said at preview, before the update decides: never a purchase the user did not see coming
            self.warn(next_plan_notice(olds, n))
        if not n.get("trainingPlanArn") and changed and not over:
            refusal = request_refusal(olds, news)
            if refusal is not None:
                raise refusal
        return DiffResult(changes=over or changed or other_plan, replaces=[], delete_before_replace=True)

    def update(self, id_, olds, news):
        if news.get("trainingPlanArn"):
            self._check_addons(news)
            outs = adopt(sagemaker(news), news, _now())
            held = olds.get("trainingPlanArn")
            if olds.get("purchased") and held and held != outs.get("trainingPlanArn") and not _over(olds):
                self.warn(_forgotten(olds.get("trainingPlanName") or held, olds.get("endTime")))
        elif _over(olds):
            outs = self._extended(olds, news)
            if outs is None:
                outs = self._acquire(news, int(olds.get("generation") or 1) + 1, olds.get("availabilityZone"))
        else:
            refusal = request_refusal(olds, news)
            if refusal is not None:
                raise refusal
            outs = {k: olds.get(k) for k in self.OUTPUTS}
            outs["requested"] = request_of(news)
        return UpdateResult({**news, **outs})

    def _extended(self, olds, news) -> Optional[Dict[str, Any]]:
        """Buy mode, the plan held looks over only by the end the stack last read: SageMaker may
        have extended it (ExtendTrainingPlan keeps the plan; pinned SageMaker model), so it is
        read again before anything is bought, and kept if it runs on. Buying the next generation
        then would pay for a second plan while the first runs (the generation search starts after
        the held one). A plan a refresh recorded as Expired, Failed or Unlisted is not read again."""
        if olds.get("status") in (*GONE, UNLISTED):
            return None
        plan = describe_plan(sagemaker(news), olds.get("trainingPlanArn") or olds.get("trainingPlanName"))
        if plan is None or plan.status not in USABLE or ended(plan.end, _now()):
            return None
        held = {**olds, **plan.outputs()}
        refusal = request_refusal(held, news)
        if refusal is not None:
            raise refusal
        return {**{k: olds.get(k) for k in self.OUTPUTS}, **plan.outputs(), "requested": request_of(news)}

    def read(self, id_, props):
        """Refresh: the plan as SageMaker describes it now; `Unlisted` once it does not."""
        plan = describe_plan(sagemaker(props), props.get("trainingPlanArn") or id_)
        if plan is None:
            return ReadResult(id_, {**props, "status": UNLISTED})
        return ReadResult(id_, {**props, **plan.outputs()})

    def delete(self, id_, props):
        # nothing to call: SageMaker has no operation to cancel or delete a training plan
        self.warn(_forgotten(props.get("trainingPlanName") or id_, props.get("endTime")))


class TrainingPlanResource(DynamicResource, module="aws", name="TrainingPlan"):
    """The training plan the HyperPod instance group runs on (`pulumi-python:dynamic/aws:TrainingPlan`).

    Inputs: `region`, `aws`/`awsSecrets` (aws_api.py), `instanceType` (ml.*), `instanceCount`,
    `zones` (where the stack has subnets), and either `trainingPlanArn` (adopt) or
    `durationHours`, `earliestStart`, `latestStart`, `maxUpfrontFeeUsd`, `stackToken` and
    `stackName` (buy).
    """

    trainingPlanArn: pulumi.Output[str]
    trainingPlanName: pulumi.Output[str]
    availabilityZone: pulumi.Output[str]
    startTime: pulumi.Output[str]
    endTime: pulumi.Output[str]
    status: pulumi.Output[str]
    upfrontFeeUsd: pulumi.Output[Any]
    purchased: pulumi.Output[bool]

    def __init__(self, name: str, props: Dict[str, Any], opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TrainingPlanProvider(), name, props, opts)
