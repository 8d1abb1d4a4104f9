"""Shared by the two checks of dpsample's imports (issue 29 item 5).

``tests/test_module_layout.py`` (no circle among the imports that run when a module
is imported) and ``tests/test_import_arrows.py`` (every arrow, deferred ones too; known
circles may only shrink) draw different graphs over the same modules; both list the
modules with :func:`modules` and find circles with :func:`circles`, the strongly
connected components of more than one module (scipy's, not a hand-written Tarjan).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components


def modules(package: Path) -> dict[str, Path]:
    """``{dotted name: file}`` of every module under the package folder ``package``.

    A package's ``__init__.py`` is named after the package (``pkg.sub``).
    """
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module, sorted.

    ``graph`` maps each module to the modules it imports (arrows to names outside
    ``graph`` are ignored).
    """
    names = sorted(graph)
    index = {name: i for i, name in enumerate(names)}
    rows, cols = [], []
    for name, targets in graph.items():
        for t in targets:
            if t in index:
                rows.append(index[name])
                cols.append(index[t])
    adjacency = csr_matrix(
        (np.ones(len(rows)), (rows, cols)), shape=(len(names), len(names))
    )
    _, labels = connected_components(adjacency, directed=True, connection="strong")
    groups: dict[int, set[str]] = {}
    for name, label in zip(names, labels, strict=True):
        groups.setdefault(int(label), set()).add(name)
    return sorted((g for g in groups.values() if len(g) > 1), key=sorted)
