"""The lint gate (issue 18 item 10), inside every unit run so each landing meets it.

- pyflakes' rules through ruff (ruff.toml: components, tests, bench, tools) with zero findings:
  unused imports and names, redefinitions, undefined names;
- no module imports a pytest fixture: shared fixtures live in conftest.py, where pytest finds
  them (an imported fixture shadowed by a test's parameter is what ruff's F811 reported ~100
  times before this gate);
- no function, method or class in components/ graded D or worse by radon's cyclomatic
  complexity (radon 6.0.1, as `radon cc -n D components`): split it, behaviour unchanged.
Each check is also run against a hostile input, so a gate that silently passes everything fails.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Set

from radon.complexity import cc_rank, cc_visit

ROOT = Path(__file__).resolve().parents[2]
LINTED = ("components", "tests", "bench", "tools")
UPSTREAM = ROOT / "tests" / "contracts" / "upstream"   # verbatim upstream sources (ruff.toml)


def ruff(*paths: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """ruff as pinned in requirements-dev.txt, with the repository's ruff.toml, no cache."""
    return subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "ruff.toml"),
         "--output-format", "concise", *paths],
        cwd=cwd, capture_output=True, text=True, timeout=300)


def test_ruff_pyflakes_rules_find_nothing():
    res = ruff(*LINTED)
    assert res.returncode == 0, (
        "ruff (pyflakes rules, ruff.toml) found, fix each (fixtures go to conftest.py):\n"
        + res.stdout + res.stderr)


def test_ruff_gate_reports_an_unused_import_and_a_shadowed_fixture(tmp_path):
    (tmp_path / "test_hostile.py").write_text(
        "import os\nfrom tests.conftest import golden\n\n\ndef test_x(golden):\n    pass\n")
    res = ruff("test_hostile.py", cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "F401" in res.stdout and "F811" in res.stdout, res.stdout


def _python_files(top: Path) -> Iterable[Path]:
    return (p for p in sorted(top.rglob("*.py")) if UPSTREAM not in p.parents)


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_fixture(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Attribute) and target.attr == "fixture") or \
        (isinstance(target, ast.Name) and target.id == "fixture")


def fixtures_by_module(root: Path, top: str = "tests") -> Dict[str, Set[str]]:
    """Every module under `top` that defines pytest fixtures -> their names."""
    found: Dict[str, Set[str]] = {}
    for path in _python_files(root / top):
        text = path.read_text()
        if "fixture" not in text:
            continue
        for node in ast.parse(text, str(path)).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    any(_is_fixture(d) for d in node.decorator_list):
                found.setdefault(_module_name(path, root), set()).add(node.name)
    return found


def fixture_imports(root: Path, tops: Iterable[str] = LINTED) -> List[str]:
    """`file:line: name from module` for each import of a fixture (or `*` of a fixture module)."""
    fixtures = fixtures_by_module(root)
    found = []
    for top in tops:
        if not (root / top).is_dir():
            continue
        for path in _python_files(root / top):
            text = path.read_text()
            if not any(module in text for module in fixtures):
                continue
            for node in ast.walk(ast.parse(text, str(path))):
                if not isinstance(node, ast.ImportFrom) or node.module not in fixtures:
                    continue
                for alias in node.names:
                    if alias.name == "*" or alias.name in fixtures[node.module]:
                        found.append(f"{path.relative_to(root)}:{node.lineno}: "
                                     f"{alias.name} from {node.module}")
    return found


def test_no_module_imports_a_fixture():
    found = fixture_imports(ROOT)
    assert found == [], "fixtures imported (move them to a conftest.py and drop the import):\n" \
        + "\n".join(found)


def test_fixture_import_check_finds_an_imported_fixture(tmp_path):
    (tmp_path / "tests" / "integration").mkdir(parents=True)
    (tmp_path / "tests" / "integration" / "env.py").write_text(
        "import pytest\n\n\n@pytest.fixture(scope='session')\ndef services():\n    return {}\n\n\n"
        "def helper():\n    pass\n")
    (tmp_path / "tests" / "integration" / "test_a.py").write_text(
        "from tests.integration.env import helper, services\n")
    (tmp_path / "tests" / "integration" / "test_b.py").write_text(
        "from tests.integration.env import *\n")
    (tmp_path / "tests" / "integration" / "test_c.py").write_text(
        "from tests.integration.env import helper\n")
    assert fixture_imports(tmp_path, ("tests",)) == [
        "tests/integration/test_a.py:1: services from tests.integration.env",
        "tests/integration/test_b.py:1: * from tests.integration.env",
    ]


def graded_d_or_worse(source: str, name: str) -> List[str]:
    """`name:line kind block (grade complexity)` for each block of `source` graded D to F."""
    return [f"{name}:{b.lineno} {b.fullname} ({cc_rank(b.complexity)} {b.complexity})"
            for b in cc_visit(source) if cc_rank(b.complexity) in "DEF"]


def test_no_function_in_components_is_graded_d_or_worse():
    found = [line for path in sorted((ROOT / "components").rglob("*.py"))
             for line in graded_d_or_worse(path.read_text(), str(path.relative_to(ROOT)))]
    assert found == [], "graded D or worse by radon (split them, behaviour unchanged):\n" + \
        "\n".join(found)


def test_complexity_gate_grades_a_branchy_function_d():
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(21))
    source = f"def branchy(x):\n{branches}    return -1\n\n\ndef plain(x):\n    return x\n"
    assert graded_d_or_worse(source, "m.py") == ["m.py:1 branchy (D 22)"]
