"""
The parameter reference of the nodes (``docs/parameters.md``), written from their tables.

Each node declares its parameters from one table (``parameter_table()`` of the node's
module, and :func:`~liemb_ros.ros.common.robot_parameter_table` for the robot), in the
spirit of generate_parameter_library: name, type, default, range, whether it may change at
run time, description.  :func:`markdown` renders those tables; ``python -m
liemb_ros.app.parameter_docs docs/parameters.md`` writes the page, and a test fails when
the page or a shipped ``config/*.yaml`` disagrees with a table.
"""
import sys

#: node name -> (module of its table, what the node is)
NODES = {
    'liemb_dynamics': ('liemb_ros.ros.dynamics_node', 'the dynamics node: torques, twists, '
                       'wrenches, the controllers'),
    'liemb_simulation': ('liemb_ros.ros.simulation_parameters', 'the simulation node'),
    'liemb_servo': ('liemb_ros.ros.servo_node', 'the servo node: teleoperation'),
}


def tables():
    """Return ``{node name: ((name, default, description, type, extra), ...)}``."""
    import importlib

    from ..ros.common import robot_parameter_table
    return {node: tuple(importlib.import_module(module).parameter_table())
            + tuple(robot_parameter_table()) for node, (module, _) in NODES.items()}


def type_name(kind):
    """Return a parameter type's name as ROS 2 writes it (``double[]``)."""
    from rcl_interfaces.msg import ParameterType as P
    return {P.PARAMETER_BOOL: 'bool', P.PARAMETER_INTEGER: 'int', P.PARAMETER_DOUBLE: 'double',
            P.PARAMETER_STRING: 'string', P.PARAMETER_BOOL_ARRAY: 'bool[]',
            P.PARAMETER_DOUBLE_ARRAY: 'double[]',
            P.PARAMETER_STRING_ARRAY: 'string[]'}[kind]


def _cell(text):
    return str(text).replace('|', '\\|').replace('\n', ' ')


def _value(v):
    """Write a default as a YAML file writes it."""
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, (list, tuple)):
        return '[' + ', '.join(_value(x) for x in v) + ']'
    return repr(v) if isinstance(v, str) else f'{v}'


def markdown():
    """Return the text of ``docs/parameters.md``."""
    out = ['# Node parameters', '',
           'Generated from the nodes\' parameter tables by `python -m '
           'liemb_ros.app.parameter_docs docs/parameters.md` (a test checks that this page and '
           'the shipped `config/*.yaml` agree with them).  "run time": the parameter may change '
           'while the node runs (`ros2 param set`); the others are read once, at start.  '
           'Overview and what to touch first: [nodes.md](nodes.md).', '']
    for node, table in tables().items():
        out += [f'## `{node}`: {NODES[node][1]}', '',
                '| parameter | type | default | range | run time | description |',
                '|---|---|---|---|---|---|']
        for name, default, text, kind, extra in table:
            lo, hi = extra.get('lo'), extra.get('hi')
            span = f'{lo:g} .. {hi:g}' if lo is not None else ''
            out.append(f'| `{name}` | {type_name(kind)} | `{_cell(_value(default))}` | {span} | '
                       f"{'' if extra.get('read_only') else 'yes'} | {_cell(text)} |")
        out.append('')
    return '\n'.join(out)


def main(argv=None):
    """Write the page to the path given (default: print it)."""
    argv = sys.argv[1:] if argv is None else argv
    text = markdown()
    if argv:
        with open(argv[0], 'w', encoding='utf-8') as f:
            f.write(text)
    else:
        print(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
