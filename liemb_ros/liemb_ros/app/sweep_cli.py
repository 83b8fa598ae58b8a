"""
Simulation sweeps on Dask: ``liemb sweep SPEC.yaml``.

``liemb sweep SPEC.yaml --out DIR`` runs every run of a sweep spec (robot, controller,
scenario, varied parameters; docs/sweeps.md) and writes ``DIR/results.parquet`` (one row
per run) and ``DIR/metrics.png``; started again with the same spec it runs only what is
missing.  It runs on a Dask LocalCluster (one worker per core), or on a running
cluster: ``--scheduler tcp://HOST:PORT`` or ``DASK_SCHEDULER_ADDRESS``.
"""
import sys

from ..core.model import URDFError


def add_arguments(parser):
    """Add the ``liemb sweep`` arguments to ``parser``."""
    parser.add_argument('spec', help='the sweep spec, a YAML file (docs/sweeps.md)')
    parser.add_argument('--out', default='out/sweep', help='output folder (default out/sweep)')
    engine_arguments(parser)
    parser.add_argument('--overwrite', action='store_true',
                        help='start over in a folder that holds another sweep')


def engine_arguments(parser):
    """Add the engine's arguments (scheduler, workers, serial) to ``parser``."""
    parser.add_argument('--scheduler', metavar='tcp://HOST:PORT',
                        help='a running Dask scheduler (default: DASK_SCHEDULER_ADDRESS, '
                             'else a LocalCluster)')
    parser.add_argument('--workers', type=int, help='LocalCluster worker processes '
                                                    '(default: one per core)')
    parser.add_argument('--serial', action='store_true',
                        help='no Dask: every run in this process, one after the other')


def fail(command, exc):
    """Print ``liemb COMMAND: reason`` on stderr; return the exit status 2."""
    print(f'liemb {command}: {exc}', file=sys.stderr)
    return 2


def missing_engine(command, exc):
    """``liemb COMMAND`` without Dask or pyarrow installed: one line, exit 2; else re-raise."""
    from ..sweep.engine import MISSING
    if (exc.name or '').split('.')[0] not in ('pyarrow', 'distributed', 'dask'):
        raise exc
    return fail(command, MISSING)


def run(args):
    """Run ``liemb sweep``; return the exit status (2 and one line on bad input)."""
    from ..sweep import SpecError, load_spec, run_sweep
    try:
        spec = load_spec(args.spec)
        result = run_sweep(spec, args.out, scheduler=args.scheduler, workers=args.workers,
                           serial=args.serial, overwrite=args.overwrite, progress=True,
                           log=print)
    except (SpecError, FileNotFoundError, URDFError, OSError) as exc:
        return fail('sweep', exc)
    except ModuleNotFoundError as exc:
        return missing_engine('sweep', exc)
    table = result['table']
    failed = sum(s != 'ok' for s in table.column('status').to_pylist())
    print(f"{table.num_rows} runs ({len(result['computed'])} run now, {result['skipped']} "
          f"already done, {failed} failed) in {result['seconds']:.1f} s: {result['path']}")
    return 0
