"""
The convergence table of a study (:func:`.study.convergence`), as text or as markdown.

``liemb reproduce NAME --convergence`` prints the text table (:mod:`.command`);
docs/examples/make_pages.py writes the markdown one into each example's page.  Both show,
per update and quantity, the maximum at each step size and the fitted order (or the
round-off level), then the runs that gave no result and, for the flip, the reference of
Omega.
"""

#: the updates' names in the markdown table
UPDATE_NAMES = {'se3': 'SE(3)', 'so3r3': 'SO(3)xR^3', 'tailored': 'tailored',
                'ulv': 'ULV ([HGS18])', 'ulv-paper': "ULV, [HGS18]'s stages"}

#: the note under the markdown table: how the orders are fitted
ORDERS_NOTE = ('Orders: least-squares slope over the values inside the asymptotic range '
               '(below 1 % of the quantity\'s scale), above the round-off floor and still '
               'decreasing; "round-off": every value at or below the floor (1e-11 m or 1e-11 '
               'for constraints, 3e-10 m for the boxes whose COM travels 100 m, 1e-13 E0 for '
               'energy).')


def convergence_table(study, markdown=False):
    """
    Return the convergence table of ``study`` as one string (lines joined by newlines).

    ``markdown=False``: the text ``liemb reproduce NAME --convergence`` prints, with the
    example, its paper's claim and one block per update.  ``markdown=True``: the table of
    an example's page in docs/examples/, with its step sizes above and its notes below.
    """
    dts = study['dts']
    if markdown:
        lines = [f"Step sizes: {', '.join(f'{d:g}' for d in dts)} s ({study['dts_source']}); "
                 f"maxima over {study['t_end']:g} s; `-`: no result (see below).", '',
                 '| update | quantity | ' + ' | '.join(f'dt = {d:.3g}' for d in dts)
                 + ' | order |', '|' + '---|' * (len(dts) + 3)]
    else:
        lines = [f"{study['example']} ({study['paper']}): convergence over t_end = "
                 f"{study['t_end']:g} s, step sizes from {study['dts_source']}",
                 f"  paper: {study['claim']}"]
        if study.get('derived'):
            lines.append(f"  derived: {study['derived']}")
        if 'omega_reference' in study:
            r = study['omega_reference']
            lines.append(f"  Omega reference: RK4 on Euler's equations, h = {r['h']:g}; its "
                         f"round-off level (h vs 2h) {r['roundoff_spread']:.1e}")
        head = ''.join(f'{d:>10.3g}' for d in dts)
    notes = []
    for update, data in study['updates'].items():
        if not markdown:
            lines += [f'  update {update}', f"    {'dt [s]':<34}{head}   order"]
        for key, q in data['quantities'].items():
            lines.append(_row(update, key, q, markdown))
        for r in data['runs']:
            if r['status'] == 'ok':
                continue
            if markdown:
                msg = r['message'].split(' (step h=')[0].split('; reduce')[0]
                notes.append(f"- {UPDATE_NAMES[update]}, dt = {r['dt']:g} s: {r['status']} at "
                             f"t = {r['t_stop']:g} s ({msg})")
            else:
                lines.append(f"    dt = {r['dt']:g}: {r['status']} at t = {r['t_stop']:g} s: "
                             f"{r['message']}")
    if not markdown:
        return '\n'.join(lines)
    if 'omega_reference' in study:
        ref = study['omega_reference']
        notes.append(f"- Omega reference: RK4 on Euler's equations, h = {ref['h']:g}: "
                     f"Omega(1) = ({', '.join(f'{v:.5f}' for v in ref['omega'])}); its "
                     f"round-off floor (h vs 2h) {ref['roundoff_spread']:.1e}")
    lines += [''] + notes if notes else []
    lines += ['', ORDERS_NOTE]
    return '\n'.join(lines)


def escape_cell(text):
    """Escape the pipes of a markdown table cell."""
    return text.replace('|', '\\|')


def _row(update, key, q, markdown):
    """Return one quantity's row: its values at each step size and its order."""
    if q['roundoff']:
        tail = (f"round-off (max {q['level']:.1e})" if markdown
                else f"round-off (<= {q['floor']:.0e})")
    elif q['order'] is not None:
        tail = f"{q['order']:.2f}" + ('' if markdown else f" (from {len(q['used'])} points)")
    else:
        tail = '-'
    if markdown:
        return (f'| {UPDATE_NAMES[update]} | {escape_cell(key)} | '
                + ' | '.join('-' if v is None else f'{v:.2e}' for v in q['values'])
                + f' | {tail} |')
    vals = ''.join(' ' + ('      -  ' if v is None else f'{v:9.2e}') for v in q['values'])
    return f'    {key[:34]:<34}{vals}   {tail}'
