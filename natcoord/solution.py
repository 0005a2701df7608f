"""The result of a simulation: trajectory, residual and energy histories, statistics."""
from __future__ import annotations

import numpy as np


class Solution:
    """Trajectory at output times, like ``scipy.integrate.solve_ivp``'s result.

    ``t`` (k,), ``p`` and ``v`` (k, 12 n); ``energy`` (k,) mechanical energy
    (kinetic + gravity + springs); ``constraint_residual`` ``‖g‖∞`` and
    ``velocity_residual`` ``‖G v + g_t‖∞`` (k,); ``lam`` (k, m) multipliers
    when requested; ``stats`` counters; ``dropped`` labels of the redundant
    rows dropped at the first output; ``success`` and ``message``.
    """

    def __init__(self, model, records, stats, dropped_rows, success=True, message="ok"):
        self.model = model
        self.t = np.array([r[0] for r in records])
        shape = (len(records), model.n_coords)
        self.p = np.array([r[1] for r in records]).reshape(shape)
        self.v = np.array([r[2] for r in records]).reshape(shape)
        self.energy = np.array([r[3] for r in records])
        self.constraint_residual = np.array([r[4] for r in records])
        self.velocity_residual = np.array([r[5] for r in records])
        lam = [r[6] for r in records]
        self.lam = np.array(lam) if records and lam[0] is not None else None
        self.stats = dict(stats)
        self.dropped_rows = np.asarray(dropped_rows, np.int64)
        self.dropped = [model.row_labels[r] for r in self.dropped_rows]
        self.success = success
        self.message = message

    def __repr__(self):
        return (f"<natcoord.Solution {self.model.name!r}: {self.t.size} outputs, "
                f"t = {self.t[0] if self.t.size else 0:g}..{self.t[-1] if self.t.size else 0:g}, "
                f"{self.stats.get('steps', 0)} steps, {self.message}>")

    def point(self, body, point, local=False):
        """World trajectory (k, 3) of a body point (reference-world unless ``local``)."""
        expr = self.model.point_expression(body, point, local)
        X = self.p.reshape(self.t.size, -1, 3)
        return expr.const + sum(c * X[:, s] for s, c in expr.terms.items())

    def point_velocity(self, body, point, local=False):
        """World velocity (k, 3) of a body point."""
        expr = self.model.point_expression(body, point, local)
        V = self.v.reshape(self.t.size, -1, 3)
        return sum(c * V[:, s] for s, c in expr.terms.items())

    def joint_multipliers(self, joint):
        """Multipliers (k, rows) of one joint's rows (needs ``multipliers=True``)."""
        if self.lam is None:
            raise ValueError("simulate(..., multipliers=True) to record multipliers")
        j, _ = self.model.joint_named(joint)
        start, stop = self.model.joint_rows[j]
        return self.lam[:, start:stop]

    def _drive(self, joint):
        j, spec = self.model.joint_named(joint)
        if spec.drive is None:
            raise ValueError(f"joint {joint!r} has no drive; pass drive= to add_revolute or "
                             f"add_prismatic")
        row = self.model.joint_rows[j][0] + spec.drive_row
        if row in self.dropped_rows:
            raise ValueError(f"the drive row of joint {joint!r} was dropped as redundant: "
                             f"the drive force is not determined by the constraints")
        return spec, row

    def drive_force(self, joint):
        """Actuator force (N, prismatic) or torque (N·m, revolute) of a drive, (k,).

        The drive row ``g_d`` has ``∂g_d/∂s = 1`` along the joint's relative
        coordinate s (slide or angle of body b relative to body a), so the
        constraint force ``−Gᵀλ`` acts along s as ``F = −λ_d``. Positive F pushes
        (turns) body b along (about) +axis relative to body a; body a feels −F.
        Needs ``simulate(..., multipliers=True)``.
        """
        spec, row = self._drive(joint)
        if self.lam is None:
            raise ValueError("simulate(..., multipliers=True) to record drive forces")
        return -self.lam[:, row]

    def drive_power(self, joint):
        """Power ``P = F ṡ`` (W) the drive delivers, (k,).

        Equals ``λᵀ g_t`` restricted to the drive row, the power of the
        rheonomic constraint force, so ``∫ Σ P dt`` is the change of mechanical
        energy when no other non-conservative force acts.
        """
        spec, _ = self._drive(joint)
        rate = np.array([spec.drive(t)[1] for t in self.t])
        return self.drive_force(joint) * rate

    def save(self, path):
        """Write arrays and statistics to an ``.npz`` file."""
        np.savez_compressed(path, t=self.t, p=self.p, v=self.v, energy=self.energy,
                            constraint_residual=self.constraint_residual,
                            velocity_residual=self.velocity_residual,
                            dropped=np.array(self.dropped, dtype=str),
                            **{f"stats_{k}": v for k, v in self.stats.items()})

    def joint_reaction(self, joint, frame="world"):
        """Force and torque (k, 3) ``joint`` exerts on its body b at each output.

        Torque about the joint point (``.point``, (k, 3)); minimum-norm
        multipliers on redundant loops. See :mod:`natcoord.reactions`.
        """
        from .reactions import joint_reactions
        return joint_reactions(self.model, self.t, self.p, self.v, joint, frame)
