"""kimi-k3 Pulumi program: config -> plan -> launch spec -> target cluster -> K3Inference.

Thin wiring only (components/program/pipeline.py). Everything that can be wrong with the input
is checked (pure) before the first resource is registered; a bad value stops `pulumi preview`
with one line naming the key, the value and the fix.
"""

import pulumi

from components.program.pipeline import run

cluster, inference, prepared = run(pulumi.get_project(), pulumi.get_stack())

pulumi.export("endpoint", inference.endpoint)
pulumi.export("servedModelName", inference.served_model_name)
pulumi.export("plan", inference.plan_summary)
for key, value in inference.extra_outputs.items():
    pulumi.export(key, value)
