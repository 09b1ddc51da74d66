"""`rmreplay fleet`: many clusters' RM streams parsed (and audited) on Dask into one dataset.

    from replay.apps.fleet import build_dataset, dask_client, fleet_streams
    with dask_client(workers=2, scheduler=None) as (client, _dashboard):
        build_dataset(fleet_streams(["prod=/logs/prod", "test.tar.gz"]), Path("fleet"), client)
"""

from replay.apps.fleet.dataset import is_dataset, read_manifest, scan_table
from replay.apps.fleet.run import FleetResult, build_dataset, dask_client
from replay.apps.fleet.streams import Stream, fleet_streams

__all__ = ["FleetResult", "Stream", "build_dataset", "dask_client", "fleet_streams", "is_dataset", "read_manifest",
           "scan_table"]
