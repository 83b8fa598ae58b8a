"""ament_python / pip build script for liemb_ros (the version comes from package.xml)."""
import os
import xml.etree.ElementTree as ET
from glob import glob

from setuptools import find_packages, setup

package_name = 'liemb_ros'
HERE = os.path.dirname(os.path.abspath(__file__))
# package.xml is the one source of the version (colcon, rosdep and bloom read it there).
version = ET.parse(os.path.join(HERE, 'package.xml')).getroot().findtext('version')


def _files(pattern):
    return [f for f in glob(pattern) if os.path.isfile(f)]


setup(
    name=package_name,
    version=version,
    packages=find_packages(exclude=['test', 'test.*', 'bench', 'bench.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', _files('launch/*.py')),
        ('share/' + package_name + '/config', _files('config/*')),
        ('share/' + package_name + '/urdf', _files('urdf/*')),
        ('share/' + package_name + '/rviz', _files('rviz/*')),
    ],
    # the library (core, sim, control) needs no ROS: a wheel installs with these alone;
    # the view, recordings and plots are extras, ROS 2 comes from a ROS install or
    # tools/ros/setup_ros.sh (./dev.sh), and colcon installs take rosdep's keys instead
    install_requires=['setuptools', 'numpy', 'numba>=0.60', 'scipy', 'urdf-parser-py', 'xacro',
                      'pyyaml', 'tqdm'],
    extras_require={
        'view': ['viser', 'trimesh'],
        'record': ['mcap', 'mcap-ros2-support'],
        'plot': ['matplotlib'],
        'sweep': ['dask[distributed]', 'pyarrow', 'zarr', 'bokeh', 'matplotlib'],
        'all': ['viser', 'trimesh', 'mcap', 'mcap-ros2-support', 'matplotlib',
                'dask[distributed]', 'pyarrow', 'zarr', 'bokeh'],
    },
    zip_safe=True,
    maintainer='liemb_ros developers',
    maintainer_email='dev@liemb-ros.invalid',
    description='Screw and Lie group theory for robots: POE model, kinematics, dynamics, '
                'Lie group integrators, ROS 2 nodes.',
    license='BSD-3-Clause',
    entry_points={
        'console_scripts': [
            'liemb = liemb_ros.app.cli:main',
            'dynamics_node = liemb_ros.ros.dynamics_node:main',
            'simulation_node = liemb_ros.ros.simulation_node:main',
            'servo_node = liemb_ros.ros.servo_node:main',
        ],
    },
)
