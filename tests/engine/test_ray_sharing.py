"""A key's launches shared by the actors of one Ray node (engine/ray_executor.py): one node of two CPUs on
this host, the toy project's one key of twelve builds surveyed on it. The second actor, idle once the key is
handed out, takes a copy of it; the node's actors share one store, so each build is compiled once between
them and the key's rows are those of one worker that compiled them all.

Skipped when ray (the ``ray`` extra) is not installed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from regsurvey.engine.survey import survey_checkout
from regsurvey.model.options import SurveyOptions
from regsurvey.model.progress import Progress
from regsurvey.repo.checkout import working_tree

from ..conftest import commit_all

ray = pytest.importorskip("ray")

# Twelve builds (two row tiles by six column tiles): long enough that the key is still compiling when an
# idle actor may take a copy (it must have run for transport_ray.HELP_MIN_S).
MANY_LAUNCHES_KEYS = '''"""One key of twelve builds (a tile sweep, as an autotuned launcher's configs), one target."""

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["sm90"], width=[64])


@matrix.kind(axes=["width"])
def sweep(width):
    for rows in (16, width):
        for block_n in (16, 32, 64, 128, 256, 512):
            ops.gemm(rs.tensor((rows, 512), "bf16"), rs.tensor((512, 1024), "bf16"), block_n=block_n)
'''


@pytest.fixture(scope="module")
def one_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    from ray.cluster_utils import Cluster

    directory = tmp_path_factory.mktemp("node")
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "env_vars": {"TMPDIR": str(directory)}})
    c.wait_for_nodes()
    try:
        yield c, directory
    finally:
        ray.shutdown()
        c.shutdown()


# -m slow: tests/engine/test_ray.py::test_two_nodes_share_a_key_of_many_launches shares a key between actors
# through the build claims in the default run; this one, through a node's own store.
@pytest.mark.slow
def test_the_actors_of_a_node_share_a_key_of_many_launches(toy_repo: Path, one_node: tuple[Any, Path],
                                                           tmp_path: Path) -> None:
    c, directory = one_node
    (toy_repo / "keys" / "toy.py").write_text(MANY_LAUNCHES_KEYS)
    commit_all(toy_repo, "one key, twelve builds")
    checkout = working_tree(toy_repo)
    # Cold Triton caches (the actors' own), so that the builds take the toolchain's time.
    options = SurveyOptions(ray_address=c.address, triton_cache_dir=str(tmp_path / "triton"))
    survey = survey_checkout(checkout, tmp_path / "ray" / "objects", options, Progress())
    rows = survey.rows
    assert [r.launch for r in rows] == list(range(12)) and all(r.ok for r in rows)
    assert not any(r.reused for r in rows)
    assert Counter(r.triton_hash for r in rows) == Counter(dict.fromkeys((r.triton_hash for r in rows), 1))
    timing = survey.timing
    assert timing["keys_shared"] == 1 and 1 <= timing["launches_shared"] <= 11
    assert timing["ray_calls"] == 2  # the key and its copy
    # The same builds and figures as a local survey (not the objects' bytes: a cubin's line info names the
    # source's directory, the actor's unpacked tree here), and the node's store of the survey is gone
    # with its actors.
    local = survey_checkout(checkout, tmp_path / "local" / "objects", SurveyOptions(jobs=1), Progress())
    same = ("launch", "kernel", "triton_hash", "resources", "build")
    assert [[getattr(r, f) for f in same] for r in local.rows] == [[getattr(r, f) for f in same] for r in rows]
    assert not list(directory.glob("regsurvey-ray-*")) and not list(directory.glob("regsurvey-node-*"))
