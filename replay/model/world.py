"""Old import path of the cycle rebuild, kept for the modules that still import it from here.

The rebuild lives in modules named for what they hold: replay.model.bootstrap (settings),
replay.model.machines (inventory, solver, liveness), replay.model.needy, replay.model.submission,
replay.model.published, replay.model.clock, replay.model.assembly, and the entry points in
replay.model.start.
"""

from replay.model.assembly import WORK_TYPES, cycle_count
from replay.model.bootstrap import Bootstrap
from replay.model.published import existing_order, job_table_order
from replay.model.start import bootstrap
from replay.model.start import node_liveness as machines
from replay.model.submission import submission_order

# re-exported for replay/cli.py, replay/apps/{audit,whatif,stored}.py, replay/apps/simulate/ and tui/
__all__ = ["WORK_TYPES", "Bootstrap", "bootstrap", "cycle_count", "existing_order", "job_table_order", "machines",
           "submission_order"]
