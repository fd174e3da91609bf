"""The documentation site's sources (docs/, built by ``make docs``): the API reference covers every public module,
and every page is reachable from the home page."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def public_modules() -> list[str]:
    """Every module of ``sixnimmt_env`` and ``training`` but ``__main__`` and the private ``_name`` ones."""
    names = []
    for package in ("sixnimmt_env", "training"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            elif parts[-1].startswith("_"):
                continue
            names.append(".".join(parts))
    return names


def test_the_api_reference_documents_every_public_module() -> None:
    documented = re.findall(
        r"^\.\. automodule:: (\S+)$", "".join(p.read_text() for p in (DOCS / "api").glob("*.md")), flags=re.MULTILINE
    )
    assert len(documented) == len(set(documented))
    assert sorted(documented) == sorted(public_modules())
    assert {"sixnimmt_env.rules.engine", "sixnimmt_env.pettingzoo_env", "training.config.schema"} <= set(documented)


def test_every_page_is_in_a_table_of_contents() -> None:
    listed = set()
    for page in DOCS.rglob("*.md"):
        for block in re.findall(r"```\{toctree\}\n(.*?)```", page.read_text(), flags=re.DOTALL):
            entries = [line.strip() for line in block.splitlines() if line.strip() and not line.startswith(":")]
            listed |= {str((page.parent / e).relative_to(DOCS)) for e in entries}
    pages = {str(p.relative_to(DOCS).with_suffix("")) for p in DOCS.rglob("*.md")} - {"index"}
    assert pages == listed
    assert {
        "environment",
        "RULES",
        "champion",
        "tutorials/train",
        "api/index",
    } <= pages
    assert not {"champion_log", "training_speed"} & pages  # experiment logs: the lab's (lab/docs/), not the site's
    assert (ROOT / "lab" / "docs" / "champion_log.md").is_file() and (
        ROOT / "lab" / "docs" / "training_speed.md"
    ).is_file()
