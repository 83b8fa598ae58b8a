"""
Explicit Butcher tableaus for the Munthe-Kaas method ([MT14] App. B, [MT13] §4).

A :class:`Tableau` holds ``a`` (strictly lower triangular, s x s), ``b``, ``c``, the order
and optionally an embedded weight vector ``b_hat`` of lower order for error estimation.
RKMK keeps the order of the underlying Runge-Kutta method when ``dexp^-1`` is exact
(it is here), so the classical orders carry over to the Lie group.

Provided: :data:`EULER` (1), :data:`HEUN` (2), :data:`MIDPOINT` (2, the "explicit
trapezoidal" scheme of [MT14] §4, which is the midpoint rule: docs/theory/errata.md#mt14-s4),
:data:`RK3` (Kutta, 3), :data:`RK4` (classical, 4, the papers' scheme and the consistent
variant of [HGS18] §5.3), :data:`RK38` (3/8 rule, 4), and the embedded pairs
:data:`HEUN_EULER` (2(1)), :data:`BOGACKI_SHAMPINE` (3(2)) and :data:`DORMAND_PRINCE` (5(4)).
"""
import numpy as np


class Tableau:
    """
    Explicit Runge-Kutta coefficients ``(a, b, c)`` with optional embedded ``b_hat``.

    ``order`` is the order of ``b``; ``embedded_order`` that of ``b_hat``.  Raises
    ``ValueError`` if ``a`` is not strictly lower triangular or the row sums of ``a``
    differ from ``c``.
    """

    def __init__(self, name, a, b, c, order, b_hat=None, embedded_order=None):
        self.name = name
        self.a = np.array(a, dtype=float)
        self.b = np.array(b, dtype=float)
        self.c = np.array(c, dtype=float)
        s = self.b.size
        if self.a.shape != (s, s) or self.c.shape != (s,):
            raise ValueError(f'tableau {name}: a must be {s}x{s} and c of length {s}')
        if np.any(np.triu(self.a) != 0.0):
            raise ValueError(f'tableau {name}: a must be strictly lower triangular (explicit)')
        if not np.allclose(self.a.sum(axis=1), self.c, atol=1e-14):
            raise ValueError(f'tableau {name}: row sums of a must equal c')
        self.order = int(order)
        self.b_hat = None if b_hat is None else np.array(b_hat, dtype=float)
        self.embedded_order = None if embedded_order is None else int(embedded_order)
        if (self.b_hat is None) != (self.embedded_order is None):
            raise ValueError(f'tableau {name}: give b_hat and embedded_order together')
        self.stages = s

    @property
    def adaptive(self):
        """Whether the tableau has an embedded error estimator (``b_hat``)."""
        return self.b_hat is not None

    def __repr__(self):
        emb = f'({self.embedded_order})' if self.adaptive else ''
        return f'Tableau({self.name}, order {self.order}{emb}, {self.stages} stages)'


EULER = Tableau('euler', [[0.0]], [1.0], [0.0], 1)
HEUN = Tableau('heun', [[0, 0], [1, 0]], [0.5, 0.5], [0, 1], 2)
MIDPOINT = Tableau('midpoint', [[0, 0], [0.5, 0]], [0, 1], [0, 0.5], 2)
RK3 = Tableau('rk3', [[0, 0, 0], [0.5, 0, 0], [-1, 2, 0]], [1 / 6, 2 / 3, 1 / 6],
              [0, 0.5, 1], 3)
RK4 = Tableau('rk4', [[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1, 0]],
              [1 / 6, 1 / 3, 1 / 3, 1 / 6], [0, 0.5, 0.5, 1], 4)
RK38 = Tableau('rk38', [[0, 0, 0, 0], [1 / 3, 0, 0, 0], [-1 / 3, 1, 0, 0], [1, -1, 1, 0]],
               [1 / 8, 3 / 8, 3 / 8, 1 / 8], [0, 1 / 3, 2 / 3, 1], 4)
HEUN_EULER = Tableau('heun_euler', [[0, 0], [1, 0]], [0.5, 0.5], [0, 1], 2,
                     b_hat=[1, 0], embedded_order=1)
BOGACKI_SHAMPINE = Tableau(
    'bogacki_shampine',
    [[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.75, 0, 0], [2 / 9, 1 / 3, 4 / 9, 0]],
    [2 / 9, 1 / 3, 4 / 9, 0], [0, 0.5, 0.75, 1], 3,
    b_hat=[7 / 24, 1 / 4, 1 / 3, 1 / 8], embedded_order=2)
DORMAND_PRINCE = Tableau(
    'dormand_prince',
    [[0, 0, 0, 0, 0, 0, 0],
     [1 / 5, 0, 0, 0, 0, 0, 0],
     [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
     [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
     [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
     [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
     [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0],
    [0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1], 5,
    b_hat=[5179 / 57600, 0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40],
    embedded_order=4)

TABLEAUS = {t.name: t for t in (EULER, HEUN, MIDPOINT, RK3, RK4, RK38, HEUN_EULER,
                                BOGACKI_SHAMPINE, DORMAND_PRINCE)}
