"""The optional extras: named so that every pip installs them, and every mention names one that exists.

pip before 23.3 (Python 3.11's bundled 23.2 among them) looks an extra up by the name as written in the
metadata, after normalizing only what the user typed: an extra declared ``rsl_rl`` is then "not
provided" to ``pip install -e '.[rsl_rl]'`` and installs nothing. Names already in PEP 685's normalized
form (lowercase, runs of ``-_.`` as one ``-``) are found by every pip.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11's")

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = [ROOT / "pyproject.toml", *sorted(ROOT.glob("plugins/*/pyproject.toml"))]
# Where an install command or an error message may name an extra: agent-arena[a,b] or pip's '.[a,b]'.
MENTION = re.compile(r"""(?:agent-arena|["']\.)\[([A-Za-z0-9_.,\- ]+)\]""")
SCANNED = ["README.md", "Makefile", "pyproject.toml", "docs/**/*.md", "examples/**/*.py", "arena/**/*.py",
           "plugins/**/*.py", "tests/**/*.py", "benchmarks/**/*", ".ci/**/*"]


def normalized(name: str) -> str:
    """PEP 685 (and PEP 503) normalization."""
    return re.sub(r"[-_.]+", "-", name).lower()


def extras(project: Path) -> dict[str, list[str]]:
    return tomllib.loads(project.read_text())["project"].get("optional-dependencies", {})


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_extra_is_named_in_normalized_form(project: Path) -> None:
    names = list(extras(project))
    assert [name for name in names if normalized(name) != name] == [], \
        f"{project}: name extras lowercase with hyphens (PEP 685), or pip < 23.3 will not find them"


def test_every_mention_of_an_extra_names_one_that_exists() -> None:
    declared = set(extras(ROOT / "pyproject.toml"))
    wrong = []
    for pattern in SCANNED:
        for path in sorted(ROOT.glob(pattern)):
            if not path.is_file() or ".venv" in path.parts or path == Path(__file__).resolve():
                continue
            try:
                text = path.read_text()
            except UnicodeDecodeError:
                continue
            for match in MENTION.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                wrong += [f"{path.relative_to(ROOT)}:{line}: {name.strip()!r}"
                          for name in match.group(1).split(",") if name.strip() not in declared]
    assert wrong == [], f"mentions of extras that pyproject.toml does not declare ({sorted(declared)}): {wrong}"


def test_the_wrappers_name_the_extra_that_installs_each_interface() -> None:
    from arena.wrappers import INTERFACES

    declared = set(extras(ROOT / "pyproject.toml"))
    assert {extra for _, extra in INTERFACES.values()} <= declared
