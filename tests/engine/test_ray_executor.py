"""The survey's side of a Ray survey (engine/ray_executor.py), what needs no cluster: which cluster it joins,
which untracked files travel besides the tracked ones, and what is said of those that stay here.

What the actors' environment takes is tests/engine/test_ray_tree.py's; surveys on a cluster are
tests/engine/test_ray.py's."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from regsurvey.engine.errors import SurveyError
from regsurvey.engine.ray_actor import unpack_tree
from regsurvey.engine.ray_executor import INCLUDE_VAR, included, packed_checkout


def test_the_untracked_files_named_to_travel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(INCLUDE_VAR, raising=False)
    assert included() == ()
    monkeypatch.setenv(INCLUDE_VAR, " notes/*, build/*.bin ,, ")
    assert included() == ("notes/*", "build/*.bin")


def members(packed: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
        return sorted(tar.getnames())


def test_the_untracked_files_left_here_are_named_the_first_three(toy_repo: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(INCLUDE_VAR, raising=False)
    for name in ("a.env", "b.key", "c.txt", "d.txt", "notes.md"):
        (toy_repo / name).write_text("untracked\n")
    packed = packed_checkout(SimpleNamespace(root=toy_repo))
    assert capsys.readouterr().err == ("regsurvey: warning: --ray: 5 untracked files not sent to the cluster "
                                       "(a.env, b.key, c.txt and 2 more): git add them, or name them with "
                                       "--ray-include\n")
    assert members(packed) == ["keys/toy.py", "toykernels/__init__.py", "toykernels/library.py", "toykernels/ops.py"]
    monkeypatch.setenv(INCLUDE_VAR, "*.txt,notes.md")
    packed = packed_checkout(SimpleNamespace(root=toy_repo))
    assert capsys.readouterr().err == ("regsurvey: warning: --ray: 2 untracked files not sent to the cluster "
                                       "(a.env, b.key): git add them, or name them with --ray-include\n")
    unpack_tree(packed, tmp_path / "node")
    assert (tmp_path / "node" / "notes.md").read_text() == "untracked\n" and not (tmp_path / "node" / "a.env").exists()


def test_nothing_is_said_when_every_file_travels(toy_repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(INCLUDE_VAR, raising=False)
    packed_checkout(SimpleNamespace(root=toy_repo))
    assert capsys.readouterr().err == ""


def test_a_checkout_that_cannot_travel_is_a_survey_error(toy_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(INCLUDE_VAR, raising=False)
    from ..conftest import commit_all

    (toy_repo / "data").symlink_to("/etc")
    commit_all(toy_repo, "a link out of the checkout")
    with pytest.raises(SurveyError) as raised:
        packed_checkout(SimpleNamespace(root=toy_repo))
    assert str(raised.value) == ("--ray: data is a symbolic link to /etc, outside the checkout: a Ray node would not "
                                 "have it (make it point inside the checkout, or stop tracking it)")
