"""
The contact force law of :class:`~liemb_ros.sim.contact.ContactModel`, compiled.

One evaluation whole in one compiled call (:func:`evaluate_into`: a step's Python
between the stages costs more than the arithmetic): the link poses, the (sphere, plane)
pairs near a plane (:func:`_near_pairs`), the hybrid Jacobians of their links, for the
implicit step the mass matrix and its Cholesky factor, and at the pairs the compliant
normal spring-damper and the regularised Coulomb friction, their generalized force through
the point Jacobian ``J_x = J_v - [x - r]ˣ J_ω`` and, for the implicit step, their
stiffness and damping ``K``, ``B`` (:func:`contact_forces`); whether those are stiff for
an explicit step (:func:`is_stiff`).  :mod:`liemb_ros.sim.contact` (its module docstring
has the law) holds the model, its parameters and the work arrays and calls these;
``is_stiff`` is public there.
"""
import numpy as np
from numba import njit

from ._dense import cholesky_in_place
from ..core._kernels.crba import crba_into
from ..core._kernels.dispatch import REP_INDEX, check
from ..core._kernels.jacobian import jacobian_link
from ..core._kernels.tree import forward_kinematics_into, forward_kinematics_plain

#: the status of :func:`evaluate_into` for a mass matrix that is not positive definite
NOT_POSITIVE_DEFINITE = -1
_HYBRID = REP_INDEX['hybrid']


def is_stiff(M, K, B, limit):
    """
    Whether the contacts' fastest rate ``max(λ(M⁻¹B), √λ(M⁻¹K))`` [1/s] exceeds ``limit``.

    A mass-spring-damper ``M ẍ + B ẋ + K x`` has eigenvalues no larger in magnitude
    (overdamped: ``≤ λ(M⁻¹B)``; underdamped: ``√λ(M⁻¹K)``).  The diagonal ratios
    ``B_ii / M_ii`` and ``K_ii / M_ii`` bound those from below and are tried first.
    """
    if _diagonal_rate_exceeds(M, B, limit) or _diagonal_rate_exceeds(M, K, limit * limit):
        return True
    try:
        L = np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        return True
    Li = np.linalg.inv(L)
    return bool(np.linalg.eigvalsh(Li @ B @ Li.T)[-1] > limit
                or np.linalg.eigvalsh(Li @ K @ Li.T)[-1] > limit * limit)


def raise_status(model, status):
    """Raise the ValueError of an :func:`evaluate_into` status (nothing for 0)."""
    if status == NOT_POSITIVE_DEFINITE:
        raise ValueError('the mass matrix is not positive definite')
    if status:
        check(model, status)


@njit(cache=True)
def _diagonal_rate_exceeds(M, A, limit):
    """
    Whether ``max_i A_ii / M_ii > limit``; False where a ratio is NaN (as ``np.max``'s NaN).

    The diagonal bound of :func:`is_stiff` in one compiled call (numpy's took 5 µs).
    """
    top = -np.inf
    for i in range(M.shape[0]):
        r = A[i, i] / M[i, i]
        if r != r:
            return False
        top = max(top, r)
    return top > limit


@njit(cache=True)
def evaluate_into(ki, kf, w, q, base, rotate, V, spheres, planes, law, margin, jac, h, arm,
                  keep, work, out):
    """
    One evaluation of the contacts at ``(q, V, base)``, whole: :meth:`ContactModel.evaluate`.

    ``spheres = (link, pos, rad, mu, groups, bounds)``: each sphere's link, centre (link
    frame), radius and friction, and each link's spheres and a sphere about them
    (:func:`_near_pairs`); ``planes = (normals, offsets)``; ``law = (k, b, v_s)``;
    ``work = (Cs, pairs, keys, x, gap, slot, J, F)``: the link poses (world frame), the
    near pairs (:func:`_near_pairs`), the hybrid Jacobians of their links
    (:func:`_link_jacobians`) and their forces; ``out = (gen, K, B, M, L, touching,
    held)``: :func:`contact_forces`'s outputs and, with ``jac``, the mass matrix ``M``
    (nv, nv) at ``q`` (its joints' diagonal plus ``arm`` (nq,); empty: no armature) and
    its Cholesky factor ``L``.  ``rotate``: a floating base at ``base`` (else ``base`` is
    the identity and the fixed-base kernels run).  Returns ``(status, pairs, power,
    energy, touching, held)``: a kernel status
    (:func:`~liemb_ros.core._kernels.dispatch.check`; :data:`NOT_POSITIVE_DEFINITE` for
    ``M``), the number of near pairs, the power and energy of :func:`contact_forces` and
    the counts of keys it wrote.
    """
    link, pos, rad, mu, groups, bounds = spheres
    normals, offsets = planes
    k, b, vs = law
    Cs, pairs, keys, x, gap, slot, J, F = work
    gen, K, B, M, L, touching, held = out
    if rotate:
        st = forward_kinematics_into(ki, kf, w, q, base, Cs)
    else:
        st = forward_kinematics_plain(ki, kf, w, q, Cs)
    if st:
        return st, 0, 0.0, 0.0, 0, 0
    npairs = _near_pairs(Cs, link, pos, rad, groups, bounds, normals, offsets, margin, pairs,
                         keys, x, gap)
    if npairs == 0:
        return 0, 0, 0.0, 0.0, 0, 0
    st = _link_jacobians(ki, kf, q, link, pairs, npairs, base, rotate, J, slot)
    if st:
        return st, npairs, 0.0, 0.0, 0, 0
    if jac:
        st = crba_into(ki, kf, w, q, q, base, False, M)   # qd: not read for M itself
        if st:
            return st, npairs, 0.0, 0.0, 0, 0
        a = M.shape[0] - arm.shape[0]
        for j in range(arm.shape[0]):
            M[a + j, a + j] += arm[j]
        L[:, :] = M
        if not cholesky_in_place(L):
            return NOT_POSITIVE_DEFINITE, npairs, 0.0, 0.0, 0, 0
    power, energy, nt, nh = contact_forces(
        J, slot, Cs, link, x, pairs, npairs, keys, gap, normals, mu, V, k, b, vs,
        h if jac else 0.0, L, keep, gen, F, K, B, touching, held)
    return 0, npairs, power, energy, nt, nh


@njit(cache=True)
def _near_pairs(Cs, link, pos, rad, groups, bounds, normals, offsets, margin, pairs, keys, x,
                gap):
    """
    Set the (sphere, plane) pairs with gap ``n·c - d - ρ < margin``; return their count.

    ``pairs`` (i, j), their keys ``i * m + j`` (ascending), the points ``x`` on the planes
    (world frame) and the gaps [m], from the link poses ``Cs``.  A link's spheres
    ``groups[g] = (start, end)`` are looked at only where the sphere ``bounds[g] = (centre
    (3,), radius)`` (link frame) about all of them is nearer a plane than ``margin`` plus
    a slack far above rounding (1e-9 of the lengths in the sum): a foot in the air costs
    one sphere, not its 32 mesh points, and no pair is missed.
    """
    m = normals.shape[0]
    nh = 0
    c = np.empty(3)
    for g in range(groups.shape[0]):
        C = Cs[link[groups[g, 0]]]
        for a in range(3):
            c[a] = (C[a, 0] * bounds[g, 0] + C[a, 1] * bounds[g, 1] + C[a, 2] * bounds[g, 2]
                    + C[a, 3])
        scale = 1.0 + bounds[g, 3] + abs(C[0, 3]) + abs(C[1, 3]) + abs(C[2, 3])
        near = False
        for j in range(m):
            hb = normals[j, 0] * c[0] + normals[j, 1] * c[1] + normals[j, 2] * c[2] - offsets[j]
            if hb - bounds[g, 3] - 1e-9 * (scale + abs(offsets[j])) < margin:
                near = True
        if not near:
            continue
        for i in range(groups[g, 0], groups[g, 1]):
            for a in range(3):
                c[a] = C[a, 0] * pos[i, 0] + C[a, 1] * pos[i, 1] + C[a, 2] * pos[i, 2] + C[a, 3]
            for j in range(m):
                hc = (normals[j, 0] * c[0] + normals[j, 1] * c[1] + normals[j, 2] * c[2]
                      - offsets[j])
                gp = hc - rad[i]
                if gp < margin:
                    pairs[nh, 0], pairs[nh, 1] = i, j
                    keys[nh] = i * m + j
                    for a in range(3):
                        x[nh, a] = c[a] - hc * normals[j, a]
                    gap[nh] = gp
                    nh += 1
    return nh


@njit(cache=True)
def _link_jacobians(ki, kf, q, link, pairs, npairs, base, rotate, J, slot):
    """
    Set the hybrid Jacobians ``J[s]`` (6, nv) of the distinct links of the pairs; a status.

    The links ``link[pairs[i, 0]]`` of the first ``npairs`` pairs, the distinct ones in
    order of first appearance, ``slot[i]`` the one of pair ``i``.  With the base at the
    identity (the Jacobian's fastest call), then with ``rotate`` both row triples turned by
    the base's rotation ``R``: a rigid motion of the whole robot turns every hybrid twist,
    ``(ω, ṙ) → (R ω, R ṙ)``, while the base's body-fixed twist stays what it is.
    """
    nv = J.shape[2]
    col = np.empty(3)
    nd = 0
    for i in range(npairs):
        li = link[pairs[i, 0]]
        slot[i] = -1
        for e in range(i):
            if link[pairs[e, 0]] == li:
                slot[i] = slot[e]
                break
        if slot[i] >= 0:
            continue
        s = nd
        slot[i] = s
        nd += 1
        st = jacobian_link(ki, kf, q, li, _HYBRID, J[s])
        if st:
            return st
        if rotate:
            for half in range(2):
                o = 3 * half
                for c in range(nv):
                    for a in range(3):
                        col[a] = J[s, o + a, c]
                    for a in range(3):
                        J[s, o + a, c] = (base[a, 0] * col[0] + base[a, 1] * col[1]
                                          + base[a, 2] * col[2])
    return 0


@njit(cache=True)
def _point_jacobian(J, r, x, Jx):
    """``J_x = J_v - [x - r]ˣ J_ω`` (3, nv) from a hybrid Jacobian J (6, nv)."""
    d0, d1, d2 = x[0] - r[0], x[1] - r[1], x[2] - r[2]
    for c in range(J.shape[1]):
        w0, w1, w2 = J[0, c], J[1, c], J[2, c]
        Jx[0, c] = J[3, c] - (d1 * w2 - d2 * w1)
        Jx[1, c] = J[4, c] - (d2 * w0 - d0 * w2)
        Jx[2, c] = J[5, c] - (d0 * w1 - d1 * w0)


@njit(cache=True)
def contact_forces(J, slot, Cs, link, x, pairs, npairs, keys, gap, normals, mu, V, k, b, vs, h,
                   L, keep, gen, F, K, B, touching, held):
    """
    Set the forces ``F`` (pairs, 3), ``gen += Σ J_xᵀ f``; with ``h > 0`` also ``K``, ``B``.

    Returns ``(power, energy, nt, nh)``: the power of the forces less their springs
    ``k p n`` (damper, clamp, friction), ``Σ ½ k p²``, and the counts of the keys written
    to ``touching`` (pairs that touch) and ``held`` (pairs in ``K``/``B``: touching,
    reaching the plane within the step or in the sorted ``keep``;
    :meth:`ContactModel.evaluate`).  ``L``: the Cholesky factor of the mass matrix
    (``e·J_x M⁻¹ J_xᵀ e = |L⁻¹ J_xᵀ e|²``).  The first ``npairs`` pairs; ``J[slot[i]]``
    the hybrid Jacobian of pair ``i``'s link, whose origin is in its pose ``Cs[link[...]]``.
    """
    nv = V.shape[0]
    Jx = np.empty((3, nv))
    Jn = np.empty(nv)
    u = np.empty(nv)
    v = np.empty(3)
    f = np.empty(3)
    et = np.empty(3)
    Bt = np.empty((3, 3))
    tmp = np.empty((3, nv))
    inv_mass = 0.0
    power = energy = 0.0
    nt = nh = 0
    for q in range(npairs):
        _point_jacobian(J[slot[q]], Cs[link[pairs[q, 0]], :3, 3], x[q], Jx)
        for a in range(3):
            sm = 0.0
            for c in range(nv):
                sm += Jx[a, c] * V[c]
            v[a] = sm
        n = normals[pairs[q, 1]]
        vn = n[0] * v[0] + n[1] * v[1] + n[2] * v[2]
        g0 = gap[q]
        m = mu[pairs[q, 0]]
        fn = k * max(-g0, 0.0) - b * vn
        if g0 < 0.0:
            touching[nt] = keys[q]
            nt += 1
            p = -g0
            fc = max(fn, 0.0)
            s2 = 0.0
            for a in range(3):
                f[a] = fc * n[a]
                s2 += (v[a] - vn * n[a]) ** 2
            s = np.sqrt(s2)
            if s > 0.0 and fc > 0.0:
                scale = m * fc * np.tanh(s / vs) / s
                for a in range(3):
                    f[a] -= scale * (v[a] - vn * n[a])
            for a in range(3):
                F[q, a] = f[a]
                power += f[a] * v[a]
            power -= k * p * vn
            energy += 0.5 * k * p * p
            for c in range(nv):
                gen[c] += Jx[0, c] * f[0] + Jx[1, c] * f[1] + Jx[2, c] * f[2]
        if h <= 0.0:
            continue
        if g0 >= 0.0 and g0 + h * vn >= 0.0:
            i = np.searchsorted(keep, keys[q])
            if i == keep.shape[0] or keep[i] != keys[q]:
                continue
        held[nh] = keys[q]
        nh += 1
        for c in range(nv):
            Jn[c] = n[0] * Jx[0, c] + n[1] * Jx[1, c] + n[2] * Jx[2, c]
        for c in range(nv):
            for e in range(nv):
                K[c, e] += k * Jn[c] * Jn[e]
                B[c, e] += b * Jn[c] * Jn[e]
        if fn > 0.0 and m > 0.0:
            s = 0.0
            for a in range(3):
                et[a] = v[a] - vn * n[a]
                s += et[a] * et[a]
            s = np.sqrt(s)
            z = s / vs
            if z > 1e-6:
                for a in range(3):
                    et[a] /= s
                inv_mass = 0.0
                for c in range(nv):     # u = L⁻¹ J_xᵀ e by forward substitution
                    sm = Jx[0, c] * et[0] + Jx[1, c] * et[1] + Jx[2, c] * et[2]
                    for e in range(c):
                        sm -= L[c, e] * u[e]
                    u[c] = sm / L[c, c]
                    inv_mass += u[c] * u[c]
            if z <= 1e-6 or m * fn * h * inv_mass >= s:      # sticks within the step
                for a in range(3):
                    for e in range(3):
                        Bt[a, e] = m * fn / vs * ((1.0 if a == e else 0.0) - n[a] * n[e])
            else:
                sl = m * fn * np.tanh(z) / s
                sa = m * fn / vs / np.cosh(z) ** 2 if z < 300.0 else 0.0
                for a in range(3):
                    for e in range(3):
                        Bt[a, e] = (sl * ((1.0 if a == e else 0.0) - n[a] * n[e])
                                    + (sa - sl) * et[a] * et[e])
            for a in range(3):
                for c in range(nv):
                    tmp[a, c] = Bt[a, 0] * Jx[0, c] + Bt[a, 1] * Jx[1, c] + Bt[a, 2] * Jx[2, c]
            for c in range(nv):
                for e in range(nv):
                    B[c, e] += Jx[0, c] * tmp[0, e] + Jx[1, c] * tmp[1, e] + Jx[2, c] * tmp[2, e]
    return power, energy, nt, nh
