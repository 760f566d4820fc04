"""CTyun OpenAPI client: signing, transport + envelope, and one module per product.

Built on the field-level contract in /work/shared/reference/ctyun-openapi.md (binding), apart
from the SSH/Slurm side of the target. Modules:

- `signing`: the pure EOP signer (query escaped as Go's url.Values.Encode);
- `envelope`: success iff str(statusCode) == "800"; error code and text;
- `transport`: signed HTTP, deadlines, which calls may be repeated;
- `parse`: strict readers (a missing or unexpected field is an error, never an empty result);
- `rules`: documented names, password, size and count rules;
- `ehpc`, `vpc`: typed requests, strict answers, one method per API;
- `waits`: job polling and deadlines.
"""
