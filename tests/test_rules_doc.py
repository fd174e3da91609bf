"""docs/RULES.md, the rule specification the code cites: every number exists, and its observation table is the
code's piece table (``sixnimmt_env.observation.PIECES``), so the two cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

import sixnimmt_env.observation as observation
from sixnimmt_env.observation import OBS_SIZE, PIECES

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "docs" / "RULES.md"
NUMBERS = [f"R{i}" for i in range(1, 15)] + ["R9a", "R9b", "V1", "V2", "E1", "E2", "E3", "E4"]


def _defined() -> list[str]:
    return re.findall(r"^\*\*([RVE]\d+[ab]?)\.\*\*", RULES.read_text(), flags=re.MULTILINE)


def test_every_rule_and_edge_case_is_defined_once_in_order() -> None:
    assert _defined() == [
        *[f"R{i}" for i in range(1, 10)], "R9a", "R9b", *[f"R{i}" for i in range(10, 15)],
        "V1", "V2", "E1", "E2", "E3", "E4",
    ]  # fmt: skip
    assert sorted(_defined()) == sorted(NUMBERS)


def test_every_rule_the_code_cites_is_defined() -> None:
    defined = set(_defined())
    cited: dict[str, set[str]] = {}
    for path in [*ROOT.glob("sixnimmt_env/**/*.py"), *ROOT.glob("training/*.py"), *ROOT.glob("tests/*.py")]:
        for number in re.findall(r"\b([RVE]\d{1,2}[ab]?)\b", path.read_text()):
            if re.fullmatch(r"R(1[0-4]|[1-9])[ab]?|V[12]|E[1-4]", number):
                cited.setdefault(number, set()).add(path.name)
    assert set(cited) <= defined
    assert {"R7", "R8", "R9", "R9b", "V2", "E4"} <= set(cited)  # the scan does find citations


def _table(text: str, header: str) -> list[tuple[str, int]]:
    """``(piece, size)`` rows of the Markdown table that follows the line ``header``."""
    lines = text[text.index(header) :].splitlines()
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append((cells[0].strip("`"), int(cells[1])))
    return rows


def test_the_observation_table_is_the_piece_table() -> None:
    rows = _table(RULES.read_text(), "| piece | size | meaning (scale) |")
    assert rows == list(PIECES)
    assert sum(size for _, size in rows) == OBS_SIZE == 506


def test_the_observation_module_table_is_the_piece_table() -> None:
    doc = observation.__doc__ or ""
    body = doc[doc.index("piece              size") :].splitlines()[2:]
    rows = []
    for line in body:
        if line.startswith("="):
            break
        name, size, *_ = line.split()
        if not line.startswith(" "):
            rows.append((name, int(size)))
    assert rows == list(PIECES)


def test_the_environment_page_names_every_piece() -> None:
    page = (ROOT / "docs" / "environment.md").read_text()
    table = page[page.index("| piece | size | meaning (scale) |") :].split("\n\n")[0]
    first_cells = [line.split("|")[1] for line in table.splitlines()[2:]]
    assert [name for name, _ in PIECES] == [name for cell in first_cells for name in re.findall(r"`(\w+)`", cell)]
