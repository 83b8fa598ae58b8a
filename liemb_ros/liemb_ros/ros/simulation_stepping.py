"""
The simulation node's input and stepping: commands, drives, wrenches, the real-time loop.

:class:`SimulationStepping`, a part that :class:`liemb_ros.ros.simulation_node.SimulationNode`
owns, takes the effort, velocity and position commands and the external wrenches
(rejecting and counting those that do not fit), computes the torque
of each step (command, test torque, the computed-torque joint drive, the posture hold)
and advances the simulator at ``real_time_factor`` times wall-clock speed on every tick of
the publish timer, or, in lock-step, one publish period each time the controller has
answered the last published state; after each advance it checks the state and hands it
to the node's outputs (:class:`~liemb_ros.ros.simulation_output.SimulationOutputs`).
"""
import math
import time

import numpy as np

from ..core.dynamics import inverse_dynamics
from ..sim.simulator import SimulationError
from .common import topic_token
from .conversions import shown


#: the most names of unknown joints counted for /diagnostics (a message may bring thousands)
IGNORED_NAMES = 32


class SimulationStepping:
    """
    The inputs of a simulation node and the stepping of its simulator.

    ``p(name)``: a parameter's value; ``logger``: the node's logger; ``outputs``: what
    publishes a state (:class:`~liemb_ros.ros.simulation_output.SimulationOutputs`);
    ``dropped``: where rejected messages are counted
    (:class:`~liemb_ros.ros.simulation_output.Dropped`).  :meth:`serve`
    gives it the simulator of a new robot; until then every input is ignored.
    """

    def __init__(self, p, logger, outputs, dropped):
        self.p, self.logger, self.outputs, self.dropped = p, logger, outputs, dropped
        self.sim = self.model = None
        self.paused = False
        self.error = None            # why the simulation stopped (None: it runs)
        self._command_order = None   # model index of each command_joints entry
        self._hold = None            # (K, D, q_0) of the posture hold, None: no hold
        self._hold_tau = None
        self.command = None          # the held effort command (nq,), model order
        self._command_time = None
        self.drive = None            # the joint drive's reference and queue (None: efforts)
        self._wall = None            # steady-clock time of the last tick
        self.rtf_window = []         # (wall time, sim seconds, wall seconds) of recent ticks
        self.ignored = {}            # unknown joint names of ~/effort -> messages with them
        self.wrenches = {}           # link -> (wrench, frame kind, arrival)
        self._wrench_on = False
        self.lock = None             # lock-step state (parameter lockstep)

    def serve(self, sim, command_order):
        """Simulate ``sim`` from now on; ``command_order``: the model index of each command."""
        model = sim.model
        self.sim, self.model, self._command_order = sim, model, command_order
        K, D = self.p('joint_hold_stiffness'), self.p('joint_hold_damping')
        self._hold = (K, D, sim.q.copy()) if K > 0 or D > 0 else None
        self._hold_tau = np.zeros(model.nq)
        self.error, self.command, self._command_time = None, None, None
        self.drive = None
        self.wrenches = {}

    def start(self):
        """Pace from now: the wall clock of the next tick, lock-step waiting for an answer."""
        self._wall = time.monotonic()
        self._start_lockstep()

    @property
    def waiting_for_command(self):
        """Tell whether the robot is held still until a first command (``wait_for_command``)."""
        return self.p('wait_for_command') and self.command is None and self.drive is None

    # -- services ---------------------------------------------------------------------------
    def reset(self):
        """Back to the initial state; held commands, drive and wrenches cleared."""
        self.sim.reset()
        self.error = None
        self.command = self._command_time = None   # a held command must not act again
        self._release_drive()
        self.wrenches = {}
        self.sim.clear_wrenches()
        self.start()      # publish the initial state again (lock-step: wait for its answer)

    def pause(self, paused):
        """Pause (``True``) or run; either way the pace starts again from now."""
        self.paused = bool(paused)
        self._wall = time.monotonic()
        if self.lock is not None and self.sim is not None:   # pace from now on
            self.lock['wall0'], self.lock['t0'] = self._wall, self.sim.t

    def step(self):
        """Advance one publish period and publish (paused); return whether it went well."""
        self._advance(1.0 / self.p('publish_rate'))
        self._publish()
        if self.lock is not None:
            self.lock['published'], self.lock['answered'] = time.monotonic(), False
        return self.error is None

    def paced_from_now(self):
        """Restart the real-time pace from now (``real_time_factor`` changed)."""
        self._wall = time.monotonic()

    # -- input ------------------------------------------------------------------------------
    def _reject(self, what):
        """Count and log (throttled) a message that is dropped, and why."""
        self.dropped.add(what)
        self.logger.error(f'dropped {what}', throttle_duration_sec=1.0)

    def _joint_array(self, msg, topic, kind='effort'):
        """
        Return a command array in model order, or None (rejected) when it does not fit.

        Beyond finiteness each value must be plausible (:mod:`liemb_ros.sim._plausible`):
        an effort within ``sim.plausible.torque`` (the effort limits then clamp it), a
        velocity within ``sim.plausible.speed``, a position within the distance the joint
        covers in one second at that speed from where it is.
        """
        data = np.asarray(msg.data, dtype=float)
        if data.size != self._command_order.size or not np.all(np.isfinite(data)):
            self._reject(f'{topic}: expected {self._command_order.size} finite values, got '
                         f'{data.size}' + ('' if data.size != self._command_order.size
                                           else ' with a NaN or an infinity'))
            return None
        out = np.zeros(self.model.nq)
        out[self._command_order] = data
        sim = self.sim
        if kind == 'effort':
            bound, value = sim.plausible.torque, out
        else:
            bound = sim.plausible.speed[self.model.nv - self.model.nq:]
            value = out if kind == 'velocity' else out - sim.q
        over = np.flatnonzero(np.abs(value) > bound)
        if len(over):
            j = int(over[0])
            what = {'effort': 'effort', 'velocity': 'velocity',
                    'position': 'position (from where the joint is)'}[kind]
            self._reject(f"{topic}: {what} {value[j]:.4g} of joint "
                         f"'{self.model.joint_names[j]}' is beyond the plausible "
                         f'{bound[j]:.4g} (' + ('100 times the robot\'s weight at its size'
                                                if kind == 'effort' else
                                                'rad/s or m/s' if kind == 'velocity' else
                                                'one second at its plausible speed') + ')')
            return None
        return out

    def on_command(self, msg):
        """Take a ``~/effort_command`` (``command_joints`` order); it hands back from a drive."""
        if self.sim is None:
            return
        tau = self._joint_array(msg, '~/effort_command')
        if tau is not None:
            self.command, self._command_time = tau, time.monotonic()
            self._release_drive()
            self._answered()

    def on_drive(self, kind, msg):
        """Engage (or feed) the computed-torque drive with a velocity or position command."""
        if self.sim is None:
            return
        if self.model.floating:
            self._reject(f'~/{kind}_command: the joint drive needs a fixed-base robot')
            return
        target = self._joint_array(msg, f'~/{kind}_command', kind)
        if target is None:
            return
        if self.drive is None:
            # the drive cancels the joints' Coulomb friction exactly (drive_torque): the
            # simulator's is switched off while it acts and reported as the drive's effort
            friction = self.sim.friction.copy()
            self.sim.friction[:] = 0.0
            self.drive = {'q_ref': self.sim.q.copy(), 'tau': np.zeros(self.model.nq),
                          'queue': [], 'friction': friction}
        # by arrival time: each step of the next tick obeys the command of its own moment
        queue = self.drive['queue']
        queue.append((time.monotonic(), kind, target))
        del queue[:-64]
        self.command = self._command_time = None
        self._answered()

    def _release_drive(self):
        """Hand the robot back from the drive: the simulator's friction acts again."""
        if self.drive is not None:
            self.sim.friction[:] = self.drive['friction']
            self.drive = None

    def drive_effort(self):
        """Return the drive's joint torques at the present state, friction included (nq,)."""
        d, sim = self.drive, self.sim
        return d['tau'] + d['friction'] * np.tanh(sim.qd[self.model.nv - self.model.nq:]
                                                  / sim.friction_velocity)

    def on_wrench(self, link, msg):
        """
        Take an external wrench on ``link`` (held for ``wrench_timeout``).

        ``header.frame_id`` empty or the link: moment and force in the link frame; the
        ``world_frame``: world axes, about the link frame's origin.  Others are rejected,
        and so is a wrench that is not finite or beyond the plausible force and moment
        (``sim.plausible``: 100 times the robot's weight, at its size), with the bound.
        """
        if self.sim is None:
            return
        frame = msg.header.frame_id
        kind = ('link' if frame in ('', link) else
                'world' if frame == self.p('world_frame') else None)
        t, f = msg.wrench.torque, msg.wrench.force
        w = np.array([t.x, t.y, t.z, f.x, f.y, f.z], dtype=float)
        topic = f'~/external_wrench/{topic_token(link)}'
        if kind is None:
            self._reject(f'{topic}: frame_id {shown(frame)} is neither {shown(link)} nor '
                         f"{shown(self.p('world_frame'))}")
            return
        if not np.all(np.isfinite(w)):
            self._reject(f'{topic}: a wrench with a NaN or an infinity')
            return
        try:
            self.sim.plausible.wrench(link, w)
        except ValueError as exc:
            self._reject(f'{topic}: {exc}')
            return
        self.wrenches[link] = (w, kind, time.monotonic())

    def _apply_wrenches(self):
        """Hand the fresh external wrenches to the simulator; drop the stale ones."""
        timeout = self.p('wrench_timeout')
        now = time.monotonic()
        self.sim.clear_wrenches()
        for link, (w, kind, arrived) in list(self.wrenches.items()):
            if timeout == 0 or now - arrived <= timeout:
                self.sim.set_wrench(link, w, frame=kind)
            else:
                del self.wrenches[link]
        self._wrench_on = bool(self.wrenches)

    def on_effort(self, msg):
        """Efforts by name; joints the model does not know are ignored (and counted)."""
        if self.sim is None or not msg.name:
            return
        if len(msg.effort) != len(msg.name) or len(set(msg.name)) != len(msg.name):
            self._reject(f'~/effort: {len(msg.name)} names (unique: {len(set(msg.name))}) '
                         f'but {len(msg.effort)} efforts')
            return
        index = self.model.joint_indices
        pairs = [(index[n], e) for n, e in zip(msg.name, msg.effort) if n in index]
        unknown = [n for n in msg.name if n not in index]
        if unknown:
            new = [n for n in unknown if n not in self.ignored]
            if new:
                self.logger.info(f"~/effort: ignoring joint(s) {shown(', '.join(new))}: "
                                 f'not in robot {shown(self.model.name)}')
            for n in unknown:    # counted by name, for the first IGNORED_NAMES names
                if n in self.ignored or len(self.ignored) < IGNORED_NAMES:
                    self.ignored[n] = self.ignored.get(n, 0) + 1
        effort = np.array([e for _, e in pairs], dtype=float)
        if not np.all(np.isfinite(effort)):
            self._reject('~/effort: an effort with a NaN or an infinity')
            return
        if not pairs:
            return
        tau = np.zeros(self.model.nq) if self.command is None else self.command.copy()
        tau[[i for i, _ in pairs]] = effort
        try:
            self.sim.plausible.torques(tau)
        except ValueError as exc:
            self._reject(f'~/effort: {exc}')
            return
        self.command, self._command_time = tau, time.monotonic()
        self._answered()

    # -- stepping ---------------------------------------------------------------------------
    def applied_torque(self, t):
        """Return the joint torques applied at sim time ``t``: command + test torque."""
        tau = np.zeros(self.model.nq)
        if self.command is not None:
            timeout = self.p('effort_timeout')
            if (timeout == 0 or self.lock is not None
                    or time.monotonic() - self._command_time <= timeout):
                tau += self.command     # in lock-step the last answer holds
        amp = np.asarray(self.p('test_torque_amplitude'), dtype=float)
        if np.any(amp):
            tau += amp * math.sin(2.0 * math.pi * self.p('test_torque_frequency') * t)
        return tau

    def drive_torque(self, wall):
        """
        Return the joint drive's torque for the current state; advance its reference one dt.

        Computed torque (module docstring) with the command that had arrived by the
        wall-clock time ``wall`` of the step (a tick integrates several steps at once:
        each obeys the command of its own moment, as a real arm would); the velocity
        reference is zero once that command is older than ``effort_timeout``; a position
        command has zero velocity.
        """
        sim, d = self.sim, self.drive
        queue = d['queue']
        k = 0
        while k + 1 < len(queue) and queue[k + 1][0] <= wall:
            k += 1
        del queue[:k]                      # the steps go forward in time
        arrived, kind, target = queue[0]
        timeout = self.p('effort_timeout')
        fresh = timeout == 0 or self.lock is not None or wall - arrived <= timeout
        if kind == 'position':
            if fresh:
                d['q_ref'] = target
            qd_ref = np.zeros(self.model.nq)
        else:
            qd_ref = target if fresh else np.zeros(self.model.nq)
        w = 2.0 * math.pi * self.p('drive_frequency')
        qdd = w * w * (d['q_ref'] - sim.q) + 2.0 * w * (qd_ref - sim.qd)
        # + F tanh(q̇/v_s) cancels the joints' friction exactly: the simulator's is off
        # while the drive acts.  Computed here from the step's initial velocity, it would
        # act explicitly against the simulator's implicit friction and chatter a light
        # joint where its velocity reverses (liemb_arm7's wrist: F/m = 325 rad/s²,
        # 176 rad/s² spikes in a 5 rad/s² stop; 6 rad/s² with the exact cancellation)
        tau = inverse_dynamics(self.model, sim.q, sim.qd, qdd) + sim.damping * sim.qd
        # the effort limit bounds the drive's whole torque, the friction it supplies
        # included: what is left of it for the motion is the limit less the friction
        spare = np.maximum(sim.effort_limit - d['friction'], 0.0)
        d['tau'] = np.clip(tau, -spare, spare)
        d['q_ref'] = d['q_ref'] + qd_ref * sim.dt
        return d['tau']

    def hold_torque(self):
        """Return the joint PD posture hold's torque ``K (q_0 - q) - D q̇`` now."""
        K, D, q_ref = self._hold
        sim = self.sim
        self._hold_tau = K * (q_ref - sim.q) - D * sim.qd[self.model.nv - self.model.nq:]
        return self._hold_tau

    def _advance(self, seconds, span=0.0):
        """Advance ``seconds`` of simulation time over the last ``span`` wall-clock seconds."""
        sim = self.sim
        n = max(1, int(round(seconds / sim.dt)))
        if self.wrenches or self._wrench_on:
            self._apply_wrenches()
        hold = self._hold is not None
        try:
            if self.drive is None and not hold:
                sim.step(self.applied_torque(sim.t), n=n)
            now = time.monotonic()
            for k in range(n if self.drive is not None or hold else 0):
                wall = now - span * (n - 1 - k) / n
                tau = self.applied_torque(sim.t)
                if self.drive is not None:
                    tau = tau + self.drive_torque(wall)
                if hold:
                    tau = tau + self.hold_torque()
                sim.step(tau)
        except (SimulationError, ValueError) as exc:
            self.stop(exc)

    def stop(self, exc):
        """
        Stop stepping: the simulator's reason and the node's inputs that made the torques.

        The applied torques are the sum of what :meth:`_torque_sources` lists; a torque
        that :meth:`Simulator.step` refused (ValueError: beyond the plausible bound) or a
        simulation that diverged (:class:`SimulationError`, naming the input that drove
        it) both stop the stepping until ``~/reset``; the last plausible state stays.
        """
        self.error = f'{exc}; the applied torques came from {self._torque_sources()}'
        self.logger.error(f'simulation stopped: {self.error} (call ~/reset to restart)')

    def _torque_sources(self):
        """Name what makes the applied torques now (the command topic, drive, hold, test)."""
        out = []
        if self.drive is not None:
            out.append(f"the joint drive of ~/{self.drive['queue'][-1][1]}_command")
        elif self.command is not None:
            out.append('~/effort_command or ~/effort')
        if self._hold is not None:
            out.append('the posture hold (joint_hold_stiffness, joint_hold_damping)')
        if np.any(np.asarray(self.p('test_torque_amplitude'), dtype=float)):
            out.append('the test torque (test_torque_amplitude)')
        return ', '.join(out) or 'nothing (zero torques)'

    # -- lock-step --------------------------------------------------------------------------
    def _start_lockstep(self):
        """(Re)start lock-step: nothing published yet, nothing answered, pace from now."""
        self.lock = ({'published': None, 'answered': False, 'ever': False, 'missed': 0,
                      'wall0': time.monotonic(), 't0': self.sim.t, 'last': None}
                     if self.p('lockstep') else None)

    def _answered(self):
        """Take a command's arrival as the answer to the last published state (lock-step)."""
        lock = self.lock
        if lock is not None and lock['published'] is not None:
            lock['answered'] = lock['ever'] = True
            self._lockstep()

    def _lockstep(self):
        """
        Step one publish period if the controller answered the last state, then publish.

        Called when an answer arrives (so the loop runs at the controller's pace) and on
        every tick (pacing and timeouts).  With ``real_time_factor`` > 0 the simulation
        never runs more than one period ahead of ``real_time_factor`` x wall-clock time;
        when the loop is slower than that it runs at the loop's pace.  Before the first
        answer the state is re-published every ``lockstep_timeout`` (the controller may
        not have been subscribed, or not ready: the dynamics node skips states while it
        compiles); later a missing answer for ``lockstep_timeout`` steps with the held
        command and is counted (``lockstep_missed`` in /diagnostics).  Not re-published
        sooner: a ready controller answers every copy, an answer names no state, and a
        second answer would be taken for the next state's (the loop one state late).
        """
        lock, sim = self.lock, self.sim
        if sim is None or self.error is not None or self.paused:
            return
        now = time.monotonic()
        timeout = self.p('lockstep_timeout')
        if lock['published'] is None or (not lock['ever']
                                         and now - lock['published'] >= timeout):
            self._publish()
            lock['published'], lock['wall0'], lock['t0'] = now, now, sim.t
            return
        if not lock['answered']:
            if not lock['ever'] or now - lock['published'] < timeout:
                return
            lock['missed'] += 1
            self.logger.warning(
                f'lock-step: no command answered the state at t = {sim.t:.4f} s within '
                f'{timeout:g} s; stepping with the held command', throttle_duration_sec=5.0)
        period = 1.0 / self.p('publish_rate')
        rtf = self.p('real_time_factor')
        if rtf > 0:
            lag = rtf * (now - lock['wall0']) - (sim.t - lock['t0'])   # >0: behind
            if lag < 0.0:
                return                       # a period ahead already: wait for a tick
            if lag > 5.0 * period:           # a slow loop: run at its pace, no catch-up
                lock['wall0'], lock['t0'] = now - (sim.t - lock['t0']) / rtf, lock['t0']
        self._advance(period)
        if lock['last'] is not None:
            self.rtf_window.append((now, period, now - lock['last']))
            del self.rtf_window[:-100]
        lock['last'] = now
        self._publish()
        lock['published'], lock['answered'] = time.monotonic(), False

    def tick(self):
        """Advance to the wall clock (or a lock-step period) and publish (the publish timer)."""
        now = time.monotonic()
        elapsed, self._wall = now - self._wall, now
        if self.sim is None or self.error is not None:
            return
        if self.lock is not None:
            self._lockstep()
            return
        at = None
        if not self.paused and not self.waiting_for_command:
            rtf = self.p('real_time_factor')
            t0 = self.sim.t
            # Never fall behind by more than a few periods (e.g. after a pause or a stall).
            budget = min(elapsed, 5.0 / self.p('publish_rate'))
            if rtf == 0.0:
                deadline = now + 0.8 / self.p('publish_rate')
                while time.monotonic() < deadline and self.error is None:
                    self._advance(10 * self.sim.dt)
            else:
                self._advance(rtf * budget, budget)
                at = now        # the state is the robot at this instant, not when published
            self.rtf_window.append((now, self.sim.t - t0, elapsed))
            del self.rtf_window[:-100]
        self._publish(at)

    def _publish(self, at=None):
        """
        Publish the state, after checking it (:meth:`Simulator.check`): no absurd state goes out.

        A state that is not plausible (not finite, too fast, off the energy books, deeper in
        a plane than a contact can push back from) stops the simulation with the reason
        instead, and nothing is published (the simulator is back at the last state that
        passed, which went out before); so does an effort that is not finite.  ``at``
        (steady clock): the instant the state describes (its stamp, without ``/clock``).
        """
        sim = self.sim
        if self.error is not None:
            return
        try:
            sim.check()
        except SimulationError as exc:
            self.stop(exc)
            return
        effort = self.applied_torque(sim.t)
        if self.drive is not None:
            effort = effort + self.drive_effort()
        if self._hold is not None:
            effort = effort + self._hold_tau
        effort = np.clip(effort, -sim.effort_limit, sim.effort_limit)   # applied
        if not np.all(np.isfinite(effort)):
            self.stop(f'the applied effort is not finite ({effort.tolist()})')
            return
        self.outputs.publish(effort, at)
