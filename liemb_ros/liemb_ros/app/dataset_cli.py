"""
Dynamics datasets on Dask: ``liemb dataset ROBOT N``.

``liemb dataset ROBOT N --out DIR`` samples N states of a fixed-base robot within its
limits and writes them with the quantities asked for (τ by inverse dynamics or q̈ by
forward dynamics, M, g, a link's Jacobian) as sharded Parquet, the model's hash and the
package version in each shard's metadata (docs/sweeps.md).  Each shard is a task on a Dask
LocalCluster (one worker per core), or on a running cluster: ``--scheduler
tcp://HOST:PORT`` or ``DASK_SCHEDULER_ADDRESS``.
"""
from ..core.model import URDFError
from .sweep_cli import engine_arguments, fail


def add_arguments(parser):
    """Add the ``liemb dataset`` arguments to ``parser``."""
    from ..sweep.dataset import DISTRIBUTIONS, INPUTS, QUANTITIES
    parser.add_argument('robot', help='URDF or xacro file, or a shipped robot name')
    parser.add_argument('n', type=int, help='number of samples')
    parser.add_argument('--out', default='out/dataset', help='output folder')
    parser.add_argument('--quantities', nargs='*', default=['M', 'g'], choices=QUANTITIES,
                        help='besides q, qd, qdd, tau (default: M g)')
    parser.add_argument('--inputs', choices=INPUTS, default='accel',
                        help='accel: sample qdd, tau by inverse dynamics; torque: sample tau, '
                             'qdd by forward dynamics')
    parser.add_argument('--link', help='the link of J (default: the last link)')
    parser.add_argument('--representation', default='body',
                        help='of J: body, spatial, hybrid or mixed')
    parser.add_argument('--distribution', choices=DISTRIBUTIONS, default='uniform')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--shard-rows', type=int, default=100_000, help='rows per shard')
    engine_arguments(parser)


def run(args):
    """Run ``liemb dataset``; return the exit status (2 and one line on bad input)."""
    from ..sweep import SpecError
    from ..sweep.dataset import make_dataset
    from ..sweep.engine import robot_text
    try:
        settings = make_dataset(
            robot_text(args.robot), args.n, args.out, quantities=args.quantities,
            inputs=args.inputs, link=args.link, representation=args.representation,
            distribution=args.distribution, seed=args.seed, shard_rows=args.shard_rows,
            scheduler=args.scheduler, workers=args.workers, serial=args.serial, log=print)
    except (SpecError, FileNotFoundError, URDFError, OSError) as exc:
        return fail('dataset', exc)
    print(f"{settings['n']} samples of {settings['robot']} (model {settings['model_hash']}) "
          f"in {settings['seconds']:.1f} s: {args.out}")
    return 0
