"""The bench scripts' one timer (``bench_dynamics``, ``bench_kinematics``, ``bench_forms``)."""
import statistics
import time


def median_us(fn, calls, warmup=1000):
    """Return the median wall time of ``fn()`` in microseconds, after ``warmup`` calls."""
    for _ in range(min(warmup, calls)):
        fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1e3
