"""Joint inputs declared in the model (``Mechanism.add_input``, a model file's
``inputs``; issue 23, item 5): torque laws of time and joint-space PD laws,
applied by ``nc.simulate`` and by ``natcoord simulate FILE``.

Checked against what does not share their code: the closed form of the damped
linear oscillator (a PD law on a rotor), the closed form of a cart pushed by a
polynomial force, a PD law written by hand as ``simulate(u=...)``, and
``nc.inverse_dynamics`` of the motion a torque law produces.
"""
import copy
import json

import numpy as np
import pytest

import natcoord as nc
from natcoord.cli import main
from natcoord.io.modelfile import from_dict, to_dict
from natcoord.model.body import rod_inertia

I_AXIS = 0.1        # rotor's moment of inertia about its axis [kg m²]


def rotor_file(torque, gravity=(0.0, 0.0, 0.0)):
    """A model file: a disc turning about the z axis through its centre of mass
    (so gravity, if any, does no work on it), ``torque`` the input on the hinge."""
    return {
        "format": "natcoord-mechanism", "format_version": 1, "name": "rotor",
        "gravity": list(gravity),
        "bodies": [{"name": "disc", "mass": 1.0, "com": [0, 0, 0],
                    "inertia": [[0.06, 0, 0], [0, 0.06, 0], [0, 0, I_AXIS]]}],
        "joints": [{"type": "revolute", "name": "hinge", "a": "ground", "b": "disc",
                    "point": [0, 0, 0], "axis": [0, 0, 1]}],
        "inputs": [{"joint": "hinge", "torque": torque}],
        "scenario": {"t_end": 10.0},
    }


def pd(kp, kd, target):
    return {"type": "pd", "kp": kp, "kd": kd, "target": target}


def constant(value):
    return {"type": "polynomial", "coefficients": [value]}


def pendulum(torque=None):
    """A rod hanging from a hinge about z under gravity −y; ``torque`` its input."""
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0), name="pendulum")
    mech.add_body("rod", 1.0, com=(0.0, -0.5, 0.0), inertia=rod_inertia(1.0, 1.0, 0.02, axis=1))
    mech.add_revolute(nc.GROUND, "rod", point=(0, 0, 0), axis=(0, 0, 1), name="hinge")
    if torque is not None:
        mech.add_input("hinge", torque)
    return mech


# ------------------------------------------------------------------ physics
@pytest.mark.parametrize("method", ["dopri5", "radau"])
def test_pd_input_reaches_its_target_as_the_damped_oscillator(method):
    """I θ̈ = kp (θ_ref − θ) − kd θ̇ from rest: the underdamped oscillator's closed form
    θ = θ_ref (1 − e^{−ζω₀t} (cos ω_d t + ζω₀/ω_d sin ω_d t)), exact for the rotor
    (no gravity torque, no small-angle approximation); it settles on the target. Either
    integrator applies the declared input."""
    kp, kd, target = 2.0, 0.2, 0.5
    model = from_dict(rotor_file(pd(kp, kd, constant(target)))).build()
    t = np.linspace(0.0, 10.0, 101)
    sol = nc.simulate(model, 10.0, rtol=1e-10, t_eval=t, method=method)
    w0, zeta = np.sqrt(kp / I_AXIS), kd / (2.0 * np.sqrt(kp * I_AXIS))
    wd = w0 * np.sqrt(1.0 - zeta**2)
    expected = target * (1.0 - np.exp(-zeta * w0 * t)
                         * (np.cos(wd * t) + zeta * w0 / wd * np.sin(wd * t)))
    assert sol.success
    assert np.abs(sol.q[:, 0] - expected).max() <= 1e-8
    assert abs(sol.q[-1, 0] - target) <= 1e-4 * target          # reached: e^{−10}
    assert list(sol.q_names) == ["hinge"]


def test_pd_input_equals_the_same_law_written_as_u():
    """A PD law tracking a sinusoid on a pendulum under gravity equals the run with the
    law written by hand as ``simulate(u=...)`` — and differs from the passive run."""
    kp, kd = 30.0, 2.0
    model = pendulum(nc.PD(kp, kd, nc.Drive.sinusoid(0.4, 0.5, phase=0.3))).build()
    t = np.linspace(0.0, 3.0, 31)
    declared = nc.simulate(model, 3.0, rtol=1e-10, t_eval=t)

    def u(time, q, qd):
        return [kp * (0.4 * np.sin(2 * np.pi * 0.5 * time + 0.3) - q[0]) - kd * qd[0]]
    by_hand = nc.simulate(model, 3.0, rtol=1e-10, t_eval=t, u=u)
    assert np.abs(declared.q - by_hand.q).max() <= 1e-9
    assert np.abs(declared.qd - by_hand.qd).max() <= 1e-8
    passive = nc.simulate(model, 3.0, rtol=1e-10, t_eval=t, inputs=False)
    assert np.abs(passive.q).max() <= 1e-12 < np.abs(declared.q).max() - 0.1
    # an explicit u replaces the declared inputs: no torque, the pendulum hangs still
    held = nc.simulate(model, 3.0, rtol=1e-10, t_eval=t, u=lambda time, q, qd: [0.0])
    assert np.abs(held.q).max() <= 1e-12


def test_pd_error_of_an_angle_is_taken_within_half_a_turn():
    """A target 0.1 rad past −π, seen from θ = 3.0: the error goes the short way across
    the seam at ±π, θ_ref − θ + 2π = 0.1 − π − 3.0 + 2π, not the long way round."""
    model = pendulum(nc.PD(1.0, 0.0, -np.pi + 0.1)).build()
    js = nc.joint_space(model)
    state = nc.joint_state(model, [3.0])
    tau = nc.dynamics.joint_space.JointTorques.of_inputs(model).torques(
        0.0, js.positions(state.p), js.velocities(state.p, state.v))
    assert tau[0] == pytest.approx(0.1 - np.pi - 3.0 + 2 * np.pi, abs=1e-12)


def test_torque_law_against_inverse_dynamics():
    """A sinusoidal torque law on the pendulum: along the run, inverse dynamics of
    (q, q̇, q̈) — q̈ by fourth-order central differences of the recorded q̇ — gives the
    law's τ(t)."""
    law = nc.Drive.sinusoid(2.0, 0.7, offset=0.5)
    model = pendulum(law).build()
    h = 5e-3
    t = np.arange(0.0, 2.0 + h / 2, h)
    sol = nc.simulate(model, 2.0, rtol=1e-12, atol=1e-12, t_eval=t)
    qd = sol.qd[:, 0]
    qdd = (qd[:-4] - 8 * qd[1:-3] + 8 * qd[3:-1] - qd[4:]) / (12 * h)
    tau = np.array([nc.inverse_dynamics(model, q, v, [a])[0]
                    for q, v, a in zip(sol.q[2:-2], sol.qd[2:-2], qdd)])
    expected = np.array([law(ti)[0] for ti in t[2:-2]])
    assert np.abs(tau - expected).max() <= 1e-6 * np.abs(expected).max()
    # sol.qdd (post hoc accelerations) includes the torques the run applied
    assert np.abs(sol.qdd[2:-2, 0] - qdd).max() <= 1e-6 * np.abs(qdd).max()
    tau = [nc.inverse_dynamics(model, q, v, a)[0] for q, v, a in zip(sol.q, sol.qd, sol.qdd)]
    assert np.abs(tau - law_values(law, t)).max() <= 1e-10 * np.abs(expected).max()


def law_values(law, t):
    return np.array([law(ti)[0] for ti in t])


def test_force_law_on_a_prismatic_joint_is_newtons_law():
    """A cart of mass m on a rail pushed by F(t) = c₀ + c₁ t: x = c₀t²/2m + c₁t³/6m."""
    m, c0, c1 = 2.0, 1.5, -0.6
    mech = nc.Mechanism(name="cart")
    mech.add_body("cart", m, com=(0, 0, 0), inertia=nc.box_inertia(m, (0.4, 0.2, 0.2)))
    mech.add_prismatic(nc.GROUND, "cart", point=(0, 0, 0), axis=(1, 0, 0), name="rail")
    mech.add_input("rail", nc.Drive.polynomial([c0, c1]))
    t = np.linspace(0.0, 2.0, 11)
    sol = nc.simulate(mech.build(), 2.0, rtol=1e-10, t_eval=t)
    assert np.abs(sol.q[:, 0] - (c0 * t**2 / (2 * m) + c1 * t**3 / (6 * m))).max() <= 1e-10


# ------------------------------------------------------------------ files
def test_round_trip_keeps_the_inputs(tmp_path):
    """save → load gives the same file and the same run, JSON and YAML; a PD law
    built in Python from a callable target is stored as a spline only on request."""
    mech = pendulum(nc.PD(30.0, 2.0, nc.Drive.spline([0, 1, 2, 3], [0, 0.3, 0.1, 0.2])))
    data = to_dict(mech)
    assert data["inputs"] == [{"joint": "hinge", "torque": {
        "type": "pd", "kp": 30.0, "kd": 2.0,
        "target": {"type": "spline", "t": [0.0, 1.0, 2.0, 3.0], "s": [0.0, 0.3, 0.1, 0.2]}}}]
    t = np.linspace(0.0, 2.0, 5)
    run = nc.simulate(mech.build(), 2.0, t_eval=t)
    for name in ("pendulum.json", "pendulum.yaml"):
        nc.save_mechanism(mech, tmp_path / name)
        loaded = nc.load_mechanism(tmp_path / name)
        assert to_dict(loaded) == data
        again = nc.simulate(loaded.build(), 2.0, t_eval=t)
        assert np.array_equal(again.p, run.p)
    callable_target = pendulum(nc.PD(1.0, 0.1, nc.Drive(lambda t: (0.1 * t, 0.1, 0.0))))
    with pytest.raises(ValueError, match=r"input on joint 'hinge': target.*sample_drives"):
        to_dict(callable_target)
    sampled = to_dict(callable_target, sample_drives=0.5)["inputs"][0]["torque"]["target"]
    assert sampled["type"] == "spline" and sampled["s"][2] == pytest.approx(0.1)


BAD_INPUTS = [
    ({"torque": constant(1.0)}, r"inputs/0: 'joint' is a required property"),
    ({"joint": "hinge"}, r"inputs/0: 'torque' is a required property"),
    ({"joint": "hinge", "torque": constant(1.0), "gain": 2},
     r"inputs/0: Additional properties .*'gain'"),
    ({"joint": "hinge", "torque": 1.0}, r"inputs/0/torque: 1.0 is not of type 'object'"),
    ({"joint": "hinge", "torque": {"type": "pd", "kp": 1.0, "kd": 0.1}},
     r"inputs/0/torque: 'target' is a required property"),
    ({"joint": "hinge", "torque": pd(1.0, -0.1, constant(0.0))},
     r"inputs/0/torque/kd: -0.1 is less than the minimum of 0"),
    ({"joint": "hinge", "torque": pd(1.0, 0.1, {"type": "sinusoid", "amplitude": 1})},
     r"inputs/0/torque/target: 'frequency' is a required property"),
    ({"joint": "hinge", "torque": {"type": "step", "at": 1.0}},
     r"inputs/0/torque: .* is not valid under any of the given schemas \('type' must be one "
     r"of \['constant_rate', 'sinusoid', 'polynomial', 'spline', 'fourier', 'pd'\]\)"),
    ({"joint": "elbow", "torque": constant(1.0)},
     r"inputs\[0\] \(joint 'elbow'\): input on joint 'elbow': unknown joint 'elbow'; "
     r"joints: \['hinge'\]"),
]


@pytest.mark.parametrize("entry, message", BAD_INPUTS)
def test_bad_inputs_are_refused_naming_the_entry(entry, message):
    data = rotor_file(constant(1.0))
    data["inputs"] = [entry]
    with pytest.raises(ValueError, match=message):
        from_dict(data, source="rotor.json")


def test_inputs_the_builder_refuses():
    """One input per one-DOF joint that moves freely: not on a spherical joint, not on
    a driven one, not twice on one joint, and a law that is a law."""
    mech = pendulum(0.1)
    with pytest.raises(ValueError, match=r"input on joint 'hinge': the joint has an input "
                                         r"already"):
        mech.add_input("hinge", 0.2)
    mech.add_body("bob", 1.0, com=(0, -1.2, 0), inertia=np.diag([0.01] * 3),
                  origin=(0, -1.2, 0))
    mech.add_spherical("rod", "bob", point=(0, -1, 0), name="ball")
    with pytest.raises(ValueError, match=r"input on joint 'ball': a spherical joint; an "
                                         r"input actuates a joint with one DOF.*u=u\(t, q, qd\)"):
        mech.add_input("ball", 0.1)
    driven = nc.Mechanism()
    driven.add_body("rod", 1.0, com=(0.5, 0, 0), inertia=rod_inertia(1.0, 1.0, 0.02))
    driven.add_revolute(nc.GROUND, "rod", (0, 0, 0), (0, 0, 1), name="motor",
                        drive=nc.Drive.constant_rate(1.0))
    with pytest.raises(ValueError, match=r"input on joint 'motor': the joint is driven"):
        driven.add_input("motor", 1.0)
    with pytest.raises(ValueError, match=r"torque must be a number, a Drive .* or a "
                                         r"PD\(kp, kd, target\), got 'strong'"):
        pendulum().add_input("hinge", "strong")


def test_an_input_on_a_loop_closing_joint_is_refused_at_simulate():
    """A revolute joint that closes a loop has no joint-space column: the run says so."""
    mech = nc.models.four_bar()
    model = mech.build()
    cut = nc.joint_space(model).cut_joints[0]
    mech.add_input(cut, 1.0)
    with pytest.raises(ValueError, match=rf"input on joint '{cut}': .*closes a loop"):
        nc.simulate(mech.build(), 0.1)


# ------------------------------------------------------------------ command line
def test_cli_simulates_a_file_with_its_inputs(tmp_path, capsys):
    """``natcoord simulate FILE`` applies the file's PD input (the same run as the
    Python call); ``--no-inputs`` leaves the rotor at rest."""
    path = tmp_path / "rotor.json"
    path.write_text(json.dumps(rotor_file(pd(2.0, 0.2, constant(0.5)))))
    out = tmp_path / "run.npz"
    assert main(["simulate", str(path), "--t-end", "2", "--quiet", "--outputs", "4",
                 "--out", str(out)]) == 0
    assert "inputs on: hinge" in capsys.readouterr().err
    model = nc.load_mechanism(path).build()
    sol = nc.Solution.load(out, model)
    expected = nc.simulate(model, 2.0, t_eval=np.linspace(0, 2, 5))
    assert np.array_equal(sol.p, expected.p) and sol.q[-1, 0] > 0.3
    assert main(["simulate", str(path), "--t-end", "2", "--quiet", "--outputs", "4",
                 "--out", str(out), "--no-inputs"]) == 0
    assert np.abs(nc.Solution.load(out, model).q).max() == 0.0
    assert copy.deepcopy(sol.settings)["inputs"] is True


def test_saved_solution_keeps_the_accelerations_of_its_inputs(tmp_path):
    """A saved run's accelerations include the torques it applied: loaded with its
    model, the declared inputs are rebuilt (sol.qdd as before saving); a run with
    simulate's ``u`` (a callable no file holds) refuses instead of answering passively."""
    model = pendulum(nc.PD(30.0, 2.0, nc.Drive.sinusoid(0.4, 0.5))).build()
    sol = nc.simulate(model, 1.0, t_eval=np.linspace(0, 1, 5))
    sol.save(tmp_path / "run.npz")
    loaded = nc.Solution.load(tmp_path / "run.npz", model)
    assert loaded.stats["joint_torques"] == {"joints": ["hinge"], "declared": True}
    assert np.array_equal(loaded.qdd, sol.qdd)
    passive = nc.simulate(model, 1.0, t_eval=np.linspace(0, 1, 5), inputs=False)
    assert "joint_torques" not in passive.stats
    manual = nc.simulate(model, 1.0, t_eval=np.linspace(0, 1, 5),
                         u=lambda t, q, qd: [1.0 - qd[0]])
    manual.save(tmp_path / "manual.npz")
    with pytest.raises(ValueError, match=r"joint torques on \['hinge'\].*cannot hold"):
        nc.Solution.load(tmp_path / "manual.npz", model).qdd
