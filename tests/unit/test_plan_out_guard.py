"""Issue 21 item 8: `plan --out` replaces its directory whole, so it must hold only what a plan
writes. A plan-like plan.json beside someone's files no longer makes them ours."""

import json

import pytest

from components.cli.plan import OutputError, check_out_dir

PLAN = {"stack": "aws-eks", "target": "aws-eks", "launch": []}


def _plan_dir(d, extra=()):
    d.mkdir()
    (d / "plan.json").write_text(json.dumps(PLAN))
    for rel in ("srun.sh", "check.sh", "api-guard/kk3_api_guard.py",
                "manifests/deployment-kimi-k3.yaml", "dashboards/kimi-k3-serving.json",
                "prometheus/alerts.yml", *extra):
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text("x")
    return d


def test_an_earlier_plan_may_be_replaced(tmp_path):
    check_out_dir(_plan_dir(tmp_path / "o"))


@pytest.mark.parametrize("extra", ["precious.txt", "notes/todo.md", "manifests/sub/x.yaml",
                                   "dashboards/mine.txt", ".env", "api-guard/secret.pem",
                                   "SRUN.SH"])
def test_a_plan_like_directory_with_other_files_is_refused(tmp_path, extra):
    d = _plan_dir(tmp_path / "o", [extra])
    with pytest.raises(OutputError, match="which no plan writes") as e:
        check_out_dir(d)
    assert extra.split("/")[0] in str(e.value)
    assert (d / extra).read_text() == "x"


def test_symlinks_in_a_plan_directory_are_refused(tmp_path):
    d = _plan_dir(tmp_path / "o")
    (tmp_path / "elsewhere").mkdir()
    (d / "node.sh").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OutputError, match="node.sh"):
        check_out_dir(d)
