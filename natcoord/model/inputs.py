"""Declared joint inputs: the torque (or force) laws of actuated joints
(``Mechanism.add_input``, the ``inputs`` of model files; docs/model-format.md#inputs).

An input drives one joint with one DOF (revolute: a torque about its axis, N·m;
prismatic: a force along it, N) by a law of time and of the joint's own state:

* a **time function** ``τ(t)``: a :class:`~natcoord.model.drives.Drive`, whose
  ``s(t)`` is the torque — the declarative drive laws (constant rate,
  polynomial, spline, sinusoid, Fourier) evaluated by the same code of the
  core as a drive's, and stored by model files the same way;
* a **PD law** (:class:`PD`) ``τ = kp (q_ref(t) − q) − kd q̇``, the
  target ``q_ref`` again a drive law: joint-space tracking.

``nc.simulate`` applies a model's inputs unless it is given ``u=`` or
``inputs=False``; they are joint torques in the sense of
:class:`natcoord.dynamics.joint_space.JointTorques`, which applies them
(and which ``u(t, q, qd)`` uses too).
"""
from __future__ import annotations

import numpy as np

from ..util.checks import number, shown
from .drives import Drive


class PD:
    """Joint-space PD law ``τ = kp (q_ref(t) − q) − kd q̇`` with a target ``q_ref(t)``.

    ``kp`` (N·m/rad or N/m) and ``kd`` (N·m·s/rad or N·s/m) are non-negative;
    ``target`` is a :class:`~natcoord.model.drives.Drive` (its ``s(t)``; or what
    ``Drive`` takes: a callable returning ``(s, ṡ, s̈)``) or a number (a
    constant target). The damping acts on ``q̇`` alone, not on the
    rate error: a set-point regulator, which lags a moving target by about
    ``kd q̇_ref / kp``. For an angle the error ``q_ref − q`` is taken within
    (−π, π], as the joint spring's deflection (the natural coordinates hold no
    winding number).
    """

    def __init__(self, kp, kd, target):
        where = "PD input"
        self.kp = number(kp, "kp", where, "non-negative")
        self.kd = number(kd, "kd", where, "non-negative")
        if isinstance(target, Drive) or callable(target) or isinstance(target, tuple):
            target = Drive.coerce(target, f"{where}: target")
        else:
            target = Drive.polynomial([number(target, "target", where)])
        self.target = target

    @property
    def spec(self):
        """The model file's ``{"type": "pd", "kp", "kd", "target"}``, or None when the
        target is a Python callable (a file stores declarative laws only)."""
        target = getattr(self.target, "spec", None)
        return None if target is None else {"type": "pd", "kp": self.kp, "kd": self.kd,
                                            "target": dict(target)}

    def __call__(self, t, q, qd, angle=False):
        error = self.target(t)[0] - q
        if angle:
            error = np.pi - (np.pi - error) % (2.0 * np.pi)     # within (−π, π]
        return self.kp * error - self.kd * qd


def torque_law(law, where):
    """``law`` checked as an input's torque law: a :class:`PD`, a
    :class:`~natcoord.model.drives.Drive` (``τ = s(t)``), a number (a constant
    torque), or a model file's ``{"type": …}`` of either; else ``ValueError``
    naming ``where``."""
    if isinstance(law, dict):
        try:
            if law.get("type") == "pd":
                parameters = {k: v for k, v in law.items() if k != "type"}
                if isinstance(parameters.get("target"), dict):
                    parameters["target"] = Drive.from_spec(parameters["target"])
                law = PD(**parameters)
            else:
                law = Drive.from_spec(law)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: torque {shown(law)}: {err}") from None
    if isinstance(law, PD):
        return PD(law.kp, law.kd, Drive.coerce(law.target, f"{where}: target"))
    if isinstance(law, Drive):
        return Drive.coerce(law, where)
    if isinstance(law, (int, float, np.number)) and not isinstance(law, bool):
        return Drive.polynomial([number(law, "torque", where)])
    raise ValueError(f"{where}: torque must be a number, a Drive (its s(t) is the torque: "
                     f"Drive.sinusoid, Drive.polynomial, …) or a PD(kp, kd, target), got "
                     f"{shown(law)}; for a torque of the whole state pass "
                     f"nc.simulate(..., u=u(t, q, qd))")


class JointInput:
    """The input of one joint: ``joint`` (its name) and ``law`` (a :class:`PD` or a
    :class:`~natcoord.model.drives.Drive`); :meth:`torque` evaluates it."""

    def __init__(self, joint, law):
        self.joint, self.law = joint, law

    def torque(self, t, q, qd, angle=False):
        """The torque at time t for the joint's coordinate ``q`` and rate ``qd``
        (``angle``: q is an angle, whose PD error is taken within (−π, π])."""
        if isinstance(self.law, PD):
            return self.law(t, q, qd, angle)
        return self.law(t)[0]

    def __repr__(self):
        spec = getattr(self.law, "spec", None)
        return f"JointInput({self.joint!r}, {spec if spec is not None else 'a Python law'})"
