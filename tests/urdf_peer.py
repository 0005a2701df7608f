"""Pinocchio as the URDF importer's peer, shared by tests/test_urdf.py and
tests/test_corpus.py: its ``q`` of joint angles, natcoord's ``q`` of Pinocchio's and
the rate of Pinocchio's ``q`` (a free flyer's quaternion), and the joint damping torque
natcoord models, which Pinocchio reads (``model.damping``) but its ``aba``
leaves out — so the peer's accelerations are ``aba(q, q̇, τ = −c q̇)``.
"""
import numpy as np

#: what the URDF import report may list that Pinocchio's ``aba`` leaves out too
#: (it stores limits and friction as data, builds mimic joints as independent ones
#: without ``mimic=True``, and reads none of the rest): nothing to switch off there
PINOCCHIO_LEAVES_OUT = {
    "contacts", "joint limits", "effort and velocity limits (actuator properties)",
    "friction loss", "safety controllers (soft limits)", "calibration (reference positions)",
    "mimic joints (a coupling of two joint coordinates)", "actuators", "sensors",
    "gazebo extensions", "elements natcoord does not read"}
#: damping the report lists as not modelled: zeroed on Pinocchio's side
UNMODELLED_DAMPING = {"stiffness and damping of DOF without a joint coordinate",
                      "free joint stiffness and damping"}


def pinocchio_q(pm, theta):
    """Pinocchio's q of joint angles/slides ``theta`` (nv,): a continuous joint is
    ``(cos θ, sin θ)`` there."""
    q = np.zeros(pm.nq)
    for joint in list(pm.joints)[1:]:
        if joint.nq == 1:
            q[joint.idx_q] = theta[joint.idx_v]
        else:
            assert (joint.nq, joint.nv) == (2, 1), joint.shortname()
            q[joint.idx_q:joint.idx_q + 2] = np.cos(theta[joint.idx_v]), np.sin(theta[joint.idx_v])
    return q


def natcoord_q(pm, q):
    """natcoord's joint-space q of Pinocchio's ``q``: a continuous joint's angle of its
    ``(cos θ, sin θ)``; a free flyer's ``(x, quaternion xyzw)`` and every other joint's
    coordinates as they are (natcoord's conventions are Pinocchio's for URDF)."""
    out = []
    for joint in list(pm.joints)[1:]:
        value = q[joint.idx_q:joint.idx_q + joint.nq]
        out.extend([np.arctan2(value[1], value[0])] if (joint.nq, joint.nv) == (2, 1)
                   else value)
    return np.array(out)


def pinocchio_rate(pm, q, v):
    """``dq/dt`` of Pinocchio's ``q`` at velocity ``v``: ``v`` for revolute and
    prismatic joints, ``(−sin θ, cos θ) θ̇`` for a continuous joint, and for a free
    flyer (``v`` = linear and angular velocity in its own axes) ``ẋ = R v`` and the
    quaternion rate ``½ q ⊗ (ω, 0)``."""
    out = np.zeros(pm.nq)
    for joint in list(pm.joints)[1:]:
        iq, iv = joint.idx_q, joint.idx_v
        if (joint.nq, joint.nv) == (1, 1):
            out[iq] = v[iv]
        elif (joint.nq, joint.nv) == (2, 1):
            out[iq:iq + 2] = np.array([-q[iq + 1], q[iq]]) * v[iv]
        else:
            assert (joint.nq, joint.nv) == (7, 6), joint.shortname()
            xyz, w = q[iq + 3:iq + 6], q[iq + 6]
            lin, ang = v[iv:iv + 3], v[iv + 3:iv + 6]
            out[iq:iq + 3] = (w * w - xyz @ xyz) * lin + 2 * (xyz @ lin) * xyz \
                + 2 * w * np.cross(xyz, lin)               # R(q) v, Rodrigues' form
            out[iq + 3:iq + 6] = 0.5 * (w * ang + np.cross(xyz, ang))
            out[iq + 6] = -0.5 * (xyz @ ang)
    return out


def damping_torque(pm, report, qd):
    """``τ = −c q̇`` with Pinocchio's ``model.damping`` ``c`` (its own reading of
    ``<dynamics damping>``), zero on the DOF the import report lists as not modelled
    (a model built without an import has an empty report)."""
    not_modelled = report.get("not_modelled", {})
    listed = set(not_modelled)
    unknown = listed - PINOCCHIO_LEAVES_OUT - UNMODELLED_DAMPING
    assert not unknown, f"the test does not know what Pinocchio does with {unknown}"
    c = np.array(pm.damping, float)
    for what in listed & UNMODELLED_DAMPING:
        for name in not_modelled[what]:
            joint = pm.joints[pm.getJointId(name)]
            c[joint.idx_v:joint.idx_v + joint.nv] = 0.0
    return -c * np.asarray(qd, float)
