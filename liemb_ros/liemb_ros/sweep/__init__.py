"""
Sweeps and datasets: many simulations or dynamics samples, run on Dask.

* :mod:`.spec`: a sweep's specification (robot, controller, scenario, varied parameters)
  and the runs it expands to.
* :mod:`.runner`: one run (a Simulator loop under a control law) and its metrics.
* :mod:`.engine`: the runs on Dask's distributed scheduler (a LocalCluster or a running
  cluster), written to Parquet as they finish, a restart skipping what is written.
* :mod:`.dataset`: sampled states and their dynamics quantities, sharded Parquet.

The layer sits beside ``ros`` (below ``app``): it uses ``control``, ``sim`` and ``core``,
never ROS.  ``liemb sweep`` and ``liemb dataset`` (``app/sweep_cli.py``) are its commands.
"""
from .engine import run_sweep
from .spec import PARAMETERS, SpecError, check_spec, load_spec, runs

__all__ = ['run_sweep', 'check_spec', 'load_spec', 'runs', 'PARAMETERS', 'SpecError']
