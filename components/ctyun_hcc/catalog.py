"""Which cluster type, roles, specifications and images to order, found by listing.

The catalog APIs take `azName` and group specifications and images per role (CTyun contract 2.3-
2.5); they carry no NPU field, and the Ascend 910C bare-metal specification names are not
public. So the choice is: what the config names (`ctyun:specification`, `ctyun:image`, ... by
name or UUID), else the only candidate; anything else is a clear error listing what the AZ
offers, before anything is ordered. The cluster type is the documented `SCHEDULER`/`SLURM`
one (the console's edition names are not values of the API). For a bare-metal specification the
RAID fields its orders need are chosen here too, by listing its local disks (raid.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, List, Optional, Sequence

from .api.ebm import Ebm
from .api.ehpc import (CLUSTER_TYPE_NAME, SCHEDULER_TYPE, ClusterType, Ehpc, Image,
                       Specification)
from .api.errors import CtyunError
from .raid import RaidChoice, RaidLayout, layout_for


class ResolveError(CtyunError):
    """The config names nothing (or several things) in the AZ's catalog."""


@dataclass(frozen=True)
class Choice:
    """What the config asks for ("" = decide by listing)."""

    cluster_type: str = ""
    specification: str = ""
    master_specification: str = ""
    image: str = ""
    master_image: str = ""
    storage_type: str = "sfs"


@dataclass(frozen=True)
class Resolved:
    """Catalog ids the create and expand orders need."""

    cluster_type_uuid: str
    master_role_uuid: str
    compute_role_uuid: str
    compute_spec_uuid: str
    compute_spec_name: str
    compute_spec_type: str
    master_spec_uuid: str
    master_spec_name: str
    master_spec_type: str
    compute_image_uuid: str
    compute_image: str
    master_image_uuid: str
    master_image: str
    #: the RAID fields of the bare-metal orders per role (raid.RaidLayout.to_dict); {} = none
    #: (a VM, or a state written before RAID was resolved)
    master_raid: Dict[str, str] = field(default_factory=dict)
    compute_raid: Dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Resolved":
        out: Dict[str, Any] = {}
        for f in fields(cls):
            if f.name.endswith("_raid"):
                raid = data.get(f.name)
                out[f.name] = RaidLayout.from_dict(raid).to_dict() if raid else {}
            else:
                out[f.name] = str(data[f.name])
        return cls(**out)

    def raid(self, role: str) -> RaidLayout:
        """The RAID fields of `role`'s orders ("master" or "compute")."""
        return RaidLayout.from_dict(self.master_raid if role == "master" else self.compute_raid)


def _one_of(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "(none listed)"


def _pick_region_az(ehpc: Ehpc, az_name: str, storage_type: str, deadline) -> None:
    regions = ehpc.list_regions(deadline)
    region = [r for r in regions if r.region_id == ehpc.region_id]
    if not region:
        raise ResolveError(f"ctyun:regionId={ehpc.region_id!r} is not listed by list-regions; "
                           f"use one of: {_one_of([r.region_id for r in regions])}")
    azs = region[0].azs
    if azs is None:
        return  # the older answer shape lists no AZs: the AZ is checked by the next calls
    az = [a for a in azs if a.name == az_name]
    if not az:
        raise ResolveError(f"ctyun:azName={az_name!r} is not an AZ of region "
                           f"{ehpc.region_id}; use one of: {_one_of([a.name for a in azs])}")
    support = az[0].supports_sfs if storage_type == "sfs" else az[0].supports_oceanfs
    if support is False:
        other = "oceanfs" if storage_type == "sfs" else "sfs"
        raise ResolveError(f"ctyun:storageType={storage_type!r}: AZ {az_name} does not offer it "
                           f"(list-regions says isSupport{'SFS' if storage_type == 'sfs' else 'OceanFS'}"
                           f" false); use ctyun:storageType={other}")


def _pick_type(types: List[ClusterType], wanted: str) -> ClusterType:
    listed = [f"{t.name}/{t.scheduler} ({t.uuid})" for t in types]
    if wanted:
        found = [t for t in types if wanted in (t.uuid, t.name)]
        if len(found) == 1:
            return found[0]
        raise ResolveError(f"ctyun:clusterType={wanted!r} matches {len(found)} of the listed "
                           f"cluster types; give one UUID of: {_one_of(listed)}")
    found = [t for t in types if t.name == CLUSTER_TYPE_NAME and t.scheduler == SCHEDULER_TYPE]
    if len(found) != 1:
        raise ResolveError(f"list-cluster-types offers {len(found)} {CLUSTER_TYPE_NAME}/"
                           f"{SCHEDULER_TYPE} types (listed: {_one_of(listed)}); set "
                           "ctyun:clusterType to the UUID of the one to use")
    return found[0]


def _role(t: ClusterType, name: str) -> str:
    uuids = t.role(name)
    if len(uuids) != 1:
        raise ResolveError(f"cluster type {t.uuid} lists {len(uuids)} '{name}' roles (roles: "
                           f"{_one_of([n for n, _ in t.roles])}); E-HPC's documented types "
                           "have one master and one compute role")
    return uuids[0]


def _match_spec(specs: Sequence[Specification], wanted: str, key: str,
                role: str) -> Specification:
    listed = [f"{s.name} ({s.type}, {s.uuid})" for s in specs]
    if wanted:
        found = [s for s in specs if wanted in (s.uuid, s.name)]
        if len(found) == 1:
            return found[0]
        raise ResolveError(f"ctyun:{key}={wanted!r} matches {len(found)} {role} specifications "
                           f"of this AZ; use one of: {_one_of(listed)}")
    bms = [s for s in specs if s.type == "BMS"]
    if len(bms) == 1:
        return bms[0]
    raise ResolveError(f"ctyun:{key} is not set and this AZ offers {len(bms)} bare-metal "
                       f"{role} specifications (the Ascend 910C names are not public, so none "
                       f"is picked by guess); set ctyun:{key} to one of: {_one_of(listed)}")


def _match_image(images: Sequence[Image], wanted: str, key: str, spec: Specification,
                 role: str) -> Image:
    fitting = [i for i in images if i.node_type == spec.type]
    listed = [i.label() for i in images]
    if wanted:
        found = [i for i in images if wanted in (i.uuid, i.name, f"{i.name} {i.version}")]
        if len(found) == 1 and found[0].node_type == spec.type:
            return found[0]
        raise ResolveError(f"ctyun:{key}={wanted!r} matches {len(found)} {spec.type} {role} "
                           f"images for {spec.name}; use one of: {_one_of(listed)}")
    if len(fitting) == 1:
        return fitting[0]
    raise ResolveError(f"ctyun:{key} is not set and {len(fitting)} {role} images fit "
                       f"{spec.name}; set ctyun:{key} to one of: {_one_of(listed)}")


def _images_of(groups, role_uuid: str, role_name: str) -> List[Image]:
    return [i for g in groups if g.role_uuid == role_uuid or g.role_name == role_name
            for i in g.images]


def _raid_layouts(ehpc: Ehpc, az_name: str, master: Specification, compute: Specification,
                  raid: RaidChoice, deadline) -> Dict[str, Dict[str, str]]:
    """The RAID fields per role for the bare-metal specifications (raid.py); one lookup per
    distinct specification."""
    ebm = Ebm(ehpc.t, ehpc.region_id)
    done: Dict[str, Dict[str, str]] = {}
    out: Dict[str, Dict[str, str]] = {}
    for role, spec in (("compute", compute), ("master", master)):
        if spec.type != "BMS":
            out[role] = {}
            continue
        if spec.uuid not in done:
            done[spec.uuid] = layout_for(ebm, az_name, spec.name, raid, deadline).to_dict()
        out[role] = done[spec.uuid]
    return out


def resolve(ehpc: Ehpc, az_name: str, choice: Choice, deadline=None,
            raid: Optional[RaidChoice] = None) -> Resolved:
    """The catalog ids for `choice` in `az_name`, or ResolveError naming the key to set.

    Four listings when master and compute use one specification (regions, types,
    specifications of all roles, images of that specification), five otherwise; with `raid`
    (the orders' RAID choice), the bare-metal lookups of raid.py follow (RaidError).
    """
    _pick_region_az(ehpc, az_name, choice.storage_type, deadline)
    ctype = _pick_type(ehpc.list_cluster_types(az_name, deadline), choice.cluster_type)
    master_role, compute_role = _role(ctype, "master"), _role(ctype, "compute")
    groups = ehpc.list_specifications(az_name, deadline=deadline)

    def specs_of(role_uuid: str, role_name: str) -> List[Specification]:
        return [s for g in groups if g.role_uuid == role_uuid or g.role_name == role_name
                for s in g.specifications]

    compute = _match_spec(specs_of(compute_role, "compute"), choice.specification,
                          "specification", "compute")
    master_specs = specs_of(master_role, "master")
    if choice.master_specification:
        master = _match_spec(master_specs, choice.master_specification, "masterSpecification",
                             "master")
    else:
        same = [s for s in master_specs if s.uuid == compute.uuid] or \
            [s for s in master_specs if s.name == compute.name]
        if len(same) != 1:
            raise ResolveError(
                f"the master role does not offer the compute specification {compute.name} "
                f"(the seed's master is a 910C node too); set ctyun:masterSpecification to "
                f"one of: {_one_of([f'{s.name} ({s.type})' for s in master_specs])}")
        master = same[0]
    compute_groups = ehpc.list_available_images(az_name, compute.uuid, deadline=deadline)
    master_groups = compute_groups if master.uuid == compute.uuid else \
        ehpc.list_available_images(az_name, master.uuid, deadline=deadline)
    cimg = _match_image(_images_of(compute_groups, compute_role, "compute"), choice.image,
                        "image", compute, "compute")
    mimg = _match_image(_images_of(master_groups, master_role, "master"), choice.master_image,
                        "masterImage", master, "master")
    layouts = _raid_layouts(ehpc, az_name, master, compute, raid, deadline) \
        if raid is not None else {"master": {}, "compute": {}}
    return Resolved(ctype.uuid, master_role, compute_role, compute.uuid, compute.name,
                    compute.type, master.uuid, master.name, master.type, cimg.uuid,
                    cimg.label(), mimg.uuid, mimg.label(), layouts["master"],
                    layouts["compute"])


def describe(resolved: Optional[Resolved]) -> str:
    if resolved is None:
        return "-"
    text = (f"type {resolved.cluster_type_uuid}, compute {resolved.compute_spec_name} / "
            f"{resolved.compute_image}, master {resolved.master_spec_name} / "
            f"{resolved.master_image}")
    raids = [f"{role} {resolved.raid(role).describe()}" for role in ("compute", "master")
             if getattr(resolved, f"{role}_raid")]
    return text + (f"; RAID: {'; '.join(raids)}" if raids else "")
