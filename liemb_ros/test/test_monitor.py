"""The demo's status line (``liemb_ros.ros.monitor.status_line``): what came, or '-'."""
from liemb_ros.ros.monitor import status_line


def test_the_status_line_shows_a_dash_until_the_diagnostics_came():
    """The first line comes when the loop closes, before the first /diagnostics: no 'nan'."""
    empty = status_line({'diag': {}})
    assert 'nan' not in empty
    assert empty.split() == ['sim', 't', '-', 's', 'RTF', '-', 'energy', 'error', '-', 'J', '|',
                             'dynamics', 'node', '-', 'Hz', 'p99', '-', 'us', 'dropped', '-']
    full = status_line({'diag': {
        'liemb_simulation': {'sim_time': '3.55', 'real_time_factor': '1.0',
                             'energy_balance_error': '2.1e-05'},
        'liemb_dynamics: cycle': {'rate_hz': '198.4', 'compute_p99_us': '175.7',
                                  'dropped': '0'}}})
    assert full == ('sim t    3.55 s  RTF 1.00  energy error  2.10e-05 J | dynamics node  '
                    '198.4 Hz  p99  175.7 us  dropped 0')
    assert len(full) == len(empty)   # the columns stay where they are
