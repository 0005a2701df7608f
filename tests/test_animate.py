"""natcoord.viz.animate: the drawn bars and frames follow the simulated bodies and joints."""
import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import natcoord as nc  # noqa: E402
from natcoord.viz.animate import animate  # noqa: E402
from natcoord.models.six_bar import RODS  # noqa: E402

RODS_DRAWN = [(f"rod{k + 1}", start, end) for k, (start, end, _) in enumerate(RODS)]


@pytest.fixture(scope="module")
def sol():
    return nc.simulate(nc.models.six_bar().build(), 1.0, rtol=1e-8,
                       t_eval=np.linspace(0.0, 1.0, 11))


def frames(anim, count):
    """The segment end points (lines, 2, 3) of each frame."""
    anim._init_draw()
    for k in range(count):
        anim._func(k)
        yield [np.array(line.get_data_3d()).T for line in anim._fig.axes[0].lines]


def test_bars_stay_jointed_between_outputs(sol):
    """Adjacent rods meet at their revolute joints in every (interpolated) frame."""
    for ends in frames(animate(sol, RODS_DRAWN, frames=7), 7):
        for a, b in zip(ends, ends[1:]):
            np.testing.assert_allclose(a[1], b[0], atol=1e-9)        # rod end = next start
        np.testing.assert_allclose(ends[0][0], 0.0, atol=1e-9)       # joint 1 on ground
        np.testing.assert_allclose(ends[4][1], (0, 0, 1), atol=1e-9)  # joint 6 on ground
    np.testing.assert_allclose(ends[1][1], sol.point("rod2", (1, -1, 0))[-1], atol=1e-12)


def test_body_frames_are_orthonormal_at_outputs(sol):
    """A body drawn as its frame shows three orthonormal axes of the given length."""
    for lines in frames(animate(sol, ["rod3"], frames=11, frame_length=0.3), 11):
        d = np.array([axis[1] - axis[0] for axis in lines]) / 0.3
        np.testing.assert_allclose(d @ d.T, np.eye(3), atol=1e-9)
        assert np.linalg.det(d) == pytest.approx(1.0)


def test_ground_is_drawn_fixed_where_the_rods_are_pinned(sol):
    """``ground=``: anchors drawn once and never moved; the pinned rod ends stay on them."""
    ground = np.array([(0.0, 0.0, 0.0), (0.0, 0.0, 1.0)])
    anim = animate(sol, RODS_DRAWN, frames=5, ground=ground)
    assert anim._fig.get_size_inches()[0] >= 7                   # the larger default figure
    for lines in frames(anim, 5):
        anchors, bars = lines[1], lines[2:]                      # [link, anchors, rods...]
        np.testing.assert_allclose(anchors, ground)
        np.testing.assert_allclose(bars[0][0], ground[0], atol=1e-9)
        np.testing.assert_allclose(bars[4][1], ground[1], atol=1e-9)
