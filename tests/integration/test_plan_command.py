"""The plan command's input checks and output (issue 10): every case of the issue's validation
list is one line on stderr and exit 2; output is replaced per stack only when complete; a
multi-stack run names the stack that failed; public openings are warned about.

Runs the CLI in-process (`components.cli.main.main`), as `python -m components plan` does.
"""

import dataclasses
import json

import pytest

from components.cli.main import main

SECRET = "sk-live-very-secret-42-0123456789abc"  # 32+ characters: a public endpoint


def plan(capsys, *args):
    code = main(["plan", "--quiet", *args])
    out, err = capsys.readouterr()
    return code, out, err


# (stack, --set KEY=VALUE..., fragment of the one line): the list, then neighbours
CASES = [
    ("aws-eks", ["kimi-k3:allowedCidrs=[bad"], "kimi-k3:allowedCidrs='[bad' is not a JSON list"),
    ("aws-eks", ["kimi-k3:allowedCidrs=10.0.0.1/8"], "kimi-k3:allowedCidrs='10.0.0.1/8' is not a CIDR"),
    ("aws-eks", ["kimi-k3:allowedCidrs=0.0.0.0/0"], "kimi-k3:allowInternet=true"),
    ("ctyun-hcc", ["kimi-k3:sshPort=²"], "kimi-k3:sshPort='²' is not an integer"),
    ("ctyun-hcc", ["kimi-k3:sshPort=99999"], "kimi-k3:sshPort"),
    ("aws-eks", ["kimi-k3:maxUpfrontFeeUsd=nan"], "kimi-k3:maxUpfrontFeeUsd"),
    ("aws-eks", ["kimi-k3:maxUpfrontFeeUsd=inf"], "kimi-k3:maxUpfrontFeeUsd"),
    ("aws-eks", ["kimi-k3:maxUpfrontFeeUsd=1e309"], "kimi-k3:maxUpfrontFeeUsd"),
    ("ctyun-hcc", ["kimik3:nodes=2"], "kimik3:nodes=<not shown> is in namespace 'kimik3'"),
    ("ctyun-hcc", ["kimi_k3:nodes=2"], "looks like 'kimi-k3'"),
    ("ctyun-hcc", [f"ctyn:rootPassword={SECRET}"], "ctyn:rootPassword=<not shown>"),
    ("aws-eks", ["aws:regoin=us-east-1"], "did you mean aws:region"),
    ("ctyun-hcc", [f"ctyun:rootPasword={SECRET}"], "ctyun:rootPasword"),
    ("aws-eks", [f"kimi-k3:apikey={SECRET}"], "kimi-k3:apikey=<not shown> is not a known key"),
    ("ctyun-hcc", ["kimi-k3:port=13389"], "data-parallel RPC port"),
    ("aws-eks", ["kimi-k3:port=13389"], "data-parallel RPC port"),
    ("ctyun-hcc", ["kimi-k3:workDir=//"], "kimi-k3:workDir='//'"),
    ("ctyun-hcc", ["kimi-k3:workDir=/."], "kimi-k3:workDir='/.'"),
    ("ctyun-hcc", ["kimi-k3:workDir=/etc"], "kimi-k3:workDir='/etc' is not under a data directory"),
    ("ctyun-hcc", ["kimi-k3:workDir=/home/../etc"], "contains '.' or '..'"),
    ("ctyun-hcc", ["kimi-k3:modelRoot=/etc"], "kimi-k3:modelRoot='/etc'"),
    ("ctyun-hcc", ["kimi-k3:modelRoot=/mnt/model dir"], "kimi-k3:modelRoot"),
    ("ctyun-hcc", ["kimi-k3:sifDir=/"], "kimi-k3:sifDir"),
    ("ctyun-hcc", ["kimi-k3:sifName=../x"], "kimi-k3:sifName"),
    ("ctyun-hcc", ["kimi-k3:servedModelName=K3$(touch${IFS}x)"], "kimi-k3:servedModelName"),
    ("aws-eks", ["kimi-k3:servedModelName=$(HF_TOKEN)"], "kimi-k3:servedModelName"),
    ("ctyun-hcc", ["kimi-k3:sshBastion=jump@bad host"], "kimi-k3:sshBastion"),
    ("ctyun-hcc", ["kimi-k3:sshBastion=jump@203.0.113.5"], "kimi-k3:sshBastionPrivateKey"),
    ("ctyun-hcc", ["kimi-k3:sshHostKey=not-a-key"], "kimi-k3:sshHostKey"),
    ("ctyun-hcc", ["kimi-k3:sshUser=root;id"], "kimi-k3:sshUser"),
    ("ctyun-hcc", ["kimi-k3:sifSource=url", "kimi-k3:sifUrl=https://x/a b"], "kimi-k3:sifUrl"),
    ("ctyun-hcc", ["ctyun:queueName=batch;rm"], "ctyun:queueName"),
    ("ctyun-hcc", ["ctyun:localDataRaid=RAID0"], "kimi-k3:mountDisks=false"),
    ("aws-eks", ["kimi-k3:sshAllowedCidrs=203.0.113.1/32"], "kimi-k3:sshAllowedCidrs=<not shown> is not a known key"),
    ("ctyun-hcc", ["kimi-k3:sshAllowedCidrs=0.0.0.0/0"], "kimi-k3:allowInternet=true"),
    ("ctyun-hcc", ["kimi-k3:nodes=١"], "kimi-k3:nodes"),
    ("ctyun-hcc", ["kimi-k3:gpuMemoryUtilization=nan"], "kimi-k3:gpuMemoryUtilization"),
]


@pytest.mark.parametrize("stack, sets, fragment", CASES, ids=[" ".join(c[1])[:40] for c in CASES])
def test_every_bad_value_is_one_line_and_exit_2(capsys, tmp_path, stack, sets, fragment):
    args = ["--stack", stack, "--out", str(tmp_path / "o")]
    for s in sets:
        args += ["--set", s]
    code, out, err = plan(capsys, *args)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (out, err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], err
    assert SECRET not in err and SECRET not in out
    assert not (tmp_path / "o").exists()


def test_out_pointing_at_a_file_or_a_foreign_directory(capsys, tmp_path):
    f = tmp_path / "file"
    f.write_text("keep")
    code, _, err = plan(capsys, "--stack", "aws-eks", "--out", str(f))
    assert code == 2 and err.count("\n") == 1 and "is a file" in err and f.read_text() == "keep"
    code, _, err = plan(capsys, "--out", str(f))  # two stacks: out/<stack> below a file
    assert code == 2 and err.count("\n") == 1 and "is a file" in err
    d = tmp_path / "home"
    d.mkdir()
    (d / "precious.txt").write_text("mine")
    code, _, err = plan(capsys, "--stack", "aws-eks", "--out", str(d))
    assert code == 2 and "holds something else" in err
    assert sorted(p.name for p in d.iterdir()) == ["precious.txt"]


def test_output_is_replaced_whole_per_stack(capsys, tmp_path):
    out = tmp_path / "o"
    code, _, _ = plan(capsys, "--stack", "aws-eks", "--out", str(out), "--set", "kimi-k3:nodes=2")
    assert code == 0
    assert (out / "manifests" / "leaderworkerset-kimi-k3.yaml").exists()
    code, _, _ = plan(capsys, "--stack", "aws-eks", "--out", str(out))
    assert code == 0
    names = sorted(p.name for p in (out / "manifests").iterdir())
    assert "leaderworkerset-kimi-k3.yaml" not in names and "deployment-kimi-k3.yaml" in names
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]  # no temp or old dirs left
    # a bad run leaves the last complete plan as it was
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, _, _ = plan(capsys, "--stack", "aws-eks", "--out", str(out), "--set", "kimi-k3:nodes=0")
    assert code == 2 and {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_a_failed_write_keeps_the_previous_plan(capsys, tmp_path, monkeypatch):
    from components.cli import plan as plan_cmd
    from components.offline.runner import run_program

    out = tmp_path / "o"
    assert plan(capsys, "--stack", "ctyun-hcc", "--out", str(out))[0] == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    run = run_program("ctyun-hcc")
    rendered = run.deployment.rendered
    run.deployment = dataclasses.replace(run.deployment, rendered=dataclasses.replace(
        rendered, files={**rendered.files, "../escape.sh": "x"}))
    with pytest.raises(plan_cmd.OutputError, match="leaves the output directory"):
        plan_cmd.write_out(run, out)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


def test_multi_stack_run_names_the_stack_that_failed(capsys, tmp_path):
    code, _, err = plan(capsys, "--stack", "ctyun-hcc", "--stack", "aws-eks", "--out", str(tmp_path),
                        "--set", "kimi-k3:capacityInstanceCount=1", "--set", "kimi-k3:nodes=2",
                        "--set", "kimi-k3:capacityInstanceCount=x")
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: stack ctyun-hcc: ")
    code, _, err = plan(capsys, "--stack", "ctyun-hcc", "--stack", "aws-eks", "--out", str(tmp_path),
                        "--set", "kimi-k3:capacityReservationId=cr-bad")
    assert code == 2 and "error: stack ctyun-hcc: kimi-k3:capacityReservationId" in err
    code, _, err = plan(capsys, "--stack", "ctyun-hcc", "--stack", "aws-eks", "--out", str(tmp_path),
                        "--set", "kimi-k3:maxModelLen=4096000")
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 2 and len(errors) == 1 and errors[0].startswith("error: stack "), err


def test_public_openings_are_warned_about(capsys, tmp_path):
    code, _, err = plan(capsys, "--stack", "ctyun-hcc", "--out", str(tmp_path / "c"),
                        "--set", 'kimi-k3:allowedCidrs=["203.0.113.10/32","10.0.0.0/8"]',
                        "--set", "kimi-k3:sshAllowedCidrs=198.51.100.7/32")
    assert code == 0
    assert "warning: kimi-k3:allowedCidrs opens the model endpoint over TLS (TCP 443) to public " \
           "addresses 203.0.113.10/32" in err
    assert "warning: kimi-k3:sshAllowedCidrs opens SSH to the master (TCP 22, login as root) to " \
           "public addresses 198.51.100.7/32" in err
    assert "kimi-k3:apiKey is not set" in err
    doc = json.loads((tmp_path / "c" / "plan.json").read_text())
    assert any("kimi-k3:apiKey is not set" in w for w in doc["warnings"])
    code, _, err = plan(capsys, "--stack", "aws-eks", "--out", str(tmp_path / "a"),
                        "--set", "kimi-k3:allowedCidrs=0.0.0.0/0", "--set", "kimi-k3:allowInternet=true",
                        "--set", "kimi-k3:allowPlaintext=true", "--set", f"kimi-k3:apiKey={SECRET}")
    assert code == 0 and "to the whole internet (0.0.0.0/0" in err
    assert "kimi-k3:apiKey is not set" not in err and SECRET not in err
    # with a key kimi-k3's guard covers /invocations & co (no "unguarded routes" warning), and
    # the plan carries it: the ConfigMap the serving pod mounts, the --middleware flag
    assert "/invocations" not in err
    guard = (tmp_path / "a" / "manifests" / "configmap-kimi-k3-api-guard.yaml").read_text()
    assert "class ApiKeyGuard" in guard
    assert "kk3_api_guard.ApiKeyGuard" in (tmp_path / "a" / "manifests" / "deployment-kimi-k3.yaml").read_text()
    code, _, err = plan(capsys, "--stack", "aws-eks", "--out", str(tmp_path / "p"),
                        "--set", "kimi-k3:allowedCidrs=10.0.0.0/8")
    assert code == 0 and "opens" not in err


def test_plan_json_names_no_path_of_this_checkout(capsys, tmp_path):
    """The same config gives the same plan.json from any checkout: paths in the project (the
    progress file `pulumi up` passes by absolute path) are written relative to it."""
    from components.offline.runner import ROOT

    code, _, _ = plan(capsys, "--out", str(tmp_path))
    assert code == 0
    for stack in ("ctyun-hcc", "aws-eks"):
        text = (tmp_path / stack / "plan.json").read_text()
        assert str(ROOT) not in text
        assert f'"progressFile": ".kimi-k3/progress/{stack}.jsonl"' in text


def test_portable_paths_only_rewrites_paths_below_the_project():
    from components.offline.order import portable

    got = portable({"a": "/p/x/.kimi-k3/f", "b": ["/p/x/y", "/p/xy/z", "/other"], "c": 3}, "/p/x")
    assert got == {"a": ".kimi-k3/f", "b": ["y", "/p/xy/z", "/other"], "c": 3}
