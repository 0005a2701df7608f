"""Rheonomic drives: g_t and γ against finite differences in t, drive forces
against closed forms, drive power against the change of mechanical energy."""
import numpy as np
import pytest
from scipy.integrate import cumulative_simpson
from scipy.interpolate import CubicSpline

import natcoord as nc
from natcoord.integrate.stepper import DOPRI5
from natcoord.model.body import box_inertia

MASS, SIZE = 2.0, (0.4, 0.1, 0.2)
GRAVITY = np.array([0.0, -9.81, 0.0])


def _angle(t):
    return 0.5 * np.cos(3 * t), -1.5 * np.sin(3 * t), -4.5 * np.cos(3 * t)


def _slide(t):
    return 0.3 * np.sin(2 * t) + 0.1 * t**2, 0.6 * np.cos(2 * t) + 0.2 * t, \
        -1.2 * np.sin(2 * t) + 0.2


def two_drives(hinge=_angle, rail=_slide):
    """Ground –(driven revolute)– arm –(driven prismatic, oblique axis)– slider."""
    mech = nc.Mechanism(gravity=GRAVITY)
    mech.add_body("arm", MASS, com=(0.2, 0, 0), inertia=box_inertia(MASS, SIZE))
    mech.add_body("slider", MASS, com=(0.4, 0.1, 0), inertia=box_inertia(MASS, SIZE),
                  origin=(0.4, 0.1, 0))
    mech.add_revolute(nc.GROUND, "arm", point=(0, 0, 0), axis=(0, 0.6, 0.8), drive=hinge,
                      name="hinge")
    mech.add_prismatic("arm", "slider", point=(0.4, 0.1, 0), axis=(1, 1, 0), drive=rail,
                       name="rail")
    return mech.build()


def test_time_derivatives_match_finite_differences():
    """Along p(τ) = p + v τ + a τ²/2: d/dτ g = G v + g_t and d²/dτ² g = G a − γ."""
    model = two_drives()
    rng = np.random.default_rng(1)
    p = model.p_reference + 0.1 * rng.standard_normal(model.n_coords)
    v, a = rng.standard_normal((2, model.n_coords))
    t, h = 0.7, 1e-3
    ws = nc.Workspace(model)

    def g(tau):
        ws.constraints(t + tau, p + v * tau + 0.5 * a * tau**2, v + a * tau)
        return ws.g.copy()

    g_minus, g_plus = g(-h), g(h)
    g0 = g(0.0)
    G = model.tables.csr(ws.G)
    first = (g_plus - g_minus) / (2 * h)
    second = (g_plus - 2 * g0 + g_minus) / h**2
    assert np.abs(first - (G @ v + ws.g_t)).max() < 1e-5
    assert np.abs(second - (G @ a - ws.gamma)).max() < 1e-5
    # the FD check above must see the drives: their rows carry g_t ≠ 0
    assert np.count_nonzero(ws.g_t) == 2


def test_the_core_s_checks_evaluate_the_drives_rates():
    """The projection and the checks of the core evaluate g, g_t and G without γ
    (which only the right-hand side needs): at a state off the manifold, the G v + g_t
    that ``observe`` leaves in the core's buffers is the central difference of g along
    (v, 1), and its g is the Workspace's (the full evaluation)."""
    model = two_drives()
    rng = np.random.default_rng(2)
    p = model.p_reference + 0.1 * rng.standard_normal(model.n_coords)
    v = rng.standard_normal(model.n_coords)
    t, h = 0.7, 1e-3
    stepper = DOPRI5(model, t_bound=1.0)
    stepper.observe(t, np.concatenate([p, v]))
    ws = nc.Workspace(model)
    ws.constraints(t + h, p + h * v, v)
    ahead = ws.g.copy()
    ws.constraints(t - h, p - h * v, v)
    rate = (ahead - ws.g) / (2 * h)
    assert np.abs(stepper._S.Gv - rate).max() < 1e-5
    ws.constraints(t, p, v)
    np.testing.assert_array_equal(stepper._S.g, ws.g)
    assert np.count_nonzero(ws.g_t) == 2


def test_compiled_laws_take_the_steps_of_python_callables():
    """Declarative drives are laws the compiled stepper evaluates itself, many
    steps per call; the same drives behind Python callables are called back from
    the core at every stage time. Same steps, same states."""
    hinge = nc.Drive.sinusoid(0.5, 0.5, phase=1.2, offset=0.1)
    rail = nc.Drive.spline(np.linspace(0, 2, 9), 0.2 * np.sin(np.linspace(0, 2, 9)))
    compiled = nc.simulate(two_drives(hinge, rail), 2.0, rtol=1e-9)
    python = nc.simulate(two_drives(lambda t: hinge(t), lambda t: rail(t)), 2.0, rtol=1e-9)
    assert two_drives(hinge, rail).tables.laws is not None
    assert two_drives(lambda t: hinge(t), rail).tables.laws is None
    assert compiled.success and python.success and compiled.stats["steps"] > 20
    assert np.array_equal(compiled.t, python.t)
    assert np.abs(compiled.p - python.p).max() <= 1e-12
    assert np.abs(compiled.v - python.v).max() <= 1e-11


def test_declarative_drives_are_their_closed_forms():
    """Each law against its formula, at times inside and outside its samples."""
    t = np.array([-0.3, 0.0, 0.41, 1.7, 2.5])
    w = 2 * np.pi * 0.5
    cases = [(nc.Drive.constant_rate(0.3, start=0.1), (0.1 + 0.3 * t, 0.3 + 0 * t, 0 * t)),
             (nc.Drive.polynomial([1, -2, 0.5, 0.25]),
              (1 - 2 * t + 0.5 * t**2 + 0.25 * t**3, -2 + t + 0.75 * t**2, 1 + 1.5 * t)),
             (nc.Drive.sinusoid(0.2, 0.5, phase=0.3, offset=-1),
              (-1 + 0.2 * np.sin(w * t + 0.3), 0.2 * w * np.cos(w * t + 0.3),
               -0.2 * w**2 * np.sin(w * t + 0.3))),
             (nc.Drive.fourier(0.5, [0.1, 0.0, 0.3], [0.2, 0.0]),
              (0.1 + 0.2 * np.sin(w * t) + 0.3 * np.cos(2 * w * t),
               0.2 * w * np.cos(w * t) - 0.6 * w * np.sin(2 * w * t),
               -0.2 * w**2 * np.sin(w * t) - 1.2 * w**2 * np.cos(2 * w * t)))]
    knots = np.linspace(0.0, 2.0, 7)
    spline = CubicSpline(knots, np.cos(knots))
    cases.append((nc.Drive.spline(knots, np.cos(knots)), (spline(t), spline(t, 1), spline(t, 2))))
    for drive, expected in cases:
        got = np.array([drive(ti) for ti in t]).T
        assert np.allclose(got, expected, rtol=1e-13, atol=1e-13), drive.spec


def slider_on_incline(drive):
    """A box on a prismatic joint to ground along an oblique axis u, driven by s(t)."""
    mech = nc.Mechanism(gravity=GRAVITY)
    mech.add_body("box", MASS, com=(0.1, 0.2, 0.3), inertia=box_inertia(MASS, SIZE))
    mech.add_prismatic(nc.GROUND, "box", point=(0, 0, 0), axis=AXIS, drive=drive, name="slide")
    return mech.build()


AXIS = np.array([1.0, 2.0, 2.0]) / 3.0
AMPLITUDE, OMEGA = 0.2, 2 * np.pi


def _sine(t):
    return (AMPLITUDE * np.sin(OMEGA * t), AMPLITUDE * OMEGA * np.cos(OMEGA * t),
            -AMPLITUDE * OMEGA**2 * np.sin(OMEGA * t))


def _run(model, t_end=1.0, points=201):
    t = np.linspace(0.0, t_end, points)
    return nc.simulate(model, t_end, rtol=1e-9, proj_tol=1e-11, t_eval=t, multipliers=True)


@pytest.mark.parametrize("drive", [
    _sine,                                                # one callable -> (s, s', s'')
    tuple(lambda t, k=k: _sine(t)[k] for k in range(3)),  # three callables
    nc.Drive(_sine)])
def test_prismatic_drive_force_closed_form(drive):
    """m s̈ = F + m g·u along the axis, so F = m (s̈ − g·u); the box follows s(t)."""
    sol = _run(slider_on_incline(drive))
    s, _, s_ddot = _sine(sol.t)
    travelled = (sol.point("box", (0, 0, 0)) @ AXIS)
    assert np.abs(travelled - s).max() < 1e-10
    expected = MASS * (s_ddot - GRAVITY @ AXIS)
    assert np.abs(sol.drive_force("slide") - expected).max() < 1e-8 * np.abs(expected).max()


def test_spline_drive_matches_sampled_motion():
    """``Drive.spline`` of samples of A sin ωt: a C² cubic spline, so the force
    error is that of the spline's second derivative, O(h²)."""
    samples = np.linspace(0.0, 1.0, 401)
    sol = _run(slider_on_incline(nc.Drive.spline(samples, _sine(samples)[0])))
    spline = CubicSpline(samples, _sine(samples)[0])
    assert np.abs(sol.point("box", (0, 0, 0)) @ AXIS - spline(sol.t)).max() < 1e-10
    expected = MASS * (_sine(sol.t)[2] - GRAVITY @ AXIS)
    assert np.abs(sol.drive_force("slide") - expected).max() < 1e-3 * np.abs(expected).max()


PIVOT = np.array([0.1, -0.2, 0.3])
COM = np.array([0.5, 0.1, 0.3])          # not on the axis through PIVOT


def pendulum_on_oblique_axis():
    """A box turned about a fixed oblique axis by θ(t) = θ̂ sin ωt under gravity."""
    mech = nc.Mechanism(gravity=GRAVITY)
    mech.add_body("box", MASS, com=COM, inertia=box_inertia(MASS, SIZE),
                  axes=_rotation(np.array([0, 0, 1.0]), 0.4))
    mech.add_revolute(nc.GROUND, "box", point=PIVOT, axis=AXIS, name="motor",
                      drive=lambda t: (0.8 * np.sin(OMEGA * t), 0.8 * OMEGA * np.cos(OMEGA * t),
                                       -0.8 * OMEGA**2 * np.sin(OMEGA * t)))
    return mech.build()


def _rotation(u, angle):
    K = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def test_revolute_drive_torque_closed_form():
    """About a fixed axis u: (uᵀ I_O u) θ̈ = τ + u·(r_c × m g), r_c from the pivot."""
    model = pendulum_on_oblique_axis()
    sol = _run(model)
    theta = 0.8 * np.sin(OMEGA * sol.t)
    theta_ddot = -OMEGA**2 * theta
    body = model.bodies[0]
    I_c = body.axes @ body.inertia @ body.axes.T              # world axes, reference
    r0 = COM - PIVOT
    I_O = I_c + MASS * (r0 @ r0 * np.eye(3) - np.outer(r0, r0))
    r_c = np.array([_rotation(AXIS, th) @ r0 for th in theta])
    expected = (AXIS @ I_O @ AXIS) * theta_ddot - MASS * np.cross(r_c, GRAVITY) @ AXIS
    assert np.abs(sol.point("box", COM) - PIVOT - r_c).max() < 1e-10
    assert np.abs(sol.drive_force("motor") - expected).max() < 1e-8 * np.abs(expected).max()


@pytest.mark.parametrize("build, joints", [(pendulum_on_oblique_axis, ["motor"]),
                                           (two_drives, ["hinge", "rail"])])
def test_drive_work_equals_energy_change(build, joints):
    """∫ Σ P dt = E(t) − E(0): the drives are the only non-conservative forces."""
    sol = _run(build(), points=401)
    work = cumulative_simpson(sum(sol.drive_power(j) for j in joints), x=sol.t, initial=0.0)
    change = sol.energy - sol.energy[0]
    assert np.abs(work - change).max() < 1e-6 * np.abs(change).max()


def test_drive_force_needs_a_drive_and_multipliers():
    model = two_drives()
    sol = nc.simulate(model, 0.1, t_eval=[0.0, 0.1])
    with pytest.raises(ValueError, match="multipliers=True"):
        sol.drive_force("hinge")
    mech = nc.Mechanism()
    mech.add_body("b", 1.0, com=(0, 0, 0), inertia=box_inertia(1.0, SIZE))
    mech.add_revolute(nc.GROUND, "b", point=(0, 0, 0), axis=(0, 0, 1), name="free")
    sol = nc.simulate(mech.build(), 0.1, t_eval=[0.0, 0.1], multipliers=True)
    with pytest.raises(ValueError, match="has no drive"):
        sol.drive_force("free")


def test_periodic_drive_refuses_what_it_cannot_represent():
    """``Drive.periodic`` checks its interpolant between the samples: a ramp is
    not periodic; a sinusoid of the period is represented to round-off."""
    with pytest.raises(ValueError, match=r"check that s\(t \+ 1\) = s\(t\)"):
        nc.Drive.periodic(lambda t: (t, 1.0, 0.0), period=1.0)
    with pytest.raises(ValueError, match="period must be a positive finite number, got -1.0"):
        nc.Drive.periodic(_sine, period=-1.0)
    drive = nc.Drive.periodic(_sine, period=2 * np.pi / OMEGA)
    for t in (0.1, 0.77, 3.3):
        assert np.allclose(drive(t), _sine(t), rtol=0, atol=1e-12)


def test_drive_parameters_of_callables_are_refused():
    model = two_drives()
    with pytest.raises(KeyError, match="Python callables has no parameters"):
        model.with_parameters({"drive:hinge:amplitude": 1.0})
    with pytest.raises(ValueError, match="drive:rail:coefficients.0"):
        two_drives(rail=nc.Drive.polynomial([0.0, 0.1])).with_parameters(
            {"drive:rail:coefficients.0": np.nan})


@pytest.mark.parametrize("make, match", [
    (lambda: nc.Drive.constant_rate(np.nan), r"Drive.constant_rate: rate must be a finite "
                                             r"number, got nan"),
    (lambda: nc.Drive.constant_rate(1.0, start="abc"), "start must be a finite number, got 'abc'"),
    (lambda: nc.Drive.sinusoid(0.1, -2.0), "Drive.sinusoid: frequency must be a positive"),
    (lambda: nc.Drive.sinusoid(0.1, 0.0), "frequency must be a positive finite number, got 0"),
    (lambda: nc.Drive.sinusoid(np.inf, 1.0), "amplitude must be a finite number, got inf"),
    (lambda: nc.Drive.sinusoid(0.1, 1.0, phase=None), "phase must be a finite number, got None"),
    (lambda: nc.Drive.polynomial("abc"), r"Drive.polynomial: coefficients .* flat list of "
                                         r"finite numbers .*got 'abc'"),
    (lambda: nc.Drive.spline([0, 2, 1], [0, 1, 2]), r"Drive.spline: t must be strictly "
                                                     r"increasing, got \[0, 2, 1\]"),
    (lambda: nc.Drive.spline([0, 1, 2], [0, 1]), "s has 2 samples but t has 3 times"),
    (lambda: nc.Drive.spline([], []), r"t must be a flat list of finite numbers \(at least 2\)"),
    (lambda: nc.Drive.spline([0, 1, 2], [[0, 1], [1, 2], [2, 3]]), "s must be a flat list"),
    (lambda: nc.Drive.spline([0, np.nan, 2], [0, 1, 2]), "t must be a flat list of finite"),
    (lambda: nc.Drive.fourier(-1.0, [0.1, 0.2]), "Drive.fourier: frequency must be a positive"),
    (lambda: nc.Drive.fourier("abc", [0.1]), "frequency must be a positive finite number, "
                                             "got 'abc'"),
    (lambda: nc.Drive.fourier(1.0, []), r"cosines \(a_0, a_1, …\) must be a flat list of "
                                        r"finite numbers \(at least 1\)"),
    (lambda: nc.Drive.fourier(1.0, [[0.1, 0.2]]), r"cosines .* must be a flat list"),
    (lambda: nc.Drive.fourier(1.0, [0.1], [np.nan]), r"sines \(b_1, b_2, …\) must be a flat "
                                                     r"list of finite numbers, got \[nan\]"),
    (lambda: nc.Drive(3.0), r"Drive needs s\(t\), s'\(t\) and s''\(t\).*got 3.0, None, None"),
    (lambda: nc.Drive(1, 2, 3), "pass all three callables.*got 1, 2, 3"),
])
def test_bad_declarative_drives_are_refused_naming_the_argument(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(f=3.0), TypeError, r"Drive.periodic: f must be a callable returning \(s, ṡ, s̈\), "
                             r"got 3.0"),
    (dict(period=0.0), ValueError, "Drive.periodic: period must be a positive finite number"),
    (dict(period="abc"), ValueError, "period must be a positive finite number, got 'abc'"),
    (dict(samples=3), ValueError, "Drive.periodic: samples must be at least 4, got 3"),
    (dict(samples=32.5), TypeError, "Drive.periodic: samples must be an integer, got 32.5"),
    (dict(samples=True), TypeError, "samples must be an integer, got True"),
    (dict(tol=-1.0), ValueError, "Drive.periodic: tol must be a positive finite number"),
    (dict(tol=np.nan), ValueError, "tol must be a positive finite number, got nan"),
    (dict(f=lambda t: _sine(t)[0]), ValueError, r"Drive.periodic: f must return 3 numbers, "
                                                r"got .* at t = 0; a drive returns the triple"),
    (dict(f=lambda t: (np.nan, 0.0, 0.0)), ValueError, r"Drive.periodic: f returned "
                                                      r"\(nan, 0.0, 0.0\) at t = 0; it must "
                                                      r"be finite"),
])
def test_bad_periodic_arguments_are_refused_naming_them(kwargs, error, match):
    arguments = dict(f=_sine, period=2 * np.pi / OMEGA) | kwargs
    with pytest.raises(error, match=match):
        nc.Drive.periodic(**arguments)


def _ramp(t):
    return t, 1.0, 0.0


def test_a_non_periodic_function_is_refused_naming_it_and_the_tolerance():
    with pytest.raises(ValueError, match=r"Drive.periodic: the Fourier interpolant of _ramp "
                                         r"on 16 samples misses .* more than tol = 1e-06; use "
                                         r"more samples, or check that s\(t \+ 2\) = s\(t\)"):
        nc.Drive.periodic(_ramp, period=2.0, samples=16, tol=1e-6)


@pytest.mark.parametrize("spec, match", [
    ({"type": "fourier", "frequency": 1.0}, r"fourier drive: .*'cosines'; its keys: "
                                            r"\['frequency', 'cosines', 'sines'\]"),
    ({"type": "fourier", "frequency": 1.0, "cosines": [1.0], "phase": 0.0},
     r"unexpected keyword argument 'phase'; its keys: \['frequency', 'cosines', 'sines'\]"),
    ({"type": "fourier", "frequency": "x", "cosines": [1.0]}, "Drive.fourier: frequency must "
                                                              "be a positive finite number"),
    ({"type": "fourier", "frequency": 1.0, "cosines": {"a": 1}}, "cosines .* flat list"),
])
def test_bad_drive_specs_name_the_key(spec, match):
    with pytest.raises(ValueError, match=match):
        nc.Drive.from_spec(spec)


def test_bad_drive_parameter_values_and_undriven_joints_are_named():
    model = two_drives(nc.Drive.sinusoid(0.5, 0.7), None)
    with pytest.raises(ValueError, match=r"revolute joint 'hinge': parameter 'frequency' = "
                                         r"-1.0: Drive.sinusoid: frequency must be a positive"):
        model.with_parameters({"drive:hinge:frequency": -1.0})
    with pytest.raises(KeyError, match=r"joint 'rail' has no drive; use drive:<joint>:"
                                       r"<parameter> with a driven joint of \['hinge'\]"):
        model.with_parameters({"drive:rail:coefficients.0": 1.0})
