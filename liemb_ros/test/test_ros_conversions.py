"""
Text from messages quoted in logs and diagnostics (``liemb_ros.ros.conversions.shown``):
bounded whatever arrives, one line, and the short names a user reads unchanged.
"""
import pytest
from hypothesis import given, strategies as st

pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is not installed')
from liemb_ros.ros.conversions import SHOWN_CHARS, shown  # noqa: E402


def test_short_text_is_its_repr():
    assert shown('tool0') == "'tool0'"
    assert shown('') == "''"


def test_a_megabyte_frame_id_is_cut_with_its_length():
    text = 'a' * 500 + 'b' * (2**20 - 1000) + 'z' * 500
    out = shown(text)
    assert len(out) < 2 * SHOWN_CHARS
    assert out.startswith("'aaaa") and "zzzz'" in out
    assert out.endswith(f'({2**20} chars)')


@given(st.text(max_size=5000))
def test_any_text_gives_one_bounded_line(text):
    out = shown(text, limit=50)
    assert '\n' not in out and '\r' not in out
    assert len(out) <= 10 * 50 + 30
