"""Where suites keep their files, and fetching them from the Hugging Face hub (an optional extra).

``huggingface_hub`` (and ``datasets`` for OOLONG) come with ``pip install 'deepagent-magics[quality]'``;
they are imported only when a download is needed, and anything that goes wrong (not installed,
offline, no such repository) is a `SuiteUnavailable` with one line that says what to do.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...errors import UserError

DEFAULT_CACHE = "~/.cache/deepagent-magics/bench"
CACHE_ENV = "DEEPAGENT_BENCH_CACHE"
EXTRA = "pip install 'deepagent-magics[quality]'"


class SuiteUnavailable(UserError, RuntimeError):
    """A suite's data cannot be had (missing package, offline, unreadable files); the message is one line."""


def cache_dir(value: str | os.PathLike | None = None) -> Path:
    """The benchmark cache: ``value``, else ``$DEEPAGENT_BENCH_CACHE``, else ~/.cache/deepagent-magics/bench."""
    return Path(value or os.environ.get(CACHE_ENV) or DEFAULT_CACHE).expanduser()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def snapshot(repo: str, local_dir: Path, patterns: list[str]) -> None:
    """Download the files of the dataset repository ``repo`` matching ``patterns`` into ``local_dir``."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise SuiteUnavailable(f"downloading {repo} needs huggingface_hub: {EXTRA} "
                               f"(or put the files in {local_dir})") from None
    try:
        snapshot_download(repo_id=repo, repo_type="dataset", local_dir=str(local_dir), allow_patterns=patterns)
    except Exception as exc:  # offline, gated, renamed: one line, never a traceback
        raise SuiteUnavailable(f"cannot download {repo} from the Hugging Face hub ({_first_line(exc)}); "
                               f"when offline, put its files in {local_dir}") from None


def dataset_rows(repo: str, split: str, config: str | None = None) -> Any:
    """The rows of a hub dataset's split, through ``datasets`` (for suites published as Parquet)."""
    try:
        import datasets
    except ImportError:
        raise SuiteUnavailable(f"downloading {repo} needs the datasets package: {EXTRA}") from None
    try:
        return datasets.load_dataset(repo, config, split=split) if config else datasets.load_dataset(repo, split=split)
    except Exception as exc:
        raise SuiteUnavailable(f"cannot load {repo} ({split}) from the Hugging Face hub ({_first_line(exc)})") from None
