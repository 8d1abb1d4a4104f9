"""Hooks of the docs build (``mkdocs.yml``, ``hooks:``): content derived from code.

``on_page_markdown`` expands each ``<!-- options: module:Class -->`` line of a page
into the option table of that declaration
(:func:`dpsample.options.expand_option_tables`), so the docs' option tables are read
from the one declaration of each algorithm's options, never written by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

# the checkout being built, before any installed copy of dpsample
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpsample.options import expand_option_tables  # noqa: E402


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """The page with its option tables expanded."""
    return expand_option_tables(markdown)
