"""What a survey on a Ray cluster sends to its nodes (engine/ray_actor.py, engine/ray_executor.py): the tracked
files and those named to go too, never another untracked file; links only inside the checkout; Triton's
settings and the variables of regsurvey's a worker reads, never a token. And what a failed actor says.
Needs no cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from regsurvey.engine.ray_actor import TreeError, pack_tree, tree_files, unpack_tree
from regsurvey.engine.ray_executor import actor_environment
from regsurvey.engine.transport_ray import said_cause

from ..conftest import commit_all

TRACKED = ["keys/toy.py", "toykernels/__init__.py", "toykernels/library.py", "toykernels/ops.py"]


@pytest.fixture
def working_tree(toy_repo: Path) -> Path:
    """The toy project with what a developer's working tree holds besides: secrets, notes, a build."""
    (toy_repo / ".gitignore").write_text("build/\n")
    commit_all(toy_repo, "ignore the build")
    (toy_repo / ".env").write_text("REGSURVEY_GITLAB_TOKEN=glpat-secret\n")
    (toy_repo / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (toy_repo / "notes").mkdir()
    (toy_repo / "notes" / "tuned.json").write_text("{}\n")
    (toy_repo / "build").mkdir()
    (toy_repo / "build" / "table.bin").write_bytes(b"\0")
    (toy_repo / "keys" / "__pycache__").mkdir()
    (toy_repo / "keys" / "__pycache__" / "toy.cpython-311.pyc").write_bytes(b"\0")
    (toy_repo / "keys" / "toy.py").write_text((toy_repo / "keys" / "toy.py").read_text() + "# edited\n")
    return toy_repo


def test_only_tracked_files_travel_and_the_untracked_left_are_named(working_tree: Path) -> None:
    tree = tree_files(working_tree)
    assert list(tree.files) == [".gitignore", *TRACKED]
    assert list(tree.left_out) == [".env", "id_rsa", "notes/tuned.json"]  # ignored files and caches are no news
    unpacked = working_tree.parent / "node"
    unpack_tree(pack_tree(working_tree, tree.files), unpacked)
    assert (unpacked / "keys" / "toy.py").read_text().endswith("# edited\n")  # as in the working tree
    assert not (unpacked / ".env").exists() and not (unpacked / "id_rsa").exists()


def test_files_named_to_go_travel_too_ignored_or_not(working_tree: Path) -> None:
    tree = tree_files(working_tree, ("notes/*", "build/*.bin"))
    assert list(tree.files) == [".gitignore", "build/table.bin", *TRACKED[:1], "notes/tuned.json", *TRACKED[1:]]
    assert list(tree.left_out) == [".env", "id_rsa"]


def test_a_link_inside_the_checkout_travels_and_one_outside_is_said(toy_repo: Path, tmp_path: Path) -> None:
    (toy_repo / "keys" / "same.py").symlink_to("toy.py")
    (toy_repo / "toykernels" / "absolute.py").symlink_to(toy_repo / "toykernels" / "ops.py")
    commit_all(toy_repo, "links inside the checkout")
    unpack_tree(pack_tree(toy_repo, tree_files(toy_repo).files), tmp_path / "node")
    absolute = tmp_path / "node" / "toykernels" / "absolute.py"
    assert str(absolute.readlink()) == "ops.py"  # made relative: it points into the node's copy
    assert absolute.read_text() == (toy_repo / "toykernels" / "ops.py").read_text()
    assert (tmp_path / "node" / "keys" / "same.py").read_text() == (toy_repo / "keys" / "toy.py").read_text()

    for name, target in (("data", "/etc"), ("up", "../..")):
        (toy_repo / name).symlink_to(target)
        with pytest.raises(TreeError) as raised:
            pack_tree(toy_repo, (name,))
        assert str(raised.value) == (f"{name} is a symbolic link to {target}, outside the checkout: a Ray node would "
                                     "not have it (make it point inside the checkout, or stop tracking it)")


def test_the_actors_take_tritons_settings_and_no_secret() -> None:
    survey = {"TRITON_DEFAULT_FP_FUSION": "0", "TRITON_HIP_USE_BLOCK_PINGPONG": "1", "REGSURVEY_MATERIALIZE": "meta",
              "REGSURVEY_LLVM_OBJDUMP": "/usr/bin/llvm-objdump", "TRITON_CACHE_DIR": "/here", "TRITON_HOME": "/here",
              "REGSURVEY_GITLAB_TOKEN": "glpat-x", "REGSURVEY_RESULTS_KEY": "hmac", "REGSURVEY_RESULTS": "/here",
              "REGSURVEY_SERVER": "off", "TRITON_API_TOKEN": "x", "TRITON_SECRET": "x", "CI_JOB_TOKEN": "x",
              "GITHUB_TOKEN": "x", "AWS_SECRET_ACCESS_KEY": "x", "HOME": "/root", "PATH": "/bin"}
    assert actor_environment(survey) == {"TRITON_DEFAULT_FP_FUSION": "0", "TRITON_HIP_USE_BLOCK_PINGPONG": "1",
                                         "REGSURVEY_MATERIALIZE": "meta",
                                         "REGSURVEY_LLVM_OBJDUMP": "/usr/bin/llvm-objdump"}


# What Ray 2.60 says of an actor whose __init__ raised an exception that cannot travel back (tarfile's).
UNSERIALIZABLE = (
    "Failed to deserialize exception. Refer to https://docs.ray.io/en/latest/ray-core/objects/serialization.html"
    "#custom-serializers-for-exceptions for more information.\n"
    "Traceback (most recent call last):\n"
    "  File \"python/ray/_raylet.pyx\", line 995, in ray._raylet.store_task_errors\n"
    "\nray.exceptions.ActorDiedError: The actor died because of an error raised in its creation task, "
    "\x1b[36mray::SurveyActor.__init__()\x1b[39m (pid=6910, ip=192.0.2.2)\n           ^^^^^^^^^^^^\n"
    "  File \"/x/ray_actor.py\", line 7, in __init__\n    unpack_tree(tree, root)\n"
    "tarfile.AbsoluteLinkError: 'data' is a link to an absolute path\n")


def test_a_failed_actor_says_its_cause_in_one_line() -> None:
    assert said_cause(RuntimeError(UNSERIALIZABLE)) == "tarfile.AbsoluteLinkError: 'data' is a link to an absolute path"
    assert said_cause(RuntimeError("the node died\nmore")) == "the node died"
    assert said_cause(RuntimeError("")) == "RuntimeError"
