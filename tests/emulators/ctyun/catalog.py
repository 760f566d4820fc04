"""What the emulated account sees in the E-HPC catalog: region, AZs, cluster type, specs, images.

Shapes follow the CTyun contract (2.2-2.5, tests/contracts/ctyun): one cluster type `SCHEDULER` / `SLURM` with the
roles `master` and `compute`; specifications nested per role and described by their name only;
images per (specification, role). Names marked INVENTED are not public (CTyun contract
6.9: the 910C bare-metal specification and image names are unknown): a client must select
by what it is configured with, never by a name it guesses. The documented example names
(`physical.2.large.1.hpc`, `s3.large.2`, CentOS 7.9) are kept next to them.

Hidden properties (cores, memory, disks, kind of bare metal) are what the service knows but
does not list; the emulator uses them for list-clusters' cpu/memory counts and for the
RAID/cloud-disk/subnet rules of bare-metal orders. The bare-metal catalogue (CTyun contract 7)
lists each bare-metal specification as a device type of the same name (whether E-HPC's names
are EBM device types is open question 6.15: `Settings.device_type_is_spec_name` plays "no")
with its local disks counted as API 4574 counts them: system, data and NVMe volumes apart.
The RAID types of a device type (API 4576) are RAID0 and RAID1 per kind of local disk it has,
the only two CTyun's documented example shows; their uuids are INVENTED (r- + 28 characters, the
documented form).
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
    #: local disks as device-type-list counts them (CTyun contract 7.1): a RAID uuid is required
    #: for system and data volumes, never for NVMe volumes
    system_volumes: int = 0
    data_volumes: int = 0
    nvme_volumes: int = 0
    cloud_boot: bool = False    # boots from a cloud disk: cloudSystemDisk* allowed
    #: elastic bare metal wants an ordinary subnet, standard a bare-metal one (doc 23930)
    bare_metal: str = "elastic"
    invented: bool = False


SPEC_910C = "physical.lcas910c.2xlarge1"          # INVENTED 910C bare-metal name
SPEC_MASTER_VM = "c7.2xlarge.4"                   # INVENTED (a common CTyun VM flavour name)
SPECS: Tuple[Spec, ...] = (
    # INVENTED disks: 2 local system SSDs (the form of CTyun's examples, "2*480GB(SSD)") and the
    # seed's 2 x 3.2 TB NVMe; how the real A3 reports them is open question 6.16 (Settings)
    # the seed's master is a 910C node too (it joins the queue): offered in both roles
    Spec("dvt-k3npu910cbms0000000000000001", SPEC_910C, "BMS", ("master", "compute"), 320,
         1572864, system_volumes=2, nvme_volumes=2, invented=True),
    Spec("dvt-urvkkx5emxlgptea7x2jfcwuwojj", "physical.2.large.1.hpc", "BMS",
         ("master", "compute"), 64, 262144, system_volumes=2),   # CTyun contract 2.4 example
    Spec("dvt-dlmzogfdvcybe8bhndz8uepgz5ki", "s3.large.2", "VM", ("compute",), 2, 4096),
    Spec("dvt-k3mastervm000000000000000001", SPEC_MASTER_VM, "VM", ("master",), 8, 16384,
         invented=True),
)
RAID_NAMES = ("RAID0", "RAID1")
VOLUME_DETAIL = {"system": "2*480 SSD", "data": "2*3200 NVMe SSD"}


def raid_uuid(device_type: str, volume_type: str, name: str) -> str:
    """The INVENTED uuid of a RAID type (stable per device type, kind and name)."""
    import hashlib
    digest = hashlib.sha256(f"{device_type}/{volume_type}/{name}".encode()).hexdigest()
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "r-" + "".join(alphabet[int(digest[i:i + 2], 16) % 36] for i in range(0, 56, 2))


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
    Image("im-k3ascend910cmaster0000000001", "CTyunOS-HPC-Ascend", "23.01-910C", "BMS", "GPU",
          "master", (SPEC_910C,), invented=True),
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
