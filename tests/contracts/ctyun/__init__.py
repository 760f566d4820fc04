"""CTyun's E-HPC and VPC OpenAPI as an outside contract: data, documented examples, validator.

Written from CTyun's own documentation and clients, never from kimi-k3's client. Every fact is
tagged with its upstream source (`[doc 23930]`, `[ex]`, `[tf]`, ...: sources.py gives the URL and
the commit or date of each); sections.py numbers the parts (1 calling convention: convention.py;
2 E-HPC: ehpc.py; 3 VPC and EIP: vpc.py; 4 enums and rules: ehpc.py, checks.py; 5
contradictions and 6 open questions: gaps.py; 7 bare metal: ebm.py; 8 file services:
storage.py), which code and docs cite as `CTyun contract N.N`. Use:

    from tests.contracts.ctyun import validate_request, validate_response, EXAMPLES
    validate_request("hpc/create-cluster", None, body)    # -> [] or problems naming fields
    validate_response("hpc/list-clusters", return_obj)     # -> [] or problems
    validate_envelope("delete-cluster", whole_answer)      # envelope of the API's family
    validate_call("POST", "/v4/cthpc/hpc/create-cluster", None, body)   # by method + path
    for api, path, example in example_answers(): ...      # documented answers to replay

APIs are named by their path after `/v4/cthpc/` (E-HPC) or `/v4/` (VPC), e.g.
`hpc/create-cluster`, `query-job-result`, `vpc/new-list`, `eip/show`, `ebm/raid-type-list`,
`sfs/info-sfs`; the full path works too.
`python -m tests.contracts.ctyun` prints the whole contract as JSON.
"""

from .examples import BY_ID as EXAMPLES_BY_ID, EXAMPLES, Example
from .spec import ABSENT, PRESENT, Api, Field, Rule
from .validator import (APIS, Problem, envelope_keys, get_api, validate_call,
                        validate_envelope, validate_request, validate_response)

__all__ = ["APIS", "ABSENT", "Api", "EXAMPLES", "EXAMPLES_BY_ID", "Example", "Field",
           "PRESENT", "Problem", "Rule", "envelope_keys", "get_api", "validate_envelope",
           "validate_call", "validate_request", "validate_response", "field_count", "as_data",
           "example_answers"]


def example_answers():
    """(api name, path, example) for every documented answer: `example.kind` is "response"
    (the returnObj) or "envelope" (the whole answer); `example.doc()` parses it;
    `example.abbreviated` means fields are elided (the key "..." may appear)."""
    for e in EXAMPLES:
        if e.kind != "request":
            yield e.api, get_api(e.api).path, e


def _count(fields) -> int:
    return sum(1 + _count(f.fields) for f in fields)


def field_count() -> dict:
    """How many request and response fields (nested ones included) the contract describes."""
    return {"apis": len(APIS),
            "request_fields": sum(_count(a.request) for a in APIS.values()),
            "response_fields": sum(_count(a.response.fields) + sum(_count(v.fields)
                                                                   for v in a.variants)
                                   for a in APIS.values()),
            "rules": sum(len(a.rules) for a in APIS.values()),
            "examples": len(EXAMPLES)}


def as_data() -> dict:
    """The contract as plain JSON-able data."""
    from dataclasses import asdict
    return {"apis": [asdict(a) for a in APIS.values()],
            "examples": [asdict(e) for e in EXAMPLES]}
