"""
``liemb teleop``: keyboard teleoperation of the servo node, in a chosen twist representation.

Keys (held down: the terminal's key repeat keeps the command alive; released, the servo's
``command_timeout`` brings the arm smoothly to rest)::

    w / s   +x / -x        i / k   +wx / -wx      1 body     2 spatial
    a / d   +y / -y        j / l   +wy / -wy      3 hybrid   4 mixed
    r / f   +z / -z        u / o   +wz / -wz      + / -  speed x1.25 / x0.8
    space   stop           q       quit

Each key commands one axis of the twist ``(ω, v)`` of the servo's controlled link in the
selected representation (``liemb_interfaces/TwistRepresented`` on
``<servo>/twist_cmd_represented``); the twist is shown on screen.  ROS is imported only
by :func:`run`: the key mapping (:func:`key_twist`, :class:`Teleop`) works without it.
"""
import argparse
import math
import select
import sys
import time

import numpy as np

from ..control.servo import MAX_SPEED

REPRESENTATION_KEYS = {'1': 'body', '2': 'spatial', '3': 'hybrid', '4': 'mixed'}
#: key -> (twist component 0..5 (ωx ωy ωz vx vy vz), sign)
AXIS_KEYS = {'w': (3, 1), 's': (3, -1), 'a': (4, 1), 'd': (4, -1), 'r': (5, 1), 'f': (5, -1),
             'i': (0, 1), 'k': (0, -1), 'j': (1, 1), 'l': (1, -1), 'u': (2, 1), 'o': (2, -1)}
HELP = __doc__.split('::')[1].split('Each key')[0].rstrip()


def key_twist(key, linear, angular):
    """Return the twist (6,) (ω, v) that ``key`` commands, or None for another key."""
    axis = AXIS_KEYS.get(key)
    if axis is None:
        return None
    V = np.zeros(6)
    V[axis[0]] = axis[1] * (angular if axis[0] < 3 else linear)
    return V


class Teleop:
    """The state of the keyboard: representation, speeds, the twist of the last key."""

    def __init__(self, representation='hybrid', linear=0.05, angular=0.2, hold=0.6):
        self.representation = representation
        self.linear, self.angular, self.hold = linear, angular, hold
        self.twist = np.zeros(6)
        self.pressed = -1e9
        self.done = False

    def press(self, key, now):
        """Apply one key press at time ``now`` (seconds)."""
        V = key_twist(key, self.linear, self.angular)
        if V is not None:
            self.twist, self.pressed = V, now
        elif key in REPRESENTATION_KEYS:
            self.representation = REPRESENTATION_KEYS[key]
            self.twist = np.zeros(6)
        elif key in '+-':   # never past the servo's plausibility bound, which it refuses
            f = 1.25 if key == '+' else 0.8
            self.linear = min(self.linear * f, MAX_SPEED)
            self.angular = min(self.angular * f, MAX_SPEED)
        elif key == ' ':
            self.twist = np.zeros(6)
        elif key in ('q', '\x03'):
            self.done = True

    def command(self, now):
        """Return the twist to send at ``now``: None once the key was released."""
        if now - self.pressed > self.hold or not np.any(self.twist):
            return None
        return self.twist

    def line(self, now):
        """Return the status line shown on screen."""
        V = self.command(now)
        V = np.zeros(6) if V is None else V
        return (f'{self.representation:7s} w = [{V[0]:+.2f} {V[1]:+.2f} {V[2]:+.2f}] rad/s  '
                f'v = [{V[3]:+.3f} {V[4]:+.3f} {V[5]:+.3f}] m/s  (speed {self.linear:.3f} m/s, '
                f'{self.angular:.2f} rad/s)')


def _within(hi):
    """Return an argparse type: a number in (0, ``hi``], else a usage error (exit 2)."""
    def number(text):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0.0 < value <= hi:
            raise argparse.ArgumentTypeError(f'{text!r} is not a number > 0 and <= {hi:g}')
        return value
    return number


def add_arguments(parser):
    """Add the options of ``liemb teleop``."""
    parser.add_argument('--representation', choices=list(REPRESENTATION_KEYS.values()),
                        default='hybrid', help='twist representation at start (keys 1-4)')
    parser.add_argument('--linear', type=_within(MAX_SPEED), default=0.05,
                        help=f'linear speed [m/s], at most {MAX_SPEED:g} (the servo refuses '
                             'more)')
    parser.add_argument('--angular', type=_within(MAX_SPEED), default=0.2,
                        help=f'angular speed [rad/s], at most {MAX_SPEED:g}')
    parser.add_argument('--servo', default='liemb_servo',
                        help='the servo node (name, with its namespace if any)')
    parser.add_argument('--rate', type=_within(1000.0), default=50.0,
                        help='messages per second (at most 1000)')


def run(args):
    """Run the keyboard loop in a terminal until q or Ctrl-C; return the exit code."""
    if not sys.stdin.isatty():
        print('liemb teleop: needs a terminal (stdin is not a tty)', file=sys.stderr)
        return 2
    import termios
    import tty

    import rclpy
    from liemb_interfaces.msg import TwistRepresented
    rclpy.init()
    node = rclpy.create_node('liemb_teleop')
    topic = args.servo.rstrip('/') + '/twist_cmd_represented'
    try:
        pub = node.create_publisher(TwistRepresented, topic, 10)
    except Exception as exc:  # noqa: B902 - rclpy's invalid-name errors have no common base
        print(f'liemb teleop: --servo {args.servo!r}: {topic!r} is no valid topic ({exc})',
              file=sys.stderr)
        node.destroy_node()
        rclpy.try_shutdown()
        return 2
    state = Teleop(args.representation, args.linear, args.angular)
    print(HELP + '\n')
    saved = termios.tcgetattr(sys.stdin)
    try:
        tty.setcbreak(sys.stdin.fileno())
        period = 1.0 / args.rate
        while not state.done:
            ready, _, _ = select.select([sys.stdin], [], [], period)
            now = time.monotonic()
            if ready:
                state.press(sys.stdin.read(1), now)
            V = state.command(now)
            if V is not None:
                msg = TwistRepresented(representation=state.representation)
                msg.angular.x, msg.angular.y, msg.angular.z = (float(x) for x in V[:3])
                msg.linear.x, msg.linear.y, msg.linear.z = (float(x) for x in V[3:])
                pub.publish(msg)
            print('\r' + state.line(now) + ' ' * 4, end='', flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        termios.tcsetattr(sys.stdin, termios.TCSADRAIN, saved)
        print()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
