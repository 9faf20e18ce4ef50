"""What a kind body says, as kept: each line once, checkout paths relative, and what a library says once
per process told apart from a key's own lines (the whole path, surveyed: tests/commands/test_cli_run.py's
test_what_a_library_says_once_per_process_is_the_surveys_not_a_keys)."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from regsurvey.engine.launcher_messages import MAX_LENGTH, Heard, Messages, listening


def unhandled_logger(name: str) -> logging.Logger:
    """A library's logger with no handler on the way to the root: its warnings go to stderr through
    ``logging.lastResort``."""
    logger = logging.getLogger(name)
    logger.propagate = False
    logger.handlers.clear()
    return logger


def test_a_warning_of_a_logger_without_a_handler_is_kept_once() -> None:
    logger = unhandled_logger("tests.unhandled")
    with listening() as said:
        logger.warning("no tuned config for %d rows", 8)
        print("a line of its own", file=sys.stderr)
    assert said.lines == ["WARNING tests.unhandled: no tuned config for 8 rows", "stderr: a line of its own"]


def test_a_record_a_handler_writes_to_stderr_is_kept_once() -> None:
    """A library that sets up its own handler while the body runs writes each record to the stderr of that
    moment (the listener's) as well."""
    logger = unhandled_logger("tests.own_handler")
    with listening() as said:
        handler = logging.StreamHandler()  # sys.stderr, as it is now
        logger.addHandler(handler)
        try:
            logger.warning("picked block 64")
        finally:
            logger.removeHandler(handler)
    assert said.lines == ["WARNING tests.own_handler: picked block 64"]


def test_paths_inside_the_checkout_are_relative_and_not_cut(tmp_path: Path) -> None:
    """A survey of another commit runs in a temporary worktree: its long path, different on every run, is
    not kept (and does not use up the line's length, cutting off the file a launcher chose)."""
    checkout = tmp_path / ("regsurvey-" + "x" * 200) / ("y" * 200) / "tree"
    chosen = "configs/E=256,N=1024,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8.json"
    logger = unhandled_logger("tests.paths")
    with listening(checkout) as said:
        logger.info("Using configuration from %s", checkout / chosen)
        print(f"read {checkout.resolve() / chosen} and /opt/elsewhere/{chosen}")
    assert len(str(checkout / chosen)) > MAX_LENGTH
    assert said.lines == [f"INFO tests.paths: Using configuration from {chosen}",
                          f"stdout: read {chosen} and /opt/elsewhere/{chosen}"]


def test_a_messages_path_outside_the_checkout_stays(tmp_path: Path) -> None:
    messages = Messages(tmp_path / "tree")
    messages.add(f"read {tmp_path}/treehouse/x.json")  # not inside the checkout: a sibling with a longer name
    assert messages.lines == [f"read {tmp_path}/treehouse/x.json"]


def lru_cached_library() -> tuple[Callable[[int], None], str]:
    """A launcher whose config loader is lru_cache'd and logs the file it loads (vLLM's get_moe_configs)."""
    logger = unhandled_logger("tests.cached")

    @functools.cache  # an lru_cache without a bound
    def config(n: int) -> int:
        logger.info("Using configuration from N=%d.json", n)
        return 64

    def launch(rows: int) -> None:
        config(4096)
        logger.info("launch for %d rows", rows)

    return launch, "INFO tests.cached: Using configuration from N=4096.json"


def set_guarded_library() -> tuple[Callable[[int], None], str]:
    """A launcher that logs through a set-guarded info_once."""
    logger = unhandled_logger("tests.guarded")
    said: set[str] = set()

    def launch(rows: int) -> None:
        if "config" not in said:
            said.add("config")
            logger.info("Using configuration from N=4096.json")
        logger.info("launch for %d rows", rows)

    return launch, "INFO tests.guarded: Using configuration from N=4096.json"


@pytest.mark.parametrize("library", [lru_cached_library, set_guarded_library])
def test_a_line_said_once_per_process_is_told_from_a_keys_own(
        library: Callable[[], tuple[Callable[[int], None], str]]) -> None:
    """Whichever key runs first says the config line: it is said once per process, and no key's; each key
    keeps its own line, though it too is new to the process when first said."""
    launch, config_line = library()
    heard = Heard()
    name = config_line.split(":")[0].split()[1]

    def run(rows: int) -> Messages:
        with listening() as said:
            launch(rows)
        return said

    kept = {}
    for rows in (16, 2, 8):
        said = run(rows)
        once = heard.said_once(said, functools.partial(run, rows))
        kept[rows] = (said.lines_without(once), once)
    assert kept == {16: ([f"INFO {name}: launch for 16 rows"], [config_line]),
                    2: ([f"INFO {name}: launch for 2 rows"], []),
                    8: ([f"INFO {name}: launch for 8 rows"], [])}


def test_a_body_run_again_only_for_a_line_not_heard_before() -> None:
    heard = Heard()
    runs = []

    def again() -> Messages:
        runs.append(1)
        messages = Messages()
        messages.add("said each time")
        return messages

    first = Messages()
    first.add("said each time")
    assert heard.said_once(first, again) == [] and len(runs) == 1
    assert heard.said_once(first, again) == [] and len(runs) == 1  # heard before: the key's own
