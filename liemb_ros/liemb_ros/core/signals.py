"""
Sampled joint signals for identification: a zero-phase low-pass filter and derivatives.

A recording gives ``q`` and ``q̇`` (and the torques) at the sample times, never ``q̈``;
the fits of :mod:`liemb_ros.core.identification_fit` need all three at the same instants.
Here ``q̈`` is the derivative of the low-pass filtered ``q̇`` (``q̇`` of the filtered ``q``
when no velocities were recorded), as in the identification practice of Gautier
("Dynamic identification of robots with power model", ICRA 1997) and Swevers, Verdonck
and De Schutter ("Dynamic model identification for industrial robots", IEEE Control
Systems Magazine 27(5) (2007) 58–71):

- **Filter** (:func:`lowpass`): a Butterworth low-pass of order :data:`FILTER_ORDER`, run
  forward and then backward over the whole signal (:func:`scipy.signal.sosfiltfilt`, in
  second-order sections).  The two passes cancel each other's phase: the result has **no
  delay** at any frequency (a causal filter would shift ``q̈`` against the torques and bias
  the fit), and its gain is the square of the Butterworth's, ``1 / (1 + (f/f_c)^(2n))``:
  flat below the cut-off (``1 - 1e-8`` at a tenth of it, order 4), a half at the cut-off
  ``f_c`` (-6 dB), falling 48 dB per octave above.  Choose ``f_c`` a few times above the
  highest frequency of the motion and below that of the noise.
- **Edges**: the signal is extended at both ends by its odd reflection about the end
  sample (``padtype='odd'``, :data:`EDGE_PERIODS` cut-off periods long, at most the
  signal), which keeps a signal's value and slope at the ends; the filter's start-up still
  disturbs the first and last samples, so :func:`edge_samples` of them at each end are
  left out of a fit (:func:`joint_signals` returns the mask).
- **Derivative** (:func:`derivative`): the five-point central difference
  ``(x[k-2] - 8 x[k-1] + 8 x[k+1] - x[k+2]) / (12 h)``, error ``h⁴ x⁽⁵⁾ / 30`` (relative
  ``(ω h)⁴ / 30`` for a sine: 1e-8 at 2 Hz sampled at 500 Hz); second-order one-sided
  differences at the two first and last samples (inside the edges left out).  Central
  differences have no delay either.
- **Held efforts** (``held=True`` of :func:`joint_signals`): when each sample's effort was
  held constant over the interval before its stamp (a lock-step simulation publishes the
  command it has just applied; a digital controller's commands), the acceleration jumps at
  every sample and the effort belongs to the interval, not to its ends: the samples are
  then the **interval midpoints** (what a dataset of states and efforts holds,
  ``liemb dataset --recordings --effort-held``; ``liemb identify --effort-held`` fits the
  equations integrated over each interval instead, :mod:`liemb_ros.core.held_efforts`,
  which needs no ``q̈`` and is exact to ``O(h⁴)``), ``q`` and ``q̇`` interpolated there by cubics
  (:func:`interval_midpoints`, error ``O(h⁴)``) and ``q̈`` the interval's mean
  ``(q̇[k] - q̇[k-1]) / h`` (the acceleration at the midpoint to ``O(h²)``), each paired
  with the effort of the interval's end sample.  Without it, the half-sample delay of such
  efforts biases the fit by about ``ω h / 2`` of the torque.

Units: seconds, and whatever the signal's (rad, m); shapes ``(N, n)``, samples first.
"""
import numpy as np

#: the Butterworth filter's order (the forward-backward pass doubles it)
FILTER_ORDER = 4
#: the filter's edges: the odd extension and the samples left out at each end, in periods
#: of the cut-off frequency.  The start-up transient decays as ``exp(-2π f_c sin(π/2n) t)``
#: (the slowest pole of an order-n Butterworth): ``5e-7`` after six periods (order 4), and
#: the extension's own start is six periods further out
EDGE_PERIODS = 6.0
#: the largest deviation of a sample interval from the median one, relative to it, that
#: counts as uniform sampling (stamps of a real recording jitter; a gap is a lost sample)
MAX_JITTER = 0.5


def uniform_runs(t):
    """
    Return ``(h, runs)``: the sample period [s] (the median interval) and the uniform runs.

    ``runs``: ``[(start, stop), ...]`` index ranges of ``t`` (N,) between gaps, an interval
    longer than ``(1 + MAX_JITTER) h`` (samples lost, or the recording paused): the
    derivatives need uniform samples, so each run is filtered and differentiated alone.
    Raises ValueError when there are fewer than two samples, a stamp does not increase, or
    an interval is shorter than ``(1 - MAX_JITTER) h`` (stamps jittering more than that are
    not a sampled signal).
    """
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size < 2:
        raise ValueError(f'need at least two samples, got {t.size}')
    dt = np.diff(t)
    if np.any(dt <= 0.0):
        k = int(np.flatnonzero(dt <= 0.0)[0])
        raise ValueError(f'the stamps do not increase at sample {k + 1} '
                         f'({t[k]:.9g} s then {t[k + 1]:.9g} s)')
    h = float(np.median(dt))
    short = dt < (1.0 - MAX_JITTER) * h
    if np.any(short):
        k = int(np.flatnonzero(short)[0])
        raise ValueError(f'the samples are not uniform: {int(short.sum())} intervals are shorter '
                         f'than the median {h:.6g} s by more than {100 * MAX_JITTER:.0f} % (the '
                         f'first after {t[k] - t[0]:.6g} s: {dt[k]:.6g} s)')
    cuts = np.flatnonzero(dt > (1.0 + MAX_JITTER) * h) + 1
    bounds = np.r_[0, cuts, t.size]
    return h, [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def edge_samples(h, cutoff):
    """Return the samples at each end the filter's start-up disturbs (:data:`EDGE_PERIODS`)."""
    return int(np.ceil(EDGE_PERIODS / (cutoff * h)))


def lowpass(x, h, cutoff, order=FILTER_ORDER):
    """
    Return ``x`` (N, ...) low-pass filtered along its first axis, without delay.

    ``h``: the sample period [s]; ``cutoff``: the cut-off frequency [Hz] (gain 1/2, the
    forward-backward Butterworth, module docstring), below the Nyquist frequency
    ``1 / (2 h)``.  Raises ValueError otherwise.
    """
    from scipy.signal import butter, sosfiltfilt
    nyquist = 0.5 / h
    if not 0.0 < cutoff < nyquist:
        raise ValueError(f'the cut-off frequency must be in (0, {nyquist:g}) Hz (the Nyquist '
                         f'frequency of {1 / h:g} Hz sampling), got {cutoff:g}')
    x = np.asarray(x, dtype=float)
    sos = butter(order, cutoff, fs=1.0 / h, output='sos')
    pad = min(edge_samples(h, cutoff), x.shape[0] - 1)
    return sosfiltfilt(sos, x, axis=0, padtype='odd', padlen=pad)


def derivative(x, h):
    """
    Return the time derivative of ``x`` (N, ...) sampled every ``h`` seconds (N >= 5).

    Five-point central differences inside, second-order one-sided ones at the two first and
    last samples (module docstring).  Raises ValueError for fewer than five samples.
    """
    x = np.asarray(x, dtype=float)
    if x.shape[0] < 5:
        raise ValueError(f'need at least five samples to differentiate, got {x.shape[0]}')
    d = np.empty_like(x)
    d[2:-2] = (x[:-4] - 8.0 * x[1:-3] + 8.0 * x[3:-1] - x[4:]) / (12.0 * h)
    d[:2] = (-3.0 * x[:2] + 4.0 * x[1:3] - x[2:4]) / (2.0 * h)
    d[-2:] = (3.0 * x[-2:] - 4.0 * x[-3:-1] + x[-4:-2]) / (2.0 * h)
    return d


def interval_midpoints(x):
    """
    Return ``x`` (N, ...) at the midpoints of its sample intervals, row ``k`` the one before ``k``.

    ``(-x[k-2] + 9 x[k-1] + 9 x[k] - x[k+1]) / 16``: the cubic through the four samples
    around the midpoint (error ``O(h⁴)``); rows 0, 1 and N - 1, which lack a neighbour,
    repeat the nearest row computed.  Needs N >= 4.
    """
    x = np.asarray(x, dtype=float)
    m = np.empty_like(x)
    m[2:-1] = (-x[:-3] + 9.0 * x[1:-2] + 9.0 * x[2:-1] - x[3:]) / 16.0
    m[:2], m[-1] = m[2], m[-2]
    return m


def joint_signals(t, q, qd, cutoff, held=False):
    """
    Return ``(q, qd, qdd, inner)`` of a recording for identification.

    ``t`` (N,): stamps [s], uniform between gaps (:func:`uniform_runs`: each run between
    lost samples is filtered and differentiated alone); ``q`` (N, n) positions; ``qd``
    (N, n) recorded velocities, or None: then the derivative of the filtered ``q``;
    ``cutoff`` [Hz]: of :func:`lowpass` (0: no filter, for recordings without noise in
    ``q`` and ``q̇``, such as a simulation's: a motion with content above the cut-off,
    as a stick-slip, is otherwise distorted).  Returns the positions (as recorded), the
    filtered velocities, the accelerations (:func:`derivative` of them) and ``inner``
    (N,) bool: the samples away from every run's filter edges (:func:`edge_samples`; a
    run too short to have any is left out whole), those a fit may use.  ``held``: the
    efforts were held over the interval before their stamps (module docstring): row ``k``
    then holds the state at the midpoint of the interval before sample ``k``, the one that
    goes with effort ``k``.  Raises ValueError (stamps that are not a sampled signal, a
    cut-off above the Nyquist frequency, no run long enough to keep a sample inside its
    edges).
    """
    h, runs = uniform_runs(t)
    edge = edge_samples(h, cutoff) if cutoff else 2
    longest = max(b - a for a, b in runs)
    if longest <= 2 * edge:
        raise ValueError(f'{longest} uniform samples ({(longest - 1) * h:.3g} s, the longest run '
                         f'between lost samples) are too few for a {cutoff:g} Hz filter, whose '
                         f'first and last {edge} samples ({edge * h:.3g} s) are left out: record '
                         'longer or raise the cut-off')
    q = np.asarray(q, dtype=float)
    out = [q.copy(), np.zeros_like(q) if qd is None else np.array(qd, dtype=float),
           np.zeros_like(q)]
    inner = np.zeros(len(q), dtype=bool)
    for a, b in runs:
        if b - a > 2 * edge:
            for x, y in zip(out, _uniform_signals(h, q[a:b], None if qd is None else qd[a:b],
                                                  cutoff, held)):
                x[a:b] = y
            inner[a + edge:b - edge] = True
    return (*out, inner)


def _uniform_signals(h, q, qd, cutoff, held):
    """:func:`joint_signals`' ``(q, qd, qdd)`` of one run of uniform samples, period ``h``."""
    if qd is None:
        v = derivative(lowpass(q, h, cutoff) if cutoff else q, h)
    else:
        v = lowpass(qd, h, cutoff) if cutoff else np.asarray(qd, dtype=float)
    if not held:
        return q, v, derivative(v, h)
    a = np.empty_like(v)
    a[1:] = np.diff(v, axis=0) / h
    a[0] = a[1]
    return interval_midpoints(q), interval_midpoints(v), a
