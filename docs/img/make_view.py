"""
Draw docs/img/liemb_view.png: the live view of liemb_arm7 in a headless Chromium.

The arm at a bent configuration, moving, with the hybrid twist of its tool as two arrows
(angular orange, linear blue) and the twist's components in the page's panel, as
``liemb view`` shows it.  Needs Debian's ``chromium`` and Playwright (the test command's
browser test uses the same); run ``.venv/bin/python docs/img/make_view.py``.
"""
import io
import os
import time

import numpy as np

import liemb_ros as lm
from liemb_ros.core import resources
from liemb_ros.view import RobotView

CHROMIUM = '/usr/bin/chromium'
ARGS = ['--headless', '--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader']
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'liemb_view.png')


def main():
    """Serve the view on a free loopback port, photograph it, save a small PNG."""
    from PIL import Image
    from playwright.sync_api import sync_playwright

    xml, path = resources.read_robot_description('liemb_arm7')
    model = lm.load_urdf_string(xml, source=path)
    q = np.array([-0.9, 0.7, 0.0, -1.3, 0.3, 0.9, 0.0])[:model.nq]
    qd = np.array([0.4, -0.3, 0.2, 0.5, 0.0, 0.3, 0.0])[:model.nv]
    view = RobotView(model, xml, port=0)
    try:
        tool = lm.link_pose(model, q, 'tool0')[:3, 3]
        view.server.initial_camera.look_at = 0.5 * tool
        view.server.initial_camera.position = 0.5 * tool + np.array([1.1, 0.9, 0.45])
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                page = browser.new_page(viewport={'width': 1100, 'height': 620})
                page.goto(view.url)
                page.wait_for_selector('canvas', timeout=30000)
                page.wait_for_function("document.body.innerText.includes('in a limit')",
                                       timeout=30000)
                view.update(q, qd)
                page.add_style_tag(content='.mantine-Notifications-root {display: none}')
                time.sleep(2.0)
                png = page.screenshot(clip={'x': 0, 'y': 0, 'width': 1100, 'height': 440})
            finally:
                browser.close()
    finally:
        view.close()
    img = Image.open(io.BytesIO(png)).convert('RGB')
    img = img.resize((img.width * 3 // 4, img.height * 3 // 4), Image.LANCZOS)
    img.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(OUT, optimize=True)
    print(f'{OUT}: {os.path.getsize(OUT)} bytes')


if __name__ == '__main__':
    main()
