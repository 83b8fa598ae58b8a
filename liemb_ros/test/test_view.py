"""
The live 3D view (``liemb_ros.view``, ``liemb view``): scene contents, twist arrows, bad input,
and a real headless Chromium looking at a running simulation.

The browser test drives Debian's ``chromium`` through Playwright (never ``playwright install``)
with software WebGL, checks pixels of the arm's link colours in the scene, that two frames of
the running simulation differ (and two paused ones do not), and that the page asks for nothing
outside the loopback address; from ROS, that the page and the joint_states feed work while a
mesh is still being read.  Under the test command (``LIEMB_REQUIRE_ROS=1``) a missing
chromium, viser or Playwright fails the test instead of skipping it.
"""
import contextlib
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import liemb_ros as lm
from conftest import ROOT, ros_importorskip
from liemb_ros.core import resources

viser = ros_importorskip('viser')[0]
from liemb_ros import view as lv  # noqa: E402  (after the import check)

CHROMIUM = '/usr/bin/chromium'
SCENE = {'x': 240, 'y': 160, 'width': 700, 'height': 560}   # left of the control panel
ARGS = ['--headless', '--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader']
SHOT = os.path.join(os.environ.get('TMPDIR', '/tmp'), 'liemb_view_test.png')  # for a look
ORANGE = np.array([0.95, 0.45, 0.1])   # liemb_arm7's materials
MAGENTA = np.array([1.0, 0.0, 1.0])   # the simulation node's contact points


@pytest.fixture(scope='module')
def arm():
    xml, path = resources.read_robot_description('liemb_arm7')
    return lm.load_urdf_string(xml, source=path), xml


def _mesh_urdf(tmp_path):
    import trimesh
    trimesh.creation.box(extents=(0.1, 0.2, 0.3)).export(tmp_path / 'block.stl')
    return """<robot name="meshy">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01"
    ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="block.stl" scale="2 2 2"/></geometry></visual></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01"
    ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="package://nowhere_pkg/meshes/gone.dae"/></geometry>
    </visual></link>
</robot>"""


def test_visuals_of_the_arm(arm):
    model, xml = arm
    vis = lv.read_visuals(xml)
    assert vis and {v.kind for v in vis} <= {'cylinder', 'box', 'sphere'}
    assert {v.link for v in vis} <= set(model.link_names)
    assert any(np.allclose(v.color, ORANGE) for v in vis)


def test_missing_mesh_is_a_logged_marker(tmp_path):
    xml = _mesh_urdf(tmp_path)
    lines = []
    vis = lv.read_visuals(xml, base_dir=str(tmp_path), package_dirs=[str(tmp_path)],
                          log=lines.append)
    found, missing = vis
    assert found.kind == 'mesh' and found.path == str(tmp_path / 'block.stl')
    assert np.allclose(np.ptp(found.mesh.vertices, axis=0), (0.1, 0.2, 0.3))
    assert found.scale == (2.0, 2.0, 2.0)
    assert missing.kind == 'missing'
    assert len(lines) == 1 and 'package://nowhere_pkg/meshes/gone.dae' in lines[0]
    assert "link 'arm'" in lines[0] and str(tmp_path / 'nowhere_pkg') in lines[0]
    # the view still starts and shows the rest
    model = lm.load_urdf_string(xml)
    view = lv.RobotView(model, xml, port=0, base_dir=str(tmp_path), log=lines.append)
    try:
        view.update([0.5])
        assert view.updates == 2 and len(lines) == 2
    finally:
        view.close()


def test_resolve_mesh_package_and_relative(tmp_path):
    (tmp_path / 'pkg' / 'meshes').mkdir(parents=True)
    (tmp_path / 'pkg' / 'meshes' / 'a.stl').write_text('solid a\nendsolid a\n')
    assert lv.resolve_mesh('package://pkg/meshes/a.stl', None, [str(tmp_path)])[0] == \
        str(tmp_path / 'pkg' / 'meshes' / 'a.stl')
    assert lv.resolve_mesh('package://pkg/meshes/a.stl', None, [str(tmp_path / 'pkg')])[0] == \
        str(tmp_path / 'pkg' / 'meshes' / 'a.stl')
    assert lv.resolve_mesh('meshes/a.stl', str(tmp_path / 'pkg'))[0] == \
        str(tmp_path / 'pkg' / 'meshes' / 'a.stl')
    assert lv.resolve_mesh('file://' + str(tmp_path / 'b.stl'))[0] is None


def test_port_in_use_and_foreign_address(arm):
    model, xml = arm
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(lv.ViewError, match=f'127.0.0.1:{port} is in use'):
            lv.RobotView(model, xml, port=port)
    with pytest.raises(lv.ViewError, match=r'192\.0\.2\.1:8080 cannot be served'):
        lv.check_address('192.0.2.1', 8080)     # TEST-NET-1: never this machine's


@pytest.mark.parametrize('rep', lm.REPRESENTATIONS)
def test_twist_arrows_where_each_representation_puts_them(arm, rep, rng):
    model, _ = arm
    q, qd = model.random_configuration(rng), rng.normal(size=model.nv)
    link = 'tool0'
    pts, V = lv.twist_arrows(model, q, qd, link, rep, scale=1.0)
    assert np.allclose(V, lm.link_twist(model, q, qd, link, rep))
    # independent: the link pose by central differences along qd
    h = 1e-6
    Cp, Cm = (lm.link_pose(model, q + s * h * qd, link) for s in (1, -1))
    C = lm.link_pose(model, q, link)
    Cdot = (Cp - Cm) / (2 * h)
    w_hat = Cdot[:3, :3] @ C[:3, :3].T
    w_world = np.array([w_hat[2, 1], w_hat[0, 2], w_hat[1, 0]])
    r_dot = Cdot[:3, 3]
    start = np.zeros(3) if rep == 'spatial' else C[:3, 3]
    v = r_dot - np.cross(w_world, C[:3, 3]) if rep == 'spatial' else r_dot
    assert np.allclose(pts[:, 0], start)
    assert np.allclose(pts[0, 1] - start, w_world, atol=1e-6)
    assert np.allclose(pts[1, 1] - start, v, atol=1e-6)


PLANAR = """<robot name="slider"><link name="ground"/>
  <joint name="plane" type="planar"><parent link="ground"/><child link="puck"/>
    <axis xyz="0 0 1"/></joint>
  <link name="puck"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1"
    ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="pin" type="revolute"><parent link="puck"/><child link="arm"/>
    <origin xyz="0.2 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <link name="arm"><inertial><origin xyz="0 0 -0.1"/><mass value="1"/><inertia ixx="0.01"
    iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
</robot>"""


@pytest.mark.parametrize('robot', ['liemb_arm7', 'planar'])
def test_joint_wrench_arrows_hold_the_robot_at_rest(arm, robot):
    """At rest the joints carry the weight beyond them: forces straight up, m g long."""
    model = arm[0] if robot == 'liemb_arm7' else lm.load_urdf_string(PLANAR)
    q = model.random_configuration(5)
    pts = lv.joint_wrench_arrows(model, q, np.zeros(model.nv), np.zeros(model.nv), scale=1.0)
    masses = model.inertia[:, 3, 3]   # the spatial inertia's mass entries, per body
    Cb = lm.body_poses(model, q)
    for k in range(model.nq):
        b = int(np.nonzero(model.q_index == k)[0][-1])
        beyond = masses[model.support[:, b]].sum()   # bodies whose path passes through b
        assert np.allclose(pts[k, 0], Cb[b, :3, 3])
        f = pts[k, 1] - pts[k, 0]
        assert np.allclose(f, [0.0, 0.0, 9.81 * beyond], atol=1e-9), (k, f, beyond)


def test_driver_accelerations_are_the_simulators(arm):
    """The accelerations behind the wrench arrows: what one short Simulator step does."""
    from liemb_ros.sim.simulator import Simulator
    model = arm[0]
    q = model.random_configuration(5)
    qd0 = 0.3 * np.cos(np.arange(model.nv))   # damping and friction at work
    sim = Simulator(model, q0=q, qd0=qd0, dt=1e-6, limits=False)
    view = lv.RobotView(model, arm[1], port=0)
    try:
        drv = lv.SimulationDriver(sim, view)
        tau = np.linspace(-1, 1, model.nq)
        qdd = drv.accelerations(tau)
        sim.step(tau, 1)
        # one step of 1 us: q̈ changes within it by ~1e-4 of itself (joint7's stiff damping)
        assert np.allclose(qdd, (sim.qd - qd0) / sim.dt, rtol=1e-3, atol=1e-3)
    finally:
        view.close()


BALL = """<robot name="ball"><link name="ball"><inertial><mass value="1"/><inertia
    ixx="0.004" iyy="0.004" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial>
  <visual><geometry><sphere radius="0.1"/></geometry></visual>
  <collision><geometry><sphere radius="0.1"/></geometry></collision></link></robot>"""


def test_driver_draws_ground_contacts():
    """A ball on the ground: one contact, its point on the plane, pushed up by m g."""
    from liemb_ros.sim.contact import ContactModel
    from liemb_ros.sim.simulator import Simulator
    model = lm.load_urdf_string(BALL, floating_base=True)
    C = np.eye(4)
    C[2, 3] = 0.1
    sim = Simulator(model, base_pose=C, contact=ContactModel(model, BALL))
    sim.step(None, 500)
    view = lv.RobotView(model, BALL, port=0)
    try:
        drv = lv.SimulationDriver(sim, view)
        assert drv.show_contacts() == 1
        (c,) = sim.contacts()
        assert abs(c.point[2]) < 1e-9 and np.allclose(c.force, [0, 0, 9.81], atol=0.05)
        shown = view._shown_sets
        assert {k for k in shown if k.startswith('/points/')} == {'/points/contacts'}
        assert '/markers/contact_forces' in shown
    finally:
        view.close()


def test_gravity_hold_drives_the_joints_of_a_floating_base(arm):
    model = lm.load_urdf_string(arm[1], floating_base=True)
    q = model.random_configuration(3)
    C = np.eye(4)
    C[:3, :3] = [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]   # lying on its side
    tau = lv.gravity_hold(model, 0.0)(0.3, q, C)
    assert tau.shape == (model.nq,)
    assert np.allclose(tau, lm.gravity_torques(model, q, base_pose=C)[6:])


def test_driver_stops_and_shows_a_failing_step(arm):
    """A torque of the wrong shape: stepping stops, the page says why, the view stays."""
    from liemb_ros.sim.simulator import Simulator
    model, xml = arm
    sim = Simulator(model)
    drv = lv.view_simulation(sim, torque=lambda t, q, base: np.zeros(3), xml=xml, port=0)
    try:
        deadline = time.monotonic() + 60
        while drv.error is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        assert 'ValueError' in drv.error and 'tau' in drv.error
        assert 'stopped: ValueError' in drv.view.gui_status.content
        assert sim.t == 0.0
    finally:
        drv.stop()
        drv.view.close()


def test_markers_of_several_topics_are_kept_apart(arm):
    """DELETEALL on one topic clears its markers only; spheres and arrows by namespace."""
    ros_importorskip('visualization_msgs')
    from argparse import Namespace

    from geometry_msgs.msg import Point
    from visualization_msgs.msg import Marker, MarkerArray

    from liemb_ros.ros.view_node import _Viewer
    calls = []

    class FakeView:
        def update(self, *a, **k):
            calls.append(('update',))

        def set_status(self, *a, **k):
            pass

        def set_arrows(self, name, points, colors, **k):
            calls.append(('arrows', name, len(points)))

        def set_points(self, name, centres, colors, **k):
            calls.append(('points', name, len(centres)))

    viewer = _Viewer(None, Namespace(floating_base=False), print)
    viewer.model, viewer.view, viewer.q, viewer.qd, viewer.base_pose = (
        arm[0], FakeView(), arm[0].neutral(), np.zeros(7), None)
    arrow = Marker(ns='twists', id=0, type=Marker.ARROW, points=[Point(), Point(x=1.0)])
    dot = Marker(ns='contacts/tool0', id=1, type=Marker.SPHERE)
    viewer.on_markers('/a', MarkerArray(markers=[arrow]))
    viewer.on_markers('/b', MarkerArray(markers=[dot]))
    viewer.refresh()
    assert ('arrows', 'a/twists', 1) in calls and ('points', 'b/contacts/tool0', 1) in calls
    calls.clear()
    viewer.on_markers('/b', MarkerArray(markers=[Marker(action=Marker.DELETEALL)]))
    viewer.refresh()
    assert calls == [('points', 'b/contacts/tool0', 0), ('arrows', 'a/twists', 1)]


def test_a_floating_base_follows_tf(arm):
    """From ROS the root link's pose comes from /tf (world -> root link)."""
    ros_importorskip('tf2_msgs')
    from argparse import Namespace

    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage

    from liemb_ros.ros.view_node import _Viewer
    model = lm.load_urdf_string(arm[1], floating_base=True)
    shown = []

    class FakeView:
        def update(self, q, qd, base_pose=None):
            shown.append(base_pose)

        def set_status(self, *a, **k):
            pass

    viewer = _Viewer(None, Namespace(floating_base=True), print)
    viewer.model, viewer.view, viewer.q, viewer.qd, viewer.base_pose = (
        model, FakeView(), model.neutral(), np.zeros(model.nv), None)
    t = TransformStamped(child_frame_id=model.root_link)
    t.transform.translation.x, t.transform.translation.z = 1.0, 0.5
    t.transform.rotation.z = t.transform.rotation.w = np.sqrt(0.5)   # 90 deg about z
    other = TransformStamped(child_frame_id='link3')
    viewer.on_tf(TFMessage(transforms=[other, t]))
    viewer.refresh()
    expected = np.eye(4)
    expected[:3, :3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    expected[:3, 3] = 1.0, 0.0, 0.5
    assert len(shown) == 1 and np.allclose(shown[0], expected)


def _need_browser():
    ros_importorskip('playwright.sync_api')
    if not os.access(CHROMIUM, os.X_OK):
        msg = f'{CHROMIUM} is not installed (./dev.sh setup installs it with apt-get)'
        if os.environ.get('LIEMB_REQUIRE_ROS') == '1':
            pytest.fail(msg)
        pytest.skip(msg)


def _pixels(png):
    import io

    import matplotlib.image as mpimg
    return mpimg.imread(io.BytesIO(png), format='png')[..., :3]


def _mask(img, color, tol=0.12):
    """Pixels whose hue matches ``color`` (shading scales brightness)."""
    c = color / np.linalg.norm(color)
    norm = np.linalg.norm(img, axis=-1, keepdims=True)
    direction = np.divide(img, norm, out=np.zeros_like(img), where=norm > 0.05)
    return np.linalg.norm(direction - c, axis=-1) < tol


def _near(img, color, tol=0.12):
    """Count pixels whose hue matches ``color``."""
    return int(_mask(img, color, tol).sum())


def _darks(img):
    """Count pixels of the arm's dark base: grey and darker than the grid's lines."""
    return int(((img.max(axis=-1) < 0.3) & (np.ptp(img, axis=-1) < 0.08)).sum())


def _reds(img):
    """Count red pixels (lit red: r well above g and b, g close to b; orange has g > b)."""
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    return int(((r - g > 0.2) & (np.abs(g - b) < 0.08)).sum())


def _greens(img):
    """Count green pixels (the shaded faces of a green mesh: g well above r and b)."""
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    return int(((g - r > 0.3) & (g - b > 0.3)).sum())


def _centroid(img):
    """Mean pixel position (row, column) of the orange links."""
    return np.argwhere(_mask(img, ORANGE)).mean(axis=0)


@contextlib.contextmanager
def _browser(url, requests):
    """A headless Chromium page on ``url``; every request it makes lands in ``requests``."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={'width': 1280, 'height': 720})
            page.on('request', lambda r: requests.append(r.url))
            page.on('websocket', lambda ws: requests.append(ws.url))
            page.route('**/*', lambda route: route.continue_()
                       if route.request.url.startswith(url) else route.abort())
            page.goto(url)
            page.wait_for_selector('canvas', timeout=30000)
            yield page
        finally:
            browser.close()


def _only_loopback(requests):
    """The page and its websocket came from 127.0.0.1 and nothing else was asked for."""
    from urllib.parse import urlparse
    assert any(u.startswith('http://127.0.0.1:') for u in requests), requests
    assert any(u.startswith('ws://127.0.0.1:') for u in requests), requests
    foreign = [u for u in requests if urlparse(u).hostname != '127.0.0.1']
    assert not foreign, f'requests outside loopback: {foreign}'


def _wait_text(page, text):
    """Wait until the page shows ``text`` (our status lines come over the websocket)."""
    page.wait_for_function(f"document.body.innerText.includes({text!r})", timeout=30000)


def _shot(page, path=None):
    return _pixels(page.screenshot(clip=SCENE, path=path))


def test_browser_draws_primitives_as_urdf_places_them():
    """A red cylinder along z stands upright; a green box along x lies flat."""
    _need_browser()
    xml = """<robot name="shapes"><link name="base">
      <visual><origin xyz="0 0 0.5"/><geometry><cylinder radius="0.03" length="1"/></geometry>
        <material name="red"><color rgba="1 0 0 1"/></material></visual>
      <visual><origin xyz="0.4 0 0.03" rpy="0 0 0"/><geometry><box size="0.8 0.06 0.06"/>
        </geometry><material name="green"><color rgba="0 1 0 1"/></material></visual>
      </link></robot>"""
    model = lm.load_urdf_string(xml)
    view = lv.RobotView(model, xml, port=0)
    requests = []
    try:
        with _browser(view.url, requests) as page:
            _wait_text(page, 'in a limit')
            time.sleep(1.5)
            img = _shot(page)
    finally:
        view.close()
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    red = np.argwhere((r - g > 0.3) & (np.abs(g - b) < 0.08))
    green = np.argwhere((g - r > 0.3) & (g - b > 0.3))
    assert len(red) > 200 and len(green) > 200
    height, width = np.ptp(red, axis=0)
    assert height > 3 * width, f'the cylinder is not upright ({height} x {width} pixels)'
    assert red[:, 0].min() < green[:, 0].min(), 'the cylinder does not rise above the box'
    _only_loopback(requests)


def test_browser_sees_the_simulated_arm_move(arm):
    """A headless Chromium on liemb view of a running simulation (issue 20's check)."""
    _need_browser()
    from liemb_ros.sim.scenario import sample_configuration
    from liemb_ros.sim.simulator import Simulator
    model, xml = arm
    sim = Simulator(model, q0=sample_configuration(model))
    sim.warm_up()
    lm.gravity_torques(model, sim.q)
    drv = lv.view_simulation(sim, torque=lv.gravity_hold(model, 0.05 * model.effort_limit),
                             xml=xml, port=0, log=print)
    requests = []
    try:
        with _browser(drv.view.url, requests) as page:
            _wait_text(page, 'simulation t =')   # connected: our status arrived
            time.sleep(1.5)   # the scene fades in
            shots, times = [_shot(page, SHOT)], [sim.t]
            for _ in range(2):   # three frames: a sinusoid may come back in two
                time.sleep(0.7)
                shots.append(_shot(page))
                times.append(sim.t)
            page.get_by_text('Pause').click()
            # messages arrive in order: once '(paused)' shows, the last pose has arrived
            _wait_text(page, '(paused)')
            paused, t_paused = [], []
            for _ in range(2):
                time.sleep(0.7)
                paused.append(_shot(page))
                t_paused.append(sim.t)
            page.get_by_text('Joint wrenches').click()   # the red force arrows
            time.sleep(1.0)
            wrenches = _shot(page)
    finally:
        drv.stop()
        drv.view.close()
    assert times[2] > times[0] + 0.5, 'the simulation did not run'
    for img in shots:   # about 600 orange and 600 dark pixels in this view
        assert _near(img, ORANGE) > 150, 'no orange links in the scene'
        assert _darks(img) > 150, 'no dark base in the scene'
    # where the orange links are on screen (edges flicker by a pixel between renders)
    centres = [_centroid(img) for img in shots]
    moved = max(np.linalg.norm(a - b) for a in centres for b in centres)
    still = np.linalg.norm(_centroid(paused[0]) - _centroid(paused[1]))
    assert moved > 4.0, f'the arm did not move on screen ({moved:.2f} pixels)'
    assert t_paused[0] == t_paused[1] and still < 1.0, f'paused, moved {still:.2f} pixels'
    assert _reds(paused[1]) < 20 < 100 < _reds(wrenches), 'no joint wrench arrows'
    _only_loopback(requests)


@pytest.mark.ros
def test_browser_sees_the_robot_on_ros_topics(graph, arm):
    """liemb view as the RViz stand-in: robot_description, joint_states and markers."""
    _need_browser()
    from geometry_msgs.msg import Point
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String
    from visualization_msgs.msg import Marker, MarkerArray

    from liemb_ros.ros.common import LATCHED
    from ros_graph import RELIABLE
    model, xml = arm
    port = lv.check_address('127.0.0.1', 0)
    url = f'http://127.0.0.1:{port}'
    graph.run('view', [sys.executable, '-m', 'liemb_ros.app.cli', 'view', '--port', str(port)])
    desc = graph.node.create_publisher(String, '/robot_description', LATCHED)
    desc.publish(String(data=xml))
    states = graph.node.create_publisher(JointState, '/joint_states', RELIABLE)
    markers = graph.node.create_publisher(MarkerArray, '/liemb_dynamics/markers', RELIABLE)
    contacts = graph.node.create_publisher(MarkerArray, '/liemb_simulation/contact_markers',
                                           RELIABLE)
    graph.spin_until(lambda: url in graph.output('view') and
                     states.get_subscription_count() > 0 and
                     markers.get_subscription_count() > 0 and
                     contacts.get_subscription_count() > 0)

    def publish(q):
        states.publish(JointState(name=model.joint_names, position=list(q),
                                  velocity=[0.0] * model.nq))
        graph.spin_for(0.3)
    q = np.array([0.0, 0.6, 0.0, -1.2, 0.0, 1.0, 0.0])
    requests = []
    with _browser(url, requests) as page:
        publish(q)
        _wait_text(page, 'driven by joint_states')
        time.sleep(1.5)
        first = _shot(page)
        arrow = Marker(ns='wrenches', id=0, type=Marker.ARROW, action=Marker.ADD)
        arrow.points = [Point(x=0.0, y=0.0, z=0.4), Point(x=0.0, y=0.4, z=0.4)]
        arrow.color.r, arrow.color.g, arrow.color.b, arrow.color.a = 0.9, 0.1, 0.1, 1.0
        arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.02, 0.04, 0.06
        markers.publish(MarkerArray(markers=[arrow]))
        dot = Marker(ns='contacts/tool0', id=1, type=Marker.SPHERE, action=Marker.ADD)
        dot.pose.position = Point(x=0.3, y=-0.3, z=0.0)
        dot.scale.x = dot.scale.y = dot.scale.z = 0.08
        dot.color.r, dot.color.b, dot.color.a = 1.0, 1.0, 1.0
        contacts.publish(MarkerArray(markers=[Marker(action=Marker.DELETEALL), dot]))
        publish(q + np.array([1.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]))
        time.sleep(1.5)
        second = _shot(page)
    assert _near(first, ORANGE) > 150 and _near(second, ORANGE) > 150
    moved = np.linalg.norm(_centroid(first) - _centroid(second))
    assert moved > 3.0, f'joint_states did not move the arm on screen ({moved:.2f} pixels)'
    assert _reds(first) < 20 < 100 < _reds(second), 'no marker arrow drawn'
    assert _near(first, MAGENTA) < 20 < 100 < _near(second, MAGENTA), 'no contact point drawn'
    _only_loopback(requests)


#: sitecustomize.py of a view process whose mesh reading waits until the test's gate file
#: exists: a mesh that takes as long to read as the test wants, in an unchanged process
GATED_READING = """
import os
import time

import trimesh

_load_mesh = trimesh.load_mesh


def _gated(*args, **kwargs):
    gate = os.environ['LIEMB_TEST_MESH_GATE']
    open(gate + '.reading', 'w').close()
    while not os.path.exists(gate):
        time.sleep(0.05)
    return _load_mesh(*args, **kwargs)


trimesh.load_mesh = _gated
"""


@pytest.mark.ros
def test_browser_page_and_joint_states_work_while_a_mesh_is_read(graph, tmp_path):
    """
    From ROS, a robot whose mesh is still being read: the page is up and joint_states drive
    it meanwhile; then the mesh appears (green), and one out of its package is a marker.
    """
    _need_browser()
    import trimesh
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    from liemb_ros.ros.common import LATCHED
    from ros_graph import RELIABLE
    meshes = tmp_path / 'pkgs' / 'mypkg' / 'meshes'
    meshes.mkdir(parents=True)
    trimesh.creation.box(extents=(0.4, 0.4, 0.4)).export(meshes / 'block.stl')
    (tmp_path / 'outside.stl').write_bytes((meshes / 'block.stl').read_bytes())
    inertial = ('<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" '
                'ixy="0" ixz="0" iyz="0"/></inertial>')
    xml = f"""<robot name="gated">
      <link name="base">{inertial}<visual><geometry>
        <mesh filename="package://mypkg/meshes/block.stl"/></geometry>
        <material name="green"><color rgba="0 1 0 1"/></material></visual></link>
      <joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
        <origin xyz="0 0 0.5"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <link name="arm">{inertial}<visual><geometry>
        <mesh filename="package://mypkg/../../outside.stl"/></geometry></visual></link>
    </robot>"""
    site, gate = tmp_path / 'site', tmp_path / 'gate'
    site.mkdir()
    (site / 'sitecustomize.py').write_text(GATED_READING)
    graph.env = dict(graph.env, LIEMB_TEST_MESH_GATE=str(gate), PYTHONPATH=os.pathsep.join(
        p for p in (str(site), graph.env.get('PYTHONPATH')) if p))
    port = lv.check_address('127.0.0.1', 0)
    url = f'http://127.0.0.1:{port}'
    graph.run('view', [sys.executable, '-m', 'liemb_ros.app.cli', 'view', '--port', str(port),
                       '--package-dir', str(tmp_path / 'pkgs')])
    desc = graph.node.create_publisher(String, '/robot_description', LATCHED)
    desc.publish(String(data=xml))
    states = graph.node.create_publisher(JointState, '/joint_states', RELIABLE)
    graph.spin_until(lambda: url in graph.output('view') and
                     os.path.exists(f'{gate}.reading') and
                     states.get_subscription_count() > 0)
    requests = []
    with _browser(url, requests) as page:
        states.publish(JointState(name=['j'], position=[0.5], velocity=[0.0]))
        graph.spin_for(0.3)
        _wait_text(page, 'driven by joint_states')
        # the reading waits for the gate: the page and the feed worked meanwhile
        assert 'meshes: reading 0 of 1' in page.inner_text('body')
        time.sleep(1.5)
        before = _shot(page)
        gate.touch()
        _wait_text(page, 'meshes: 1 drawn, 1 as magenta markers')
        time.sleep(1.5)
        after = _shot(page, SHOT)
    text = graph.output('view')
    assert "mesh file 'package://mypkg/../../outside.stl' of link 'arm' refused" in text
    assert _greens(before) < 20 < 300 < _greens(after), 'the mesh was not drawn once read'
    _only_loopback(requests)


def test_liemb_view_simulate_command():
    """``liemb view --simulate`` prints its address and serves until --duration ends."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    proc = subprocess.run([sys.executable, '-m', 'liemb_ros.app.cli', 'view', 'liemb_arm7',
                           '--simulate', '--port', str(port), '--duration', '2'],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert f'http://127.0.0.1:{port}' in proc.stdout
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        s.listen()
        busy = s.getsockname()[1]
        proc = subprocess.run([sys.executable, '-m', 'liemb_ros.app.cli', 'view', 'liemb_arm7',
                               '--simulate', '--port', str(busy)],
                              capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 2 and f'127.0.0.1:{busy} is in use' in proc.stderr
