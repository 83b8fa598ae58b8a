"""
Dynamics datasets on Dask: ``liemb dataset ROBOT N``.

``liemb dataset ROBOT N --out DIR`` samples N states of a fixed-base robot within its
limits and writes them with the quantities asked for (τ by inverse dynamics or q̈ by
forward dynamics, M, g, a link's Jacobian) as sharded Parquet (or Zarr: ``--format
zarr``), the model's hash and the
package version in each shard's metadata (docs/sweeps.md).  ``liemb dataset ROBOT
--recordings RUN.mcap ...`` processes recorded runs alike instead: one shard per
recording, its joint states with the accelerations of ``liemb identify``'s filter, the
recorded efforts and the model's torques and quantities at them
(:mod:`~liemb_ros.app.recording_dataset`).  Each shard is a task on a Dask LocalCluster
(one worker per core), or on a running cluster: ``--scheduler tcp://HOST:PORT`` or
``DASK_SCHEDULER_ADDRESS``.
"""
from ..core.model import URDFError
from .sweep_cli import engine_arguments, fail, missing_engine


def add_arguments(parser):
    """Add the ``liemb dataset`` arguments to ``parser``."""
    from ..sweep.dataset import DISTRIBUTIONS, FORMATS, INPUTS, QUANTITIES
    parser.add_argument('robot', help='URDF or xacro file, or a shipped robot name')
    parser.add_argument('n', type=int, nargs='?', help='number of samples (or --recordings)')
    parser.add_argument('--recordings', nargs='+', metavar='RUN.mcap',
                        help='recorded runs to process alike, one shard each, instead of '
                             'sampled states')
    parser.add_argument('--topic', default='/joint_states',
                        help='of the recordings: the joint states with efforts')
    parser.add_argument('--cutoff', type=float, default=20.0,
                        help="of the recordings: the zero-phase filter's cut-off [Hz] before "
                             'differentiating (0: none), as liemb identify')
    parser.add_argument('--effort-held', action='store_true',
                        help='of the recordings: efforts held over the interval before their '
                             'stamps (a lock-step simulation), as liemb identify')
    parser.add_argument('--out', default='out/dataset', help='output folder')
    parser.add_argument('--format', choices=FORMATS, default='parquet',
                        help='of the shards: a Parquet file or a Zarr group each')
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
    from .recording_dataset import make_recording_dataset
    engine = dict(scheduler=args.scheduler, workers=args.workers, serial=args.serial, log=print)
    common = dict(quantities=args.quantities, link=args.link,
                  representation=args.representation, fmt=args.format)
    try:
        if (args.n is None) == (args.recordings is None):
            raise SpecError('give N samples or --recordings RUN.mcap ..., one of the two')
        text = robot_text(args.robot)
        if args.recordings:
            settings = make_recording_dataset(text, args.recordings, args.out, topic=args.topic,
                                              cutoff=args.cutoff, effort_held=args.effort_held,
                                              **common, **engine)
            what = f"{len(settings['recordings'])} recordings"
        else:
            settings = make_dataset(text, args.n, args.out, inputs=args.inputs,
                                    distribution=args.distribution, seed=args.seed,
                                    shard_rows=args.shard_rows, **common, **engine)
            what = f"{settings['n']} samples"
    except (SpecError, FileNotFoundError, URDFError, OSError) as exc:
        return fail('dataset', exc)
    except ModuleNotFoundError as exc:
        return missing_engine('dataset', exc)
    print(f"{what} of {settings['robot']} (model {settings['model_hash']}) "
          f"in {settings['seconds']:.1f} s: {args.out}")
    return 0
