"""A target double: renders one file and creates no resources, to test K3Inference's plumbing
without either cloud's component (those have their own program-level tests)."""

from components.inference.target import InferenceTarget, Served


class TargetDouble(InferenceTarget):
    target_name = "double"

    def __init__(self, shape: str, nodes: int):
        self._shape, self._nodes = shape, nodes

    def node_shape_key(self):
        return self._shape

    def node_count(self):
        return self._nodes

    def render(self, plan, spec):
        return {"argv.txt": " ".join(spec.head.argv) + "\n"}

    def serve(self, plan, spec, parent=None):
        return Served(endpoint=f"http://double:{spec.port}/v1", outputs={"doubleNodes": plan.nodes})
