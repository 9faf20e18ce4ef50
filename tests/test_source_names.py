"""The one name of a source file, wherever its code was imported from (regsurvey/source_names.py): the same
file, imported from a ``site-packages`` directory, a ``PYTHONPATH`` directory, a checkout or a survey's
temporary worktree, on this machine or another, has one name (RESULTS.md, issue 35's defect 5: "the VGPR
peak moved from /tmp/proof/libs-from/liger_kernel/ops/rms_norm.py:128 to liger_kernel/ops/rms_norm.py:128")."""

from __future__ import annotations

from pathlib import Path

import pytest

from regsurvey.source_names import (
    checkout_name,
    imported_name,
    installed_name,
    package_root,
    site_name,
    source_name,
    worktree_name,
)


def library(directory: Path, *modules: str) -> Path:
    """``liger_kernel`` (a package with a subpackage ``ops``) under ``directory``, with ``modules`` (paths
    relative to ``directory``, their directories made, without ``__init__.py`` unless named)."""
    ops = directory / "liger_kernel" / "ops"
    ops.mkdir(parents=True)
    for init in (ops.parent / "__init__.py", ops / "__init__.py", ops / "rms_norm.py"):
        init.write_text("")
    for module in modules:
        (directory / module).parent.mkdir(parents=True, exist_ok=True)
        (directory / module).write_text("")
    return directory


def test_a_library_has_one_name_wherever_it_was_imported_from(tmp_path: Path) -> None:
    site = library(tmp_path / "venv" / "lib" / "python3.12" / "site-packages")
    elsewhere = library(tmp_path / "proof" / "libs-from")  # a .pth or PYTHONPATH directory
    editable = library(tmp_path / "src" / "Liger-Kernel" / "src")  # an editable install's source tree
    for root in (site, elsewhere, editable):
        assert source_name(str(root / "liger_kernel" / "ops" / "rms_norm.py")) == "liger_kernel/ops/rms_norm.py"
        assert site_name(f"{root}/liger_kernel/ops/rms_norm.py:128") == "liger_kernel/ops/rms_norm.py:128"
    # Not here (another machine's, or a directory since removed): below a site-packages directory it is
    # named still; elsewhere it stays as it is, there being nothing to say where its package starts.
    assert source_name("/home/ci/venv/lib/python3.12/site-packages/liger_kernel/ops/rms_norm.py") == \
        "liger_kernel/ops/rms_norm.py"
    assert source_name("/usr/lib/python3/dist-packages/vllm/attention.py") == "vllm/attention.py"
    assert source_name("/gone/libs/liger_kernel/ops/rms_norm.py") == "/gone/libs/liger_kernel/ops/rms_norm.py"


def test_the_repositorys_own_files_are_named_from_the_checkout(tmp_path: Path) -> None:
    checkout = library(tmp_path / "repo", "keys/k.py", ".venv/lib/python3.12/site-packages/vllm/__init__.py")
    assert source_name(str(checkout / "keys" / "k.py"), checkout) == "keys/k.py"
    # A package of the repository: from the checkout's root, not from where the package starts.
    assert source_name(str(checkout / "liger_kernel" / "ops" / "rms_norm.py"), checkout) == \
        "liger_kernel/ops/rms_norm.py"
    assert source_name(str(checkout / "keys" / "k.py"), str(checkout / ".." / "repo")) == "keys/k.py"
    # A virtual environment inside the checkout holds libraries, not the repository's files.
    assert source_name(str(checkout / ".venv/lib/python3.12/site-packages/vllm/__init__.py"), checkout) == \
        "vllm/__init__.py"
    # A survey of a commit ran in a temporary worktree (this machine's or another's, since removed).
    assert source_name("/tmp/regsurvey-0123456789-x1y2/tree/keys/k.py", checkout) == "keys/k.py"
    assert source_name("/scratch/regsurvey-abcdef0123-q/tree/src/pkg/ops.py") == "src/pkg/ops.py"


def test_a_checkout_behind_a_link_is_the_checkout(tmp_path: Path) -> None:
    real = library(tmp_path / "real", "keys/k.py")
    (tmp_path / "link").symlink_to(real)
    assert checkout_name(str(tmp_path / "link" / "keys" / "k.py"), real) == "keys/k.py"
    assert checkout_name(str(real / "keys" / "k.py"), tmp_path / "link") == "keys/k.py"
    assert checkout_name(str(tmp_path / "realm" / "k.py"), real) is None  # a sibling sharing a prefix
    assert checkout_name(str(real), real) is None  # the directory itself is no file of it
    assert checkout_name("keys/k.py", real) is None  # a name already


def test_a_top_level_module_or_a_namespace_package_is_named_from_the_import_path(tmp_path: Path) -> None:
    libs = library(tmp_path / "libs", "flat.py", "ns/inner.py")
    assert package_root(str(libs / "flat.py")) is None and package_root(str(libs / "ns" / "inner.py")) is None
    path = [str(tmp_path), str(libs), "", "relative/entry", "/"]  # the longest entry holding it; "/" holds all
    assert imported_name(str(libs / "flat.py"), path) == "flat.py"
    assert imported_name(str(libs / "ns" / "inner.py"), path) == "ns/inner.py"
    assert imported_name(str(libs / "flat.py")) is None
    assert source_name(str(libs / "flat.py")) == str(libs / "flat.py")
    assert source_name(str(libs / "flat.py"), import_path=path) == "flat.py"
    # A package's module: from where its top-level package lies, whatever the import path holds.
    assert package_root(str(libs / "liger_kernel" / "ops" / "rms_norm.py")) == str(libs)
    assert imported_name(str(libs / "liger_kernel" / "ops" / "rms_norm.py"), path) == "liger_kernel/ops/rms_norm.py"


@pytest.mark.parametrize(("path", "named"), [
    ("/usr/lib/python3/site-packages/../../../../etc/passwd", None),
    ("/a/site-packages/b/site-packages/c.py", "c.py"),  # a vendored environment: below the last
    ("/a/site-packages", None),
    ("/a/site-packages/x/../y.py", "y.py"),
])
def test_installed_name(path: str, named: str | None) -> None:
    assert installed_name(path) == named


def test_what_names_no_file_stays_as_it_is() -> None:
    assert source_name("<string>") == "<string>"
    assert site_name("<string>:3") == "<string>:3"
    assert site_name("no line here") == "no line here"
    assert site_name(":12") == ":12"
    assert source_name("liger_kernel/ops/rms_norm.py", "/anywhere") == "liger_kernel/ops/rms_norm.py"
    assert worktree_name("/tmp/regsurvey-notasha-x/tree/k.py") is None
