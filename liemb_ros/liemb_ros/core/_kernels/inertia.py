"""
Spatial inertias: moved between frames, applied to twists, their rates, composites.

A rigid-body inertia ``M = [[Θ, h~], [-h~, m I]]`` (body frame, ``h = m c``; Müller,
Multibody Syst. Dyn. 42 (2018) 219–248, eq. (40)) moved to another frame
(``Ad_C^-T M Ad_C^-1``, ibid. eq. (34)) stays a rigid-body inertia: the spatial kernels keep
it as its 10 parameters ``(model, h, Θ)`` (:func:`inertia10_to`), apply it to a twist with 24
products (:func:`inertia10_apply`) and carry it along a twist (``Ṁ^s = -ad_Vᵀ M^s - M^s
ad_V``, ibid. eq. (37); :func:`inertia10_rate`).  The articulated inertias of the ABA are
general symmetric 6x6 matrices (:func:`add_inertia_to_parent`).  See
docs/theory/recursions.md.
"""
from numba import njit


@njit(cache=True, inline='always')
def mat6_vec(M, x, out):
    for r in range(6):
        out[r] = (M[r, 0] * x[0] + M[r, 1] * x[1] + M[r, 2] * x[2]
                  + M[r, 3] * x[3] + M[r, 4] * x[4] + M[r, 5] * x[5])


@njit(cache=True, inline='always')
def unit_axis(x):
    """
    Return ``k`` where the 6-vector ``x`` is ``±e_k`` (a joint screw along a coordinate axis
    of its body frame, as most URDF joints are), else -1.

    A product with such a screw is one column or entry of the other factor, the same
    numbers as the full product (the other terms are exact zeros).
    """
    k = -1
    for r in range(6):
        if x[r] != 0.0:
            if k >= 0 or abs(x[r]) != 1.0:
                return -1
            k = r
    return k


@njit(cache=True, inline='always')
def dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(cache=True, inline='always')
def inertia10_to(C, M, rotate_only, out):
    """
    Move a rigid-body inertia by the pose ``C``; write its 10 parameters into ``out``.

    ``M = [[Θ, h~], [-h~, m I]]`` (6x6, body frame, ``h = m c``); ``out`` (10,) receives
    ``(model, h', Θ'00, Θ'11, Θ'22, Θ'01, Θ'02, Θ'12)`` of ``Ad_C^-T M Ad_C^-1`` ([M18d] (34)),
    the spatial inertia at the origin of ``C``'s frame, or with ``rotate_only`` of ``Ad_R M Ad_Rᵀ``
    (76a), the hybrid one at the body origin:
    ``Θ' = R Θ Rᵀ - (h_o~ r~ + r~ h_o~ + m r~²)``, ``h' = h_o + m r``, ``h_o = R h``
    (parallel axes without dividing by ``model``; Θ symmetric: 6 numbers, not 36).
    """
    m = M[3, 3]
    h0 = M[2, 4]
    h1 = M[0, 5]
    h2 = M[1, 3]
    if rotate_only:
        r0 = 0.0
        r1 = 0.0
        r2 = 0.0
    else:
        r0 = C[0, 3]
        r1 = C[1, 3]
        r2 = C[2, 3]
    # T = R Θ (rows), then the upper triangle of T Rᵀ
    t00 = C[0, 0] * M[0, 0] + C[0, 1] * M[1, 0] + C[0, 2] * M[2, 0]
    t01 = C[0, 0] * M[0, 1] + C[0, 1] * M[1, 1] + C[0, 2] * M[2, 1]
    t02 = C[0, 0] * M[0, 2] + C[0, 1] * M[1, 2] + C[0, 2] * M[2, 2]
    t10 = C[1, 0] * M[0, 0] + C[1, 1] * M[1, 0] + C[1, 2] * M[2, 0]
    t11 = C[1, 0] * M[0, 1] + C[1, 1] * M[1, 1] + C[1, 2] * M[2, 1]
    t12 = C[1, 0] * M[0, 2] + C[1, 1] * M[1, 2] + C[1, 2] * M[2, 2]
    t20 = C[2, 0] * M[0, 0] + C[2, 1] * M[1, 0] + C[2, 2] * M[2, 0]
    t21 = C[2, 0] * M[0, 1] + C[2, 1] * M[1, 1] + C[2, 2] * M[2, 1]
    t22 = C[2, 0] * M[0, 2] + C[2, 1] * M[1, 2] + C[2, 2] * M[2, 2]
    a0 = C[0, 0] * h0 + C[0, 1] * h1 + C[0, 2] * h2
    a1 = C[1, 0] * h0 + C[1, 1] * h1 + C[1, 2] * h2
    a2 = C[2, 0] * h0 + C[2, 1] * h1 + C[2, 2] * h2
    hr2 = 2.0 * (a0 * r0 + a1 * r1 + a2 * r2)
    mrr = m * (r0 * r0 + r1 * r1 + r2 * r2)
    out[0] = m
    out[1] = a0 + m * r0
    out[2] = a1 + m * r1
    out[3] = a2 + m * r2
    # Θ' = R Θ Rᵀ - (h_o rᵀ + r h_oᵀ - 2 (h_o·r) I) - m (r rᵀ - |r|² I)
    out[4] = (t00 * C[0, 0] + t01 * C[0, 1] + t02 * C[0, 2]
              - 2.0 * a0 * r0 + hr2 - m * r0 * r0 + mrr)
    out[5] = (t10 * C[1, 0] + t11 * C[1, 1] + t12 * C[1, 2]
              - 2.0 * a1 * r1 + hr2 - m * r1 * r1 + mrr)
    out[6] = (t20 * C[2, 0] + t21 * C[2, 1] + t22 * C[2, 2]
              - 2.0 * a2 * r2 + hr2 - m * r2 * r2 + mrr)
    out[7] = t00 * C[1, 0] + t01 * C[1, 1] + t02 * C[1, 2] - (a0 * r1 + r0 * a1 + m * r0 * r1)
    out[8] = t00 * C[2, 0] + t01 * C[2, 1] + t02 * C[2, 2] - (a0 * r2 + r0 * a2 + m * r0 * r2)
    out[9] = t10 * C[2, 0] + t11 * C[2, 1] + t12 * C[2, 2] - (a1 * r2 + r1 * a2 + m * r1 * r2)


@njit(cache=True, inline='always')
def spatial_inertias10(model, C, Ic):
    """``Ic[s]`` (10,): spatial inertia of node ``s`` in the frame of ``C`` (zero: fixed base)."""
    parent = model.parent
    nbase = model.nbase
    inertia = model.inertia
    base_inertia = model.base_inertia
    if nbase > 0:
        inertia10_to(C[0], base_inertia, False, Ic[0])
    else:   # a fixed base's inertia never enters M, Ṁ, C or the derivatives
        for r in range(10):
            Ic[0, r] = 0.0
    for s in range(1, parent.shape[0] + 1):
        inertia10_to(C[s], inertia[s - 1], False, Ic[s])


@njit(cache=True, inline='always')
def inertia10_apply(In, x, out, add):
    """
    ``out (+)= In x`` for a 10-parameter inertia ``In`` (see :func:`inertia10_to`).

    ``[[Θ, h~], [-h~, m]] (ω, v) = (Θ ω + h × v, m v - h × ω)``: 24 products, not 36.
    """
    w0 = x[0]
    w1 = x[1]
    w2 = x[2]
    v0 = x[3]
    v1 = x[4]
    v2 = x[5]
    m = In[0]
    h0 = In[1]
    h1 = In[2]
    h2 = In[3]
    f0 = In[4] * w0 + In[7] * w1 + In[8] * w2 + h1 * v2 - h2 * v1
    f1 = In[7] * w0 + In[5] * w1 + In[9] * w2 + h2 * v0 - h0 * v2
    f2 = In[8] * w0 + In[9] * w1 + In[6] * w2 + h0 * v1 - h1 * v0
    f3 = m * v0 - (h1 * w2 - h2 * w1)
    f4 = m * v1 - (h2 * w0 - h0 * w2)
    f5 = m * v2 - (h0 * w1 - h1 * w0)
    if add:
        out[0] += f0
        out[1] += f1
        out[2] += f2
        out[3] += f3
        out[4] += f4
        out[5] += f5
    else:
        out[0] = f0
        out[1] = f1
        out[2] = f2
        out[3] = f3
        out[4] = f4
        out[5] = f5


@njit(cache=True, inline='always')
def inertia10_rate(In, V, out):
    """
    Write the time derivative of a spatial inertia carried by the spatial twist ``V = (ω, v)``.

    ``Ṁ^s = -ad_Vᵀ M^s - M^s ad_V`` ([M18d] (37)) keeps the 10-parameter form:
    ``ṁ = 0``, ``ḣ = ω × h + m v``, ``Θ̇ = ω~Θ - Θω~ - (v hᵀ + h vᵀ - 2 (v·h) I)``.
    """
    w0 = V[0]
    w1 = V[1]
    w2 = V[2]
    v0 = V[3]
    v1 = V[4]
    v2 = V[5]
    m = In[0]
    h0 = In[1]
    h1 = In[2]
    h2 = In[3]
    # columns of Θ; S = ω~Θ, column j = ω × Θ[:, j]; Θ̇ = S + Sᵀ - ...
    c00 = In[4]
    c11 = In[5]
    c22 = In[6]
    c01 = In[7]
    c02 = In[8]
    c12 = In[9]
    s00 = w1 * c02 - w2 * c01
    s10 = w2 * c00 - w0 * c02
    s20 = w0 * c01 - w1 * c00
    s01 = w1 * c12 - w2 * c11
    s11 = w2 * c01 - w0 * c12
    s21 = w0 * c11 - w1 * c01
    s02 = w1 * c22 - w2 * c12
    s12 = w2 * c02 - w0 * c22
    s22 = w0 * c12 - w1 * c02
    vh2 = 2.0 * (v0 * h0 + v1 * h1 + v2 * h2)
    out[0] = 0.0
    out[1] = w1 * h2 - w2 * h1 + m * v0
    out[2] = w2 * h0 - w0 * h2 + m * v1
    out[3] = w0 * h1 - w1 * h0 + m * v2
    out[4] = 2.0 * s00 - 2.0 * v0 * h0 + vh2
    out[5] = 2.0 * s11 - 2.0 * v1 * h1 + vh2
    out[6] = 2.0 * s22 - 2.0 * v2 * h2 + vh2
    out[7] = s01 + s10 - (v0 * h1 + h0 * v1)
    out[8] = s02 + s20 - (v0 * h2 + h0 * v2)
    out[9] = s12 + s21 - (v1 * h2 + h1 * v2)


@njit(cache=True, inline='always')
def add_inertia_to_parent(G, M, T, Tm, out):
    """
    ``out += Ad_{G^-1}ᵀ M Ad_{G^-1}`` for a symmetric 6x6 ``M`` (an articulated inertia).

    Block form instead of a 6x6 congruence (432 products): with ``G = (R, r)``,
    ``M' = diag(R, R) M diag(Rᵀ, Rᵀ) = [[A, B], [Bᵀ, C]]`` and then the shift to the
    parent origin ``[[A + S + Sᵀ - r~ C r~, B + r~ C], [(B + r~ C)ᵀ, C]]``, ``S = r~ Bᵀ``
    (about 240 products).  ``T``, ``Tm``: 6x6 work arrays.
    """
    r0 = G[0, 3]
    r1 = G[1, 3]
    r2 = G[2, 3]
    # T = diag(R, R) M
    for i in range(6):
        o = 0 if i < 3 else 3
        a = i - o
        for c in range(6):
            T[i, c] = G[a, 0] * M[o, c] + G[a, 1] * M[o + 1, c] + G[a, 2] * M[o + 2, c]
    # Tm = T diag(Rᵀ, Rᵀ): blocks A (rows 0-2, cols 0-2), B (rows 0-2, cols 3-5), C
    for i in range(6):
        for c in range(6):
            if i >= 3 and c < 3:
                continue
            o = 0 if c < 3 else 3
            b = c - o
            Tm[i, c] = T[i, o] * G[b, 0] + T[i, o + 1] * G[b, 1] + T[i, o + 2] * G[b, 2]
    # B'' = B + r~ C (column j: r x C[:, j]); C'' = C
    for j in range(3):
        c0 = Tm[3, 3 + j]
        c1 = Tm[4, 3 + j]
        c2 = Tm[5, 3 + j]
        b0 = Tm[0, 3 + j] + r1 * c2 - r2 * c1
        b1 = Tm[1, 3 + j] + r2 * c0 - r0 * c2
        b2 = Tm[2, 3 + j] + r0 * c1 - r1 * c0
        out[0, 3 + j] += b0
        out[1, 3 + j] += b1
        out[2, 3 + j] += b2
        out[3 + j, 0] += b0
        out[3 + j, 1] += b1
        out[3 + j, 2] += b2
        for i in range(3):
            out[3 + i, 3 + j] += Tm[3 + i, 3 + j] if i <= j else Tm[3 + j, 3 + i]
    # Y = C r~ (row i: -(r x C[i, :])), stored in T[3:6, 0:3]; S = r~ Bᵀ in T[0:3, 0:3]
    for i in range(3):
        # C is symmetric: read its upper triangle, so that the result stays symmetric
        c0 = Tm[3, 3 + i]
        c1 = Tm[3 + min(i, 1), 3 + max(i, 1)]
        c2 = Tm[3 + i, 5]
        T[3 + i, 0] = -(r1 * c2 - r2 * c1)
        T[3 + i, 1] = -(r2 * c0 - r0 * c2)
        T[3 + i, 2] = -(r0 * c1 - r1 * c0)
        # column i of S: r x (row i of B)
        y0 = Tm[i, 3]
        y1 = Tm[i, 4]
        y2 = Tm[i, 5]
        T[0, i] = r1 * y2 - r2 * y1
        T[1, i] = r2 * y0 - r0 * y2
        T[2, i] = r0 * y1 - r1 * y0
    # A'' = A + S + Sᵀ - r~ Y (column j of r~ Y: r x Y[:, j])
    for j in range(3):
        y0 = T[3, j]
        y1 = T[4, j]
        y2 = T[5, j]
        z0 = r1 * y2 - r2 * y1
        z1 = r2 * y0 - r0 * y2
        z2 = r0 * y1 - r1 * y0
        for i in range(3):
            a = Tm[i, j] if i <= j else Tm[j, i]
            z = z0 if i == 0 else (z1 if i == 1 else z2)
            out[i, j] += a + T[i, j] + T[j, i] - z
