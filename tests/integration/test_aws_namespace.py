"""kimi-k3:namespace: the stack declares (and on destroy deletes) only a namespace of its own.

`default`, any `kube-*` and the add-ons' Helm release namespace are refused at plan time, one
line naming the key and the fix, for both serving paths; the default and a namespace of the
user's own still plan, and the only Namespace declared is that one.
"""

import pytest

from components.cli.main import main
from components.offline.runner import run_program

CR = "cr-0123456789abcdef0"
BASE = {"kimi-k3:capacityReservationId": CR, "kimi-k3:apiAccessCidrs": "203.0.113.10/32"}
HYPERPOD = {"kimi-k3:serving": "hyperpod", "kimi-k3:hyperpodClusterName": "hp-eks",
            "kimi-k3:capacityReservationId": None, "kimi-k3:apiAccessCidrs": None}


def plan(capsys, tmp_path, *sets):
    args = ["plan", "--quiet", "--stack", "aws-eks", "--out", str(tmp_path / "o")]
    for s in sets:
        args += ["--set", s]
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("ns", ["kube-system", "kube-public", "kube-node-lease", "kube-flannel",
                                "default", "lws-system"])
def test_a_namespace_the_stack_did_not_create_is_refused_at_plan(capsys, tmp_path, ns):
    code, out, err = plan(capsys, tmp_path, f"kimi-k3:namespace={ns}")
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2, (out, err)
    assert len(lines) == 1 and lines[0].startswith(f"error: kimi-k3:namespace='{ns}' is "), err
    assert "delete it on destroy" in lines[0] and "unset kimi-k3:namespace" in lines[0]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("ns", ["kube-system", "default"])
def test_the_hyperpod_path_refuses_them_too(ns):
    import pulumi

    with pytest.raises(pulumi.RunError) as e:
        run_program("aws-eks", cfg({**HYPERPOD, "kimi-k3:namespace": ns}))
    assert f"kimi-k3:namespace='{ns}'" in str(e.value)


def cfg(extra):
    return {k: v for k, v in {**BASE, **extra}.items() if v is not None}


def namespaces(run):
    return [r["inputs"]["metadata"]["name"] for r in run.of_type("kubernetes:core/v1:Namespace")]


def test_the_default_namespace_value_still_plans(capsys, tmp_path):
    code, out, err = plan(capsys, tmp_path)
    assert code == 0, err
    run = run_program("aws-eks", BASE)
    assert namespaces(run) == ["kimi-k3"]


@pytest.mark.parametrize("extra", [{}, HYPERPOD], ids=["eks", "hyperpod"])
def test_a_namespace_of_the_users_own_is_the_only_one_declared(extra):
    run = run_program("aws-eks", cfg({**extra, "kimi-k3:namespace": "kubeflow-k3"}))
    assert namespaces(run) == ["kubeflow-k3"]
