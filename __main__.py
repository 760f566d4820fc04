"""kimi-k3 Pulumi program: config -> plan -> launch spec -> target cluster -> K3Inference.

Thin wiring only. Everything that can be wrong with the input is checked (pure) before the
first resource is registered; a bad value stops `pulumi preview` with one line naming the key,
the value and the fix.
"""

import pulumi

from components.inference.component import K3Inference
from components.inference.errors import KimiK3Error
from components.config.keys import check_namespaces
from components.program.pipeline import all_config_keys, plan_and_launch, raw_shared_config
from components.progress.program import announce as announce_progress
from components.config.shared import default_exposures, exposure_warnings, parse_settings
from components.program.registry import Secrets, build_target

config = pulumi.Config("kimi-k3")
try:
    check_namespaces(all_config_keys())
    settings = parse_settings(raw_shared_config(pulumi.get_project()), pulumi.get_stack())
    plan, spec = plan_and_launch(settings)
    target = build_target("kimi-k3", settings, Secrets(
        api_key=config.get_secret("apiKey"), hf_token=config.get_secret("hfToken")))
except KimiK3Error as err:
    raise pulumi.RunError(str(err)) from None

# exposure is a decision: every public opening is said out loud at plan and preview
for line in exposure_warnings(getattr(target, "exposures", lambda: None)()
                              or default_exposures(settings), settings.has_api_key):
    pulumi.log.warn(line)
announce_progress()  # how to follow the long waits (docs/progress.md)
inference = K3Inference("kimi-k3", plan, spec, target)

pulumi.export("endpoint", inference.endpoint)
pulumi.export("servedModelName", inference.served_model_name)
pulumi.export("plan", inference.plan_summary)
for key, value in inference.extra_outputs.items():
    pulumi.export(key, value)
