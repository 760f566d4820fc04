"""What a cluster bills besides its servers: found while the cluster exists, proven released
after it is deleted.

E-HPC orders the master's EIP (`eipCreateMethod: AutoCreate`) and the file system
(`storageConfig` `sfsOrder`/`oceanFSOrder`) with the cluster (doc 23930), and whether
`delete-cluster` releases them is not documented (CTyun contract 6.3, 6.19). So:
- `find` records, while the cluster is listed, the EIP's id (`eip/new-list` by the cluster's
  `publicIP`, CTyun contract 3.14) and the file system's id (its service's `list-sfs`, by the
  name the order gave it: names are unique per user and region, doc 23930; CTyun contract 8);
- `leftovers` asks, after the delete: the EIP by id (`eip/show`: `Openapi.Eip.NotFound` or
  `DELETED` is released, `DELETING` is on its way; CTyun's Terraform provider reads
  Openapi.Eip.NotFound as deleted, resource_ctyun_eip.go line 371), the file system by id
  (`info-sfs`: an answer means it is held, `deleting` on its way). What `info-sfs` answers for a
  released id is undocumented, so a refusal is never read as "released" by itself: the
  service's listing, read to its end, must no longer hold the id.
A file system the stack did not order (`ctyun:storageUid`) is not the stack's to prove released.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from .api.errors import ApiError
from .api.storage import FileSystems
from .api.transport import Transport
from .api.vpc import EIP_GOING, VpcApi

log = logging.getLogger("kimi_k3.ctyun")


@dataclass(frozen=True)
class Billables:
    """The EIP and file system of one cluster, as recorded in state ("" = none / unknown)."""

    eip_id: str = ""
    eip_address: str = ""
    fs_id: str = ""
    fs_name: str = ""
    fs_kind: str = ""      # sfs | oceanfs ("" = not ordered by the stack)

    KEYS = ("eipID", "eipAddress", "fileSystemID", "fileSystemName", "fileSystemType")

    def to_dict(self) -> Dict[str, str]:
        return dict(zip(self.KEYS, (self.eip_id, self.eip_address, self.fs_id, self.fs_name,
                                    self.fs_kind)))

    @classmethod
    def from_dict(cls, d: Optional[Dict[str, Any]]) -> "Billables":
        d = d or {}
        return cls(*(str(d.get(k) or "") for k in cls.KEYS))

    def merged(self, other: "Billables") -> "Billables":
        """This record, its blanks filled from `other`."""
        return Billables(*(a or b for a, b in zip(
            (self.eip_id, self.eip_address, self.fs_id, self.fs_name, self.fs_kind),
            (other.eip_id, other.eip_address, other.fs_id, other.fs_name, other.fs_kind))))


@dataclass(frozen=True)
class Ordered:
    """What the order asked E-HPC for besides servers (from the order's inputs)."""

    eip: bool
    fs_name: str = ""
    fs_kind: str = ""      # "" when the cluster uses an existing file system (UseExist)


def find(transport: Transport, region_id: str, public_ip: Optional[str], ordered: Ordered,
         deadline=None) -> Billables:
    """The ids of the cluster's EIP and file system, looked up while it exists; "" for what is
    not listed (yet), which `leftovers` then looks for by address or name."""
    eip_id = ""
    if ordered.eip and public_ip:
        found = VpcApi(transport, region_id).find_eips(public_ip, deadline)
        eip_id = found[0].eip_id if len(found) == 1 else ""
    fs_id = ""
    if ordered.fs_kind and ordered.fs_name:
        found_fs = FileSystems(transport, region_id, ordered.fs_kind).find(ordered.fs_name,
                                                                           deadline)
        fs_id = found_fs[0].uid if len(found_fs) == 1 else ""
    return Billables(eip_id, (public_ip or "") if ordered.eip else "", fs_id,
                     ordered.fs_name if ordered.fs_kind else "", ordered.fs_kind)


def _eip_left(vpc: VpcApi, b: Billables, deadline) -> Tuple[Optional[str], bool]:
    """(what is held, still going away) of the EIP."""
    if b.eip_id:
        e = vpc.get_eip(b.eip_id, deadline)
        if e is None or e.released:
            return None, False
        return f"{e.label()}", e.status in EIP_GOING
    if b.eip_address:
        held = [e for e in vpc.find_eips(b.eip_address, deadline) if not e.released]
        if held:
            return "; ".join(e.label() for e in held), all(e.status in EIP_GOING for e in held)
    return None, False


def _fs_left(transport: Transport, region_id: str, b: Billables,
             deadline) -> Tuple[Optional[str], bool]:
    """(what is held, still going away) of the file system."""
    if not b.fs_kind:
        return None, False
    api = FileSystems(transport, region_id, b.fs_kind)
    if b.fs_id:
        try:
            f = api.info(b.fs_id, deadline)
            return f.label(), f.status == "deleting"
        except ApiError as e:
            refusal = f"{e.code}: {e.message}"
        held = [f for f in api.list_all(deadline) if f.uid == b.fs_id]
        if held:
            return f"{held[0].label()} (info-sfs refused it: {refusal})", \
                held[0].status == "deleting"
        return None, False
    if b.fs_name:
        held = api.find(b.fs_name, deadline)
        if held:
            return "; ".join(f.label() for f in held), all(f.status == "deleting"
                                                         for f in held)
    return None, False


def leftovers(transport: Transport, region_id: str, b: Billables,
              deadline=None) -> Tuple[List[str], bool]:
    """What of `b` is still held (one text each: id, address or name, status), and whether all
    of it is on its way out (then asking again later may find it released)."""
    held, going = [], True
    for what, still_going in (_eip_left(VpcApi(transport, region_id), b, deadline),
                              _fs_left(transport, region_id, b, deadline)):
        if what:
            held.append(what)
            going = going and still_going
    return held, bool(held) and going
