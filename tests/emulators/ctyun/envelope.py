"""CTyun's answer envelopes, one per API family (CTyun contract 1.3), built from the contract.

- E-HPC `hpc/` and 239xx APIs: statusCode, error ("" on success), message ("成功"), returnObj;
- older E-HPC APIs (delete-cluster): statusCode, errorCode (""), message ("SUCCESS"),
  description, returnObj;
- VPC: statusCode, errorCode ("SUCCESS" on 800), message ("success"), description ("成功"),
  returnObj, plus `error` (same value as errorCode) where CTyun's structs carry it;
- bare metal, SFS, OceanFS ("classic", CTyun contract 7-8): as the older E-HPC family.
Failures are statusCode 900 with the code in `error`/`errorCode` and `returnObj` null.
"""

from __future__ import annotations

from typing import Any, Dict

from tests.contracts.ctyun import Api


def _status(code: int, as_text: bool):
    return str(code) if as_text else code


def success(api: Api, return_obj: Any, as_text: bool = False) -> Dict[str, Any]:
    if api.envelope == "ehpc":
        return {"statusCode": _status(800, as_text), "error": "", "message": "成功",
                "returnObj": return_obj}
    if api.envelope in ("ehpc-old", "classic"):
        return {"statusCode": _status(800, as_text), "errorCode": "", "message": "SUCCESS",
                "description": "成功", "returnObj": return_obj}
    doc = {"statusCode": _status(800, as_text), "errorCode": "SUCCESS", "message": "success",
           "description": "成功", "returnObj": return_obj}
    if api.error_field:
        doc["error"] = "SUCCESS"
    return doc


def failure(api: Api, code: str, message: str, as_text: bool = False) -> Dict[str, Any]:
    if api.envelope == "ehpc":
        return {"statusCode": _status(900, as_text), "error": code, "message": message,
                "returnObj": None}
    doc = {"statusCode": _status(900, as_text), "errorCode": code, "message": message,
           "description": message, "returnObj": None}
    if api.envelope == "vpc" and api.error_field:
        doc["error"] = code
    return doc
