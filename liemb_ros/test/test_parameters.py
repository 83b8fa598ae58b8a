"""
Each node's parameters are declared once, in a table (issue 29): the docs' parameter
reference is written from the tables, and every shipped ``config/*.yaml`` sets only
parameters the tables declare, with their type and within their range.
"""
import glob
import os

import numpy as np
import pytest
import yaml

from conftest import REPO, ROOT, ros_importorskip

ros_importorskip('rclpy')
from liemb_ros.app import parameter_docs  # noqa: E402
from rcl_interfaces.msg import ParameterType as P  # noqa: E402

#: parameters every ROS 2 node has, whatever it declares
ROS_PARAMETERS = {'use_sim_time'}


def test_the_parameter_reference_is_the_tables():
    with open(os.path.join(REPO, 'docs', 'parameters.md'), encoding='utf-8') as f:
        page = f.read()
    assert page == parameter_docs.markdown(), (
        'docs/parameters.md is stale: python -m liemb_ros.app.parameter_docs '
        'docs/parameters.md')


def _flat(values, prefix=''):
    """``{'computed_torque': {'kp': x}}`` -> ``{'computed_torque.kp': x}``."""
    out = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out.update(_flat(value, f'{prefix}{key}.'))
        else:
            out[f'{prefix}{key}'] = value
    return out


def _fits(kind, value):
    number = (int, float)
    if kind == P.PARAMETER_BOOL:
        return isinstance(value, bool)
    if kind == P.PARAMETER_INTEGER:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == P.PARAMETER_DOUBLE:
        return isinstance(value, number) and not isinstance(value, bool)
    if kind == P.PARAMETER_STRING:
        return isinstance(value, str)
    inner = {P.PARAMETER_BOOL_ARRAY: P.PARAMETER_BOOL, P.PARAMETER_DOUBLE_ARRAY:
             P.PARAMETER_DOUBLE, P.PARAMETER_STRING_ARRAY: P.PARAMETER_STRING}[kind]
    return isinstance(value, list) and all(_fits(inner, v) for v in value)


def _settings():
    """``(file, node, parameter, value)`` of every shipped parameter file."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'config', '*.yaml'))):
        with open(path, encoding='utf-8') as f:
            data = yaml.safe_load(f)
        if not (isinstance(data, dict) and data and all(
                isinstance(v, dict) and 'ros__parameters' in v for v in data.values())):
            continue   # not a parameter file (launch sets, a trajectory)
        for key, section in data.items():
            node = key.split('/')[-1]
            for name, value in _flat(section['ros__parameters']).items():
                out.append((os.path.basename(path), node, name, value))
    return out


SETTINGS = _settings()


def test_there_are_shipped_parameter_files():
    assert {s[0] for s in SETTINGS} >= {'dynamics.yaml', 'simulation.yaml', 'servo.yaml',
                                        'control.yaml', 'stand.yaml'}


@pytest.mark.parametrize('where, node, name, value', SETTINGS,
                         ids=[f'{s[0]}:{s[1]}:{s[2]}' for s in SETTINGS])
def test_a_shipped_setting_is_a_declared_parameter_of_its_type_and_range(
        where, node, name, value):
    table = {row[0]: row for row in parameter_docs.tables()[node]}
    if name in ROS_PARAMETERS:
        return
    assert name in table, f'{where}: {node} declares no parameter {name}'
    _, _, _, kind, extra = table[name]
    assert _fits(kind, value), (where, name, value, parameter_docs.type_name(kind))
    if 'lo' in extra:
        assert extra['lo'] <= value <= extra['hi'], (where, name, value, extra)


def _plain(value):
    """Return a default as a parameter holds it: sequences as lists, recursively."""
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def test_the_dynamics_node_defaults_are_the_engines():
    """Every engine setting is a dynamics node parameter, with the engine's default."""
    from liemb_ros.control.engine import DEFAULTS, DynamicsEngine
    from liemb_ros.core.model import load_urdf_string
    from liemb_ros.ros import dynamics_parameters
    table = {name: value for name, value, *_ in dynamics_parameters.parameter_table()}
    settings = dynamics_parameters.engine_settings({}, table.__getitem__)
    assert set(settings) == set(DEFAULTS)
    for name, value in settings.items():
        assert _plain(value) == _plain(DEFAULTS[name]), name
    urdf = ('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>'
            '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
            '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>'
            '</joint></robot>')
    model = load_urdf_string(urdf)
    plain, node = DynamicsEngine(model).settings, DynamicsEngine(model, **settings).settings
    assert plain.model is node.model is model    # no payload, the model's gravity
    for name in set(DEFAULTS) - {'payload', 'gravity'}:
        assert np.asarray(getattr(plain, name)).tolist() == \
            np.asarray(getattr(node, name)).tolist(), name
