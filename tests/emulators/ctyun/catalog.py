"""What the emulated account sees in the E-HPC catalog: region, AZs, cluster type, specs, images.

Shapes follow the CTyun contract (2.2-2.5, tests/contracts/ctyun): one cluster type `SCHEDULER` / `SLURM` with the
roles `master` and `compute`; specifications nested per role and described by their name only;
images per (specification, role). Names marked INVENTED are not public (CTyun contract
6.9: the 910C bare-metal specification and image names are unknown): a client must select
by what it is configured with, never by a name it guesses. The documented example names
(`physical.2.large.1.hpc`, `s3.large.2`, CentOS 7.9) are kept next to them.

Hidden properties (cores, memory, disks, kind of bare metal) are what the service knows but
does not list; the emulator uses them for list-clusters' cpu/memory counts and for the
RAID/cloud-disk rule of bare-metal orders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

REGION = "bb9fdb42056f11eda1610242ac110002"      # CTyun contract 2.2 example
REGION_NAME = "华东1"
AZ = "cn-huadong1-jsnj1A-public-ctcloud"         # CTyun contract 2.2 example
AZ2 = "cn-huadong1-jsnj2A-public-ctcloud"        # INVENTED: a second AZ without file services
AZS: Dict[str, Dict[str, bool]] = {
    AZ: {"isSupportECS": True, "isSupportSFS": True, "isSupportOceanFS": True},
    AZ2: {"isSupportECS": True, "isSupportSFS": False, "isSupportOceanFS": False},
}

CLUSTER_TYPE = "SCHEDULER"                        # CTyun contract 2.3 (the only documented value)
SCHEDULER = "SLURM"
CLUSTER_TYPE_UUID = "ct-jn8sm0bejygcdglhpljbddjll9ro"   # CTyun contract 2.3 example ids
MASTER_ROLE_UUID = "ctr-p5ovib1kiarzxl4mopyf591aofo9"
COMPUTE_ROLE_UUID = "ctr-xc9m7wmac0bflq0golsg97tlqg5q"
ROLES = {MASTER_ROLE_UUID: "master", COMPUTE_ROLE_UUID: "compute"}


@dataclass(frozen=True)
class Spec:
    uuid: str
    name: str
    type: str              # VM | BMS
    roles: Tuple[str, ...]
    cores: int
    memory_mb: int
    local_disks: bool = False   # bare metal with local disks: RAID UUIDs required
    cloud_boot: bool = False    # boots from a cloud disk: cloudSystemDisk* allowed
    invented: bool = False


SPEC_910C = "physical.lcas910c.2xlarge1"          # INVENTED 910C bare-metal name
SPEC_MASTER_VM = "c7.2xlarge.4"                   # INVENTED (a common CTyun VM flavour name)
SPECS: Tuple[Spec, ...] = (
    Spec("dvt-k3npu910cbms0000000000000001", SPEC_910C, "BMS", ("compute",), 320, 1572864,
         invented=True),
    Spec("dvt-urvkkx5emxlgptea7x2jfcwuwojj", "physical.2.large.1.hpc", "BMS",
         ("master", "compute"), 64, 262144),                      # CTyun contract 2.4 example
    Spec("dvt-dlmzogfdvcybe8bhndz8uepgz5ki", "s3.large.2", "VM", ("compute",), 2, 4096),
    Spec("dvt-k3mastervm000000000000000001", SPEC_MASTER_VM, "VM", ("master",), 8, 16384,
         invented=True),
)


@dataclass(frozen=True)
class Image:
    uuid: str
    name: str
    version: str
    node_type: str
    arch: str
    role: str
    specs: Tuple[str, ...]      # specification names it runs on
    invented: bool = False


IMAGES: Tuple[Image, ...] = (
    # INVENTED: the Ascend compute image (the enum has only CPU/GPU; an NPU image reads GPU here)
    Image("im-k3ascend910ccompute000000001", "CTyunOS-HPC-Ascend", "23.01-910C", "BMS", "GPU",
          "compute", (SPEC_910C,), invented=True),
    Image("im-ckpyqfhbdkkacij5zfs0-compute", "CentOS", "7.9", "BMS", "CPU", "compute",
          ("physical.2.large.1.hpc",)),                           # CTyun contract 2.5 example
    Image("im-ckpyqfhbdkkacij5zfsn0-master", "CentOS", "7.9", "BMS", "CPU", "master",
          ("physical.2.large.1.hpc",)),                           # CTyun contract 2.5 example
    Image("im-k3centosvmcompute00000000001", "CentOS", "7.9", "VM", "CPU", "compute",
          ("s3.large.2",), invented=True),
    Image("im-k3ctyunosvmmaster00000000001", "CTyunOS", "23.01", "VM", "CPU", "master",
          (SPEC_MASTER_VM,), invented=True),
)


def spec_by_uuid(uuid: str) -> Spec:
    for s in SPECS:
        if s.uuid == uuid:
            return s
    raise KeyError(uuid)


def spec_uuid(name: str) -> str:
    return next(s.uuid for s in SPECS if s.name == name)


def image_for(spec_name: str, role: str) -> str:
    return next(i.uuid for i in IMAGES if spec_name in i.specs and i.role == role)


def cluster_types() -> List[dict]:
    return [{"clusterTypeName": CLUSTER_TYPE, "schedulerType": SCHEDULER,
             "clusterTypeUUID": CLUSTER_TYPE_UUID,
             "roleList": [{"clusterTypeRoleName": name, "clusterTypeRoleUUID": uuid}
                          for uuid, name in ROLES.items()]}]


def specifications(role_uuid: str = "") -> List[dict]:
    out = []
    for uuid, role in ROLES.items():
        if role_uuid and role_uuid != uuid:
            continue
        out.append({"clusterTypeRoleName": role, "clusterTypeRoleUUID": uuid,
                    "specificationList": [
                        {"specificationName": s.name, "specificationUUID": s.uuid,
                         "specificationType": s.type} for s in SPECS if role in s.roles]})
    return out


def images(spec_uuid_: str, role_uuid: str = "") -> List[dict]:
    spec = next((s for s in SPECS if s.uuid == spec_uuid_), None)
    out = []
    for uuid, role in ROLES.items():
        if spec is None or role not in spec.roles or (role_uuid and role_uuid != uuid):
            continue
        out.append({"clusterTypeRoleName": role, "clusterTypeRoleUUID": uuid,
                    "imageList": [
                        {"imageUUID": i.uuid, "name": i.name, "version": i.version,
                         "nodeType": i.node_type, "architectureType": i.arch}
                        for i in IMAGES if i.role == role and spec.name in i.specs]})
    return out
