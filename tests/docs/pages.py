"""The code blocks of the documentation pages (``docs/*.md`` and ``README.md``).

A fenced ``python`` block is marked by the HTML comment on the line before it:

- ``<!-- run -->``: an example that runs as written, from the repository root,
  in a fresh interpreter (``tests/docs/test_examples.py``);
- ``<!-- run if: MODULE -->``: the same, when ``MODULE`` is installed (skipped otherwise);
- ``<!-- recipe: NAME -->``: a training recipe, run the same way by
  ``tests/adapters/test_readme_recipes.py``, which also watches what it trains on;
- ``<!-- not run: REASON -->``: shown only (it needs a cluster, a GPU, files the
  repository does not ship...).

The environment an example runs with is what its page tells the reader to set: a
``bash`` block marked ``<!-- env -->`` holding ``export NAME=value`` lines applies
to the runnable blocks after it in the same ``##`` section.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_MARK = re.compile(r"<!--\s*(run|run if:\s*[\w.]+|env|recipe:\s*[\w-]+|not run:[^>]*)\s*-->\s*$")
_EXPORT = re.compile(r"^export\s+([A-Za-z_][A-Za-z0-9_]*)=(\S*)\s*$")


@dataclass(frozen=True)
class Block:
    page: str          # path relative to the repository root
    line: int          # line of the opening fence
    lang: str
    code: str
    mark: str | None   # "run", "env", "recipe: NAME", "not run: ...", or None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def recipe(self) -> str | None:
        return self.mark.split(":", 1)[1].strip() if self.mark and self.mark.startswith("recipe:") else None

    @property
    def needs(self) -> str | None:
        """The module a ``run if:`` example needs."""
        return self.mark.split(":", 1)[1].strip() if self.mark and self.mark.startswith("run if:") else None

    @property
    def runnable(self) -> bool:
        return self.mark == "run" or self.needs is not None or self.recipe is not None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """The pages whose examples are checked: every ``docs/**/*.md`` and the README."""
    return sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, with their marks and the environment the page sets."""
    text = page.read_text()
    out: list[Block] = []
    env: dict[str, str] = {}
    last_section = 0
    for match in _FENCE.finditer(text):
        start = match.start()
        line = text.count("\n", 0, start) + 1
        section = text.rfind("\n## ", 0, start)
        if section != last_section:          # a new ## section: what was exported before is gone
            env, last_section = {}, section
        before = text[:start].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.search(before)
        kind = mark.group(1) if mark else None
        for prefix in ("recipe:", "run if:"):
            if kind is not None and kind.startswith(prefix):
                kind = f"{prefix} " + kind.split(":", 1)[1].strip()
        lang, code = match.group(1), match.group(2)
        if kind == "env":
            for row in code.splitlines():
                found = _EXPORT.match(row.strip())
                if found:
                    env[found.group(1)] = found.group(2)
        out.append(Block(str(page.relative_to(ROOT)), line, lang, code, kind, dict(env)))
    return out


def all_blocks() -> list[Block]:
    return [b for page in pages() for b in blocks(page)]


#: variables of the test run that a reader's shell would not have (CI's backend switches included)
_HARNESS = re.compile(r"^(KERAS_BACKEND|LSTM_DATA_.*|PYTEST_.*)$")


def duplicate_pass() -> str | None:
    """Why examples are not run again in this pass, or None.

    The examples run with a reader's environment, which never holds CI's
    ``LSTM_DATA_PURE_PYTHON=1``: in that pass they would repeat the main pass's run.
    """
    if os.environ.get("LSTM_DATA_PURE_PYTHON", "") not in ("", "0"):
        return "the pure-Python pass: the examples run with a reader's environment in the main pass"
    return None


def reader_environment(block: Block) -> dict[str, str]:
    """The environment of a fresh shell plus only what ``block``'s page says to export."""
    env = {k: v for k, v in os.environ.items() if not _HARNESS.match(k)}
    env.update(block.env)
    return env
