"""The one switch for golden files (tests/golden_files.py): KK3_UPDATE_GOLDEN=1 rewrites, unset
or 0 compares, anything else (and the switch's retired names) stops the run with the fix."""

import pytest

from tests.golden_files import Golden, update_golden


@pytest.mark.parametrize("environ, update", [({}, False), ({"KK3_UPDATE_GOLDEN": "0"}, False),
                                             ({"KK3_UPDATE_GOLDEN": ""}, False),
                                             ({"KK3_UPDATE_GOLDEN": "1"}, True)])
def test_the_switch(environ, update):
    assert update_golden(environ) is update


@pytest.mark.parametrize("environ, message", [
    ({"KK3_UPDATE_GOLDEN": "yes"}, "KK3_UPDATE_GOLDEN='yes' is not a switch value; use "
                                   "KK3_UPDATE_GOLDEN=1 to rewrite"),
    ({"KK3_UPDATE_GOLDEN": "true"}, "KK3_UPDATE_GOLDEN='true' is not a switch value"),
    ({"UPDATE_GOLDEN": "1"}, "UPDATE_GOLDEN is not read; to rewrite the golden files set "
                             "KK3_UPDATE_GOLDEN=1 instead"),
    ({"KIMI_K3_UPDATE_GOLDEN": "1", "KK3_UPDATE_GOLDEN": "1"}, "KIMI_K3_UPDATE_GOLDEN is not read"),
])
def test_other_values_and_retired_names_stop_the_run(environ, message):
    with pytest.raises(pytest.UsageError) as e:
        update_golden(environ)
    assert str(e.value).startswith(message)


def test_compare_names_the_file_and_the_switch(tmp_path):
    path = tmp_path / "x.txt"
    with pytest.raises(AssertionError, match="missing golden file .*x.txt: review the output, "
                                             "then rerun with KK3_UPDATE_GOLDEN=1"):
        Golden(update=False).check(path, "a\n")
    path.write_text("a\n")
    Golden(update=False).check(path, "a\n")
    with pytest.raises(AssertionError, match="x.txt differs from what the code renders"):
        Golden(update=False).check(path, "b\n")
    assert path.read_text() == "a\n"


def test_update_writes_only_what_changed(tmp_path):
    path = tmp_path / "new" / "x.txt"
    Golden(update=True).check(path, "a\n")
    assert path.read_text() == "a\n"
    before = path.stat().st_mtime_ns
    Golden(update=True).check(path, "a\n")
    assert path.stat().st_mtime_ns == before      # unchanged files are not touched
    Golden(update=True).check(path, "b\n")
    assert path.read_text() == "b\n"
