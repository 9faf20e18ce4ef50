"""The config file entry a launch was passed (``keys.config_source``): what ``json.load`` hands a launcher
while a variant is surveyed, which entry is the launch's, and the patch, on files laid out as vLLM's are
(indent 4) and otherwise."""

from __future__ import annotations

import json
from pathlib import Path

from regsurvey.keys.config_source import ConfigSource, config_source, noting_json_reads, patch_text, source_of

VLLM_LIKE = {"triton_version": "3.9.0",
             "1": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "num_warps": 4, "num_stages": 4},
             "64": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "num_warps": 4, "num_stages": 3}}


def _write(tmp_path: Path, document: object, indent: int | None) -> Path:
    path = tmp_path / "E=8,N=64.json"
    path.write_text(json.dumps(document, indent=indent) + "\n")
    return path


def _launch(config: dict) -> dict:
    """What a launcher passing ``**config`` hands the kernel (the read goes through the mapping's methods)."""
    def kernel(**kwargs: object) -> dict:
        return kwargs
    return kernel(x_ptr=0, **config)


def test_the_entry_read_and_passed_is_the_launchs(tmp_path: Path) -> None:
    path = _write(tmp_path, VLLM_LIKE, 4)
    reads: list = []
    with noting_json_reads(reads), open(path) as f:
        document = json.load(f)
    document.pop("triton_version")
    configs = {int(k): v for k, v in document.items()}  # vLLM's own steps
    passed = _launch(configs[64])
    entry = source_of(reads, passed, (("num_warps", 8),))
    assert entry is not None and entry.path == ("64",) and entry.file == str(path)
    # A launch passed other values than any entry holds has none.
    assert source_of(reads, {**passed, "BLOCK_SIZE_N": 256}, (("num_warps", 8),)) is None
    # json.load outside is json.load.
    with open(path) as f:
        assert type(json.load(f)) is dict


def test_the_patch_changes_only_the_entrys_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, VLLM_LIKE, 4)
    reads: list = []
    with noting_json_reads(reads), open(path) as f:
        document = json.load(f)
    passed = _launch(document["64"])
    found = config_source(source_of(reads, passed, (("num_warps", 8),)), (("num_warps", 8),), str(tmp_path), [])
    assert found.file == "E=8,N=64.json" and found.changed == {"num_warps": 8}
    changed = [line for line in found.patch.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == ['-        "num_warps": 4,', '+        "num_warps": 8,']
    assert ConfigSource.from_dict(json.loads(json.dumps(found.to_dict()))) == found


def test_a_layout_that_cannot_be_written_again_gets_no_patch(tmp_path: Path) -> None:
    assert patch_text(str(_write(tmp_path, VLLM_LIKE, 2)), "c.json", ("1",), {"num_warps": 8}).count("\n+ ") == 1
    odd = tmp_path / "odd.json"
    odd.write_text('{"1": {"num_warps": 4,   "num_stages": 2}}\n')  # hand-aligned: no json.dumps layout
    assert patch_text(str(odd), "odd.json", ("1",), {"num_warps": 8}) == ""
