"""The marker that lets a dataset generator skip a finished set and redo a stale or interrupted one."""

from __future__ import annotations

from oarkit.core.data.generated import is_generated, mark_generated


def test_a_marker_matches_only_the_settings_it_was_written_with(tmp_path) -> None:
    settings = {"size": 32, "classes": ["a", "b"], "seed": 0}
    assert not is_generated(tmp_path, ".set.json", settings)  # nothing written yet
    mark_generated(tmp_path, ".set.json", settings)
    assert is_generated(tmp_path, ".set.json", {"seed": 0, "classes": ["a", "b"], "size": 32})
    assert not list(tmp_path.glob("*.tmp"))  # written atomically, nothing left beside it
    assert not is_generated(tmp_path, ".set.json", {**settings, "size": 64})
    assert not (tmp_path / ".set.json").exists()  # a stale marker is removed: the set is redone


def test_a_broken_marker_counts_as_no_set(tmp_path) -> None:
    (tmp_path / ".set.json").write_text("{not json")
    assert not is_generated(tmp_path, ".set.json", {"size": 32})
    assert not (tmp_path / ".set.json").exists()
