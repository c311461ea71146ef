"""The census's outputs, one module each, registered in OUTPUTS: `python -m pytest_nosync census <name>` is built
from it (the subcommands in its order, each with its help and arguments; `census REPORT...` is its first, the table).

An output module (table, diff, raises, scenarios, plot, merge, new, twins) reads a run's --nosync-report as a census
(base), renders it with the census's data modules (census.table, census.diff, census.upstream, census.scenario_map,
census.modular_twins; merge: census.merge) and defines
`OUTPUT = Output(name, help, arguments, run)`. Adding an output: one module here, its entry below, its test.
"""

from __future__ import annotations

from . import diff, merge, new, plot, raises, scenarios, table, twins
from .base import Output

OUTPUTS: dict[str, Output] = {
    module.OUTPUT.name: module.OUTPUT for module in (table, diff, raises, scenarios, plot, merge, new, twins)
}
DEFAULT = "table"  # `census REPORT...` is `census table REPORT...`: the table came first, and its command line stays

__all__ = ["DEFAULT", "OUTPUTS", "Output"]
