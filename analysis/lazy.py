"""SciPy's and statsmodels' modules, imported when a statistic first uses them.

A researcher's page imports the analysis package to read a stored report (its classes live here) and
draw it, and uses no SciPy for that; ``scipy.stats`` alone takes about half a second to import. The
statistics name these stand-ins as they would the modules (``stats.t.ppf``), and the first attribute
read imports the module. Unlike :class:`importlib.util.LazyLoader` nothing in ``sys.modules`` is
swapped, so threads that import at once are serialized by the import system's own module locks.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = [
    "LazyModule",
    "contingency_tables",
    "integrate",
    "optimize",
    "proportion",
    "sparse",
    "special",
    "stats",
]


class LazyModule:
    """A module imported on the first read of one of its attributes."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


stats = LazyModule("scipy.stats")
optimize = LazyModule("scipy.optimize")
integrate = LazyModule("scipy.integrate")
sparse = LazyModule("scipy.sparse")
special = LazyModule("scipy.special")
proportion = LazyModule("statsmodels.stats.proportion")
contingency_tables = LazyModule("statsmodels.stats.contingency_tables")
