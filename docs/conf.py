"""Sphinx configuration of the documentation site (``make docs``: ``sphinx-build -W -n``, offline).

The pages are Markdown (MyST); the API reference is autodoc over the docstrings, which are written in
reStructuredText with Sphinx roles (``:func:``, ``:class:``) and Google-style sections (napoleon).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

project = "sixnimmt"
author = "the sixnimmt developers"
copyright = "2026, the sixnimmt developers"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build"]

# single backticks in docstrings mean code, as they do in the Markdown pages
default_role = "literal"
nitpicky = True
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = "sixnimmt"

# Other projects' objects (numpy, torch, the standard library, the RL libraries) would be linked through intersphinx,
# which needs the internet; the build is offline, so references to them stay plain text. Every reference into this
# project must resolve.
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"~?(numpy|np|torch|nn|collections|pathlib|Path|typing|gymnasium|gym|pettingzoo|stable_baselines3|sb3_contrib"
        r"|starlette|yaml|zipfile|ray|numba|tqdm|matplotlib|openskill|textual|uvicorn|filelock|concurrent|multiprocessing"
        r"|subprocess|argparse|io|os|json|enum|dataclasses|threading|asyncio|logging|socket|secrets|Starlette|datetime"
        r"|shlex|contextlib|functools|itertools|random|math|signal|tempfile|shutil|csv|re|pickle|hashlib|pyspiel"
        r"|open_spiel|pydantic|annotated_types|platformdirs|sqlite3|runpy|importlib|ASGIApp)\b.*",
    ),
    # pydantic's field constraints, which autodoc renders inside the type annotations: not references
    (r"py:class", r"(ge|gt|le|lt|func|json_schema_input_type)=.*"),
]
napoleon_use_ivar = True
nitpick_ignore = [
    tuple(line.split(None, 1))
    for line in (Path(__file__).parent / "nitpick_ignore.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]
