"""The headless Chromium the HTML report tests drive (one per test module)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .chromium import Chromium


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    chromium = Chromium(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield chromium
    finally:
        chromium.close()
