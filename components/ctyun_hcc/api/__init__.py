"""CTyun OpenAPI client: signing, transport + envelope, and one module per product.

Built on CTyun's field-level contract as kept in this repository, tests/contracts/ctyun (cited
as `CTyun contract N.N`, its section numbers: sections.py there), apart from the SSH/Slurm side
of the target. Each fact there names its upstream source (sources.py): CTyun's API docs by doc
id (https://eop.ctyun.cn/ebp/ctapiDocument/search?sid=8&api=<id>&data=106, parameter tables as
captured 2026-09-24 in github.com/ArvinZJC/ctyun-cli @6dcc2310b657), CTyun's Terraform provider
(github.com/ctyun-it/terraform-provider-ctyun @80651fddcdcb, v1.2.0) and Go SDK
(github.com/ctyun-it/ctyun-sdk-go @ffde8493f927). Modules:

- `signing`: the pure EOP signer (query escaped as Go's url.Values.Encode);
- `envelope`: success iff str(statusCode) == "800"; error code and text;
- `transport`: signed HTTP, deadlines, which calls may be repeated;
- `parse`: strict readers (a missing or unexpected field is an error, never an empty result);
- `rules`: documented names, password, size and count rules;
- `ehpc`, `vpc`: typed requests, strict answers, one method per API;
- `waits`: job polling and deadlines.
"""
