"""The result of a simulation: trajectory, residual and energy histories, statistics."""
from __future__ import annotations

import json
import os
import zipfile
import zlib
from pathlib import Path
from types import MappingProxyType

import numpy as np

from ..util.atomic import atomic_write


class ContinuousSolution:
    """``sol(t)``: the state ``y = (p, v)`` at any time of the integrated interval, like
    ``scipy.integrate.solve_ivp(dense_output=True).sol``.

    Built from the accepted steps' own continuous extensions (``pieces``, in
    order, piece k callable on ``[ts[k], ts[k + 1]]``; ``y_end`` the state at
    ``ts[-1]``): DOPRI5's order-4 dense output or Radau's collocation polynomial
    (order 3). The value at a
    step time is the step's recorded (projected) state; between steps it is the
    interpolant, not projected: it satisfies the constraints only to the
    interpolation error. ``sol(t, project=True)`` projects each value as the
    ``t_eval`` outputs are (``project(t, y)``), at the cost of a projection per time.
    """

    def __init__(self, ts, pieces, y_end, project):
        self.ts = np.asarray(ts, float)
        self.pieces, self.y_end, self._project = pieces, y_end, project
        self.t_min, self.t_max = self.ts[0], self.ts[-1]

    def __call__(self, t, project=False):
        """``y`` (2 N,) at a scalar ``t``, (2 N, k) at times ``t`` (k,)."""
        times = np.asarray(t, float)
        if times.ndim > 1:
            raise ValueError(f"t must be a scalar or a 1-d array of times, got shape "
                             f"{times.shape}")
        flat = times.reshape(-1)
        outside = (flat < self.t_min) | (flat > self.t_max) | np.isnan(flat)
        if outside.any():
            raise ValueError(f"t = {flat[outside][0]:.17g} is outside the integrated interval "
                             f"[{self.t_min:.17g}, {self.t_max:.17g}]")
        piece = np.searchsorted(self.ts, flat, side="right") - 1
        ys = np.empty((flat.size, self.y_end.size))
        for k in np.unique(piece):
            at = piece == k
            ys[at] = self.y_end if k == len(self.pieces) else self.pieces[k](flat[at])
        if project:
            ys = np.array([self._project(t, y) for t, y in zip(flat, ys)]).reshape(ys.shape)
        return ys[0] if times.ndim == 0 else ys.T


class Records:
    """The records of a run as they come, in blocks of arrays (a chunk's at once), joined
    once into the :class:`Solution`'s arrays: ``t`` (k,), ``y`` (k, 2 N), ``obs`` (k, 3:
    energy, ‖g‖∞, ‖G v + g_t‖∞) and ``lam`` (k, m) or None."""

    def __init__(self, n_coords):
        self.n = n_coords
        self.blocks = []
        self.size = 0
        self.t_last = None

    def extend(self, t, y, obs, lam=None):
        """Append records (arrays are kept, not copied: the caller gives them up)."""
        t = np.asarray(t, float)
        self.blocks.append((t, np.asarray(y, float).reshape(t.size, 2 * self.n),
                            np.asarray(obs, float).reshape(t.size, 3), lam))
        self.size += t.size
        self.t_last = float(t[-1])

    def arrays(self):
        """``(t, y, obs, lam)`` of every record."""
        if not self.blocks:
            return (np.zeros(0), np.zeros((0, 2 * self.n)), np.zeros((0, 3)), None)
        if len(self.blocks) == 1:
            return self.blocks[0]
        t, y, obs, lam = zip(*self.blocks)
        return (np.concatenate(t), np.concatenate(y), np.concatenate(obs),
                None if lam[0] is None else np.concatenate(lam))


class Solution:
    """Trajectory at output times, like ``scipy.integrate.solve_ivp``'s result.

    ``records``: the run's :class:`Records` (or a list of ``(t, p, v, energy,
    ‖g‖∞, ‖G v + g_t‖∞, λ or None)``).
    ``t`` (k,), ``p`` and ``v`` (k, 12 n); ``energy`` (k,) mechanical energy
    (kinetic + gravity + springs); ``constraint_residual`` ``‖g‖∞`` and
    ``velocity_residual`` ``‖G v + g_t‖∞`` (k,); ``lam`` (k, m) multipliers
    when requested; ``stats`` counters; ``dropped`` labels of the redundant
    rows dropped at the first output; ``success`` and ``message``;
    ``last_record_is_step``: the run failed and its last record is the last
    accepted step, not a ``t_eval`` point (see ``simulate``); ``sol`` the
    :class:`ContinuousSolution` of ``simulate(..., dense_output=True)``;
    ``torques`` the joint torques the run applied (``u`` or the model's inputs),
    which :meth:`accelerations` (and so ``qdd``) includes.
    """

    def __init__(self, model, records, stats, dropped_rows, success=True, message="ok",
                 last_record_is_step=False, sol=None, torques=()):
        self.model = model
        self._sol = sol
        self.torques = tuple(torques)
        if not isinstance(records, Records):      # a list of (t, p, v, energy, g, gv, λ)
            rows = Records(model.n_coords)
            for t, p, v, *obs, lam in records:
                rows.extend([t], np.concatenate([p, v]), obs,
                            None if lam is None else np.reshape(lam, (1, -1)))
            records = rows
        self.t, y, obs, self.lam = records.arrays()
        n = model.n_coords
        self.p, self.v = y[:, :n], y[:, n:]
        self.energy, self.constraint_residual, self.velocity_residual = obs.T
        self.stats = dict(stats)
        if self.torques:        # saved with the results: load() rebuilds declared inputs
            self.stats["joint_torques"] = {
                "joints": [name for f in self.torques for name in f.names],
                "declared": all(f.declared for f in self.torques)}
        self.dropped_rows = np.asarray(dropped_rows, np.int64)
        self.dropped = [model.row_labels[r] for r in self.dropped_rows]
        self.success = success
        self.message = message
        self.last_record_is_step = last_record_is_step

    _sol = None
    #: a loaded solution's: save() cannot store a run's u (a Python callable); load()
    #: rebuilds a model's declared inputs (``stats["joint_torques"]`` says which)
    torques = ()

    @property
    def sol(self):
        """The :class:`ContinuousSolution` ``sol(t)`` (``sol(t, project=True)`` projected).

        Only with ``simulate(..., dense_output=True)``, which stores every
        step's interpolant; :meth:`save` does not write it (the projection needs
        the run's solver, and the per-step data are many times the records), so
        a loaded solution has none.
        """
        if self._sol is None:
            raise ValueError("no continuous solution: pass dense_output=True to simulate "
                             "(a loaded Solution has none: save() does not store it)")
        return self._sol

    def __repr__(self):
        return (f"<natcoord.Solution {self.model.name!r}: {self.t.size} outputs, "
                f"t = {self.t[0] if self.t.size else 0:g}..{self.t[-1] if self.t.size else 0:g}, "
                f"{self.stats.get('steps', 0)} steps, {self.message}>")

    def point(self, body, point, local=False):
        """World trajectory (k, 3) of a body point (reference-world unless ``local``);
        ``body`` may name a frame (``model.frames``), ``local`` points then in its axes."""
        expr = self.model.point_expression(body, point, local)
        X = _by_slot(self.p)
        return expr.const + sum((c * X[:, s] for s, c in expr.terms.items()),
                                np.zeros((self.t.size, 3)))     # (k, 3) for ground's too

    def point_velocity(self, body, point, local=False):
        """World velocity (k, 3) of a body point."""
        expr = self.model.point_expression(body, point, local)
        V = _by_slot(self.v)
        return sum((c * V[:, s] for s, c in expr.terms.items()), np.zeros((self.t.size, 3)))

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

    #: simulation settings (t_end, rtol, atol, proj_tol, solver, projection, ...) as
    #: given to ``simulate``; empty when unknown. Saved and loaded with the results.
    settings = MappingProxyType({})

    def save(self, path):
        """Write the results to an ``.npz`` file that :meth:`load` reads without pickle.

        Arrays: ``t, p, v, energy, constraint_residual, velocity_residual``,
        ``lam`` when recorded, ``dropped_rows`` and ``dropped`` (labels, for
        other readers: :meth:`load` takes them from the row labels); the
        JSON string ``metadata`` holds the format version, model name, body
        names, coordinate layout, constraint row labels, ``stats``,
        ``settings``, ``success`` and ``message``.

        ``.npz`` is appended to a name without it, and :meth:`load` follows the
        same rule, so ``load("x")`` reads what ``save("x")`` wrote; a directory
        (existing, or a name ending in ``/``) is refused. The file is written
        whole or not at all (:mod:`natcoord.util.atomic`): an interrupted save
        leaves the previous file as it was, and saves to one path from several
        processes or threads take turns instead of interleaving.
        """
        path = _file_name(path)
        model = self.model
        metadata = {
            "format": FORMAT, "version": VERSION, "model": model.name,
            "bodies": list(model.body_index),
            "coordinates": COORDINATES, "row_labels": list(model.row_labels),
            "stats": self.stats, "settings": dict(self.settings),
            "success": bool(self.success), "message": str(self.message)}
        arrays = {name: getattr(self, name) for name in _ARRAYS}
        if self.lam is not None:
            arrays["lam"] = self.lam
        text = json.dumps(metadata, default=_plain)
        with atomic_write(path, "wb") as file:
            np.savez_compressed(file, **arrays, dropped_rows=self.dropped_rows,
                                dropped=np.array(self.dropped, dtype=str),
                                metadata=np.array(text))

    @classmethod
    def load(cls, path, model=None):
        """A :class:`Solution` saved by :meth:`save` (never unpickles anything).

        Pass the ``model`` the file was saved from (e.g. ``mech.build()``) to use
        :meth:`point` and the other methods that need it; its body names and
        constraint rows must match the file. Without it, ``sol.model`` only
        knows the model's name, body names and row labels.

        A solution file can come from anywhere, so it is read as untrusted:
        only the members :meth:`save` writes are opened (an extra one, say a
        highly compressed 2 GB member, is never decompressed); each one's
        shape, dtype and size in the zip directory are checked against the
        metadata and ``len(t)`` before its data is read; the metadata must be
        well-formed JSON with fields of the right types. Anything wrong is a
        ``ValueError`` naming the file and the fault. ``path`` follows
        :meth:`save`'s naming rule (``.npz`` appended to a name without it).
        """
        path = _file_name(path)
        metadata, arrays = _read(path)
        sol = cls.__new__(cls)
        sol.model = _saved_model(path, metadata, model)
        for name in _ARRAYS:
            setattr(sol, name, arrays[name])
        sol.lam = arrays.get("lam")
        sol.dropped_rows = arrays["dropped_rows"]
        sol.dropped = [metadata["row_labels"][r] for r in sol.dropped_rows]
        sol.stats = metadata["stats"]
        sol.settings = metadata["settings"]
        sol.success, sol.message = metadata["success"], metadata["message"]
        applied = sol.stats.get("joint_torques")
        if applied and applied.get("declared") and model is not None and model.inputs:
            from ..dynamics.joint_space import JointTorques
            torques = JointTorques.of_inputs(model)
            if list(torques.names) == applied.get("joints"):
                sol.torques = (torques,)
        return sol

    # ------------------------------------------------------------------
    # Derived outputs: orientation, angular velocity, accelerations, joint
    # coordinates, figures and tables (natcoord.model.kinematics does the math).
    def _slots(self):
        return _by_slot(self.p), _by_slot(self.v)

    def _body(self, body):
        if body not in self.model.body_index:
            raise KeyError(f"unknown body {body!r}; bodies: {list(self.model.body_index)}")
        return self.model.body_index[body]

    def rotation(self, body):
        """Rotation matrices ``R = [e1 e2 e3]`` (k, 3, 3) of a body, or of a named frame
        (``model.frames``: its body's ``R`` times the frame's axes).

        ``R`` maps body to world coordinates; in the reference configuration it
        is the ``axes`` given to ``add_body``. Orthonormal to the projection
        tolerance (the rigid-body constraints of §1.3).
        """
        from ..model.kinematics import rotation
        b, axes, _ = self.model.placement(body)
        if b is None:                   # a frame fixed in ground
            return np.tile(axes, (self.t.size, 1, 1))
        R = rotation(self._slots()[0], b.index)
        return R.copy() if axes is None else R @ axes

    def quaternion(self, body):
        """Unit quaternions (k, 4), scalar first ``(w, x, y, z)``, sign-continuous.

        The first has ``w ≥ 0``; each next one has the sign nearest its predecessor.
        """
        from scipy.spatial.transform import Rotation
        q = Rotation.from_matrix(self.rotation(body)).as_quat()[:, [3, 0, 1, 2]]
        if q.shape[0]:
            signs = np.ones(q.shape[0])
            signs[0] = -1.0 if q[0, 0] < 0 else 1.0
            for i in range(1, q.shape[0]):
                signs[i] = signs[i - 1] * (1.0 if q[i] @ q[i - 1] >= 0 else -1.0)
            q *= signs[:, None]
        return q

    def angular_velocity(self, body, frame="world"):
        """Angular velocity (k, 3): ``ω = ½ Σ_k e_k × ė_k`` (from ``ω× = Ṙ Rᵀ``).

        ``frame="world"`` (default) or ``"body"`` (components ``Rᵀ ω`` along e1, e2, e3).
        """
        from ..model.kinematics import angular_velocity
        X, V = self._slots()
        omega = angular_velocity(X, V, self._body(body))
        if frame == "world":
            return omega
        if frame == "body":
            return np.einsum("kji,kj->ki", self.rotation(body), omega)
        raise ValueError(f"frame must be 'world' or 'body', got {frame!r}")

    def accelerations(self, solver=None):
        """Accelerations ``a`` (k, 12 n) at every output, stored as ``self.a``.

        Evaluated post hoc with :func:`natcoord.accelerations` (one KKT solve per
        output, with the joint torques the run applied: ``torques``; a loaded
        solution has none) with the run's solver unless ``solver`` is given; the
        multipliers of the same solves are stored as ``self.lam`` if the run did
        not record them.
        """
        from ..dynamics.workspace import Workspace
        ws = Workspace(self.model, solver or self.stats.get("solver"))
        applied = self.stats.get("joint_torques")
        if applied and not self.torques:
            raise ValueError(f"the run applied joint torques on {applied.get('joints')} "
                             f"(simulate's u, or model inputs the model given to load() does "
                             f"not have), which a saved solution cannot hold: its "
                             f"accelerations would be the passive ones; compute them on the "
                             f"Solution simulate returned (or load with the model whose "
                             f"inputs the run applied)")
        ws.extra_forces = self.torques        # the joint torques the run applied
        a = np.empty_like(self.v)
        lam = np.empty((self.t.size, self.model.n_rows))
        for i, t in enumerate(self.t):
            a[i], lam[i] = ws.accelerations(float(t), np.ascontiguousarray(self.p[i]),
                                            np.ascontiguousarray(self.v[i]))
        self.a = a
        if self.lam is None:
            self.lam = lam
        return a

    def point_acceleration(self, body, point, local=False):
        """World acceleration (k, 3) of a body point (computes ``accelerations()`` once)."""
        if getattr(self, "a", None) is None:
            self.accelerations()
        expr = self.model.point_expression(body, point, local)
        A = _by_slot(self.a)
        return sum(c * A[:, s] for s, c in expr.terms.items())

    def joint_coordinate(self, joint, coordinate=None):
        """Joint coordinate (k,) of body b relative to body a.

        Revolute: angle (rad), unwrapped, zero in the reference configuration,
        right-handed about the axis (the revolute drive's θ). Prismatic,
        point-on-line: slide (m) along the axis (the prismatic drive's s).
        Cylindrical: ``coordinate="slide"`` (default) or ``"angle"``. Universal:
        ``"angle_a"`` (default) or ``"angle_b"``. All joints at once: :attr:`q`.
        """
        from ..model.kinematics import joint_coordinate
        return joint_coordinate(self.model, joint, self._slots()[0], coordinate)

    def joint_rate(self, joint, coordinate=None):
        """Rate (k,) of :meth:`joint_coordinate` (rad/s or m/s), exact in ``v``."""
        from ..model.kinematics import joint_rate
        X, V = self._slots()
        return joint_rate(self.model, joint, X, V, coordinate)

    # ------------------------------------------------------------------
    # Joint space: q, q̇, q̈ of the model's spanning tree (natcoord.dynamics.joint_space
    # does the math; conventions in docs/model-format.md, Pinocchio's for URDF).
    def _joint_space(self):
        from ..dynamics.joint_space import joint_space
        self.model.joints      # a solution loaded without its model says to pass it
        return joint_space(self.model)

    @property
    def joint_names(self):
        """Names of the joints with DOF, in joint-space order (``nc.joint_space``):
        depth first from ground, a body's joints in the order they were added; a
        free body's joint is named after the body. The columns of ``q`` are
        :attr:`q_names`, of ``qd``/``qdd`` :attr:`qd_names` (the joint names
        themselves for revolute and prismatic joints)."""
        return list(self._joint_space().joint_names)

    @property
    def q_names(self):
        """Column names of :attr:`q` (nq,): ``"j"``, ``"j.slide"``, ``"j.angle_a"``,
        ``"j.qx"`` … ``"j.qw"``, ``"j.x"`` …"""
        return list(self._joint_space().q_names)

    @property
    def qd_names(self):
        """Column names of :attr:`qd` and :attr:`qdd` (nv,): ``"j"``, ``"j.wx"``, ``"j.vx"`` …"""
        return list(self._joint_space().v_names)

    @property
    def q(self):
        """Joint positions (k, nq) at the outputs, columns :attr:`q_names`.

        Angles (rad) right-handed about the joint axis and zero in the reference
        configuration, unwrapped along the trajectory from their value in
        (−π, π] at the first output; slides (m); quaternions ``(x, y, z, w)``
        sign-continuous. Read exactly from the natural coordinates.
        """
        return self._joint_space().positions(self.p, continuous=True)

    @property
    def qd(self):
        """Joint velocities (k, nv) at the outputs, columns :attr:`qd_names` (rad/s,
        m/s; spherical and free joints: angular and linear velocity in body axes)."""
        return self._joint_space().velocities(self.p, self.v)

    @property
    def qdd(self):
        """Joint accelerations (k, nv) at the outputs, columns :attr:`qd_names`.

        From the natural-coordinate accelerations of :meth:`accelerations`
        (evaluated post hoc once, one KKT solve per output, then kept as ``a``).
        """
        if getattr(self, "a", None) is None:
            self.accelerations()
        return self._joint_space().accelerations(self.p, self.v, self.a)

    def plot(self, path=None, **kwargs):
        """Overview figure: :func:`natcoord.viz.plotting.plot_solution` of this solution."""
        from ..viz.plotting import plot_solution
        return plot_solution(self, path, **kwargs)

    def animate(self, **kwargs):
        """``FuncAnimation`` of this solution: :func:`natcoord.viz.animate.animate`."""
        from ..viz.animate import animate
        return animate(self, **kwargs)

    def to_dataframe(self):
        """A ``pandas.DataFrame``: t, each body's origin x/y/z, energy, residuals."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Solution.to_dataframe needs pandas: pip install pandas "
                              "(or use sol.t, sol.p, sol.energy, ... directly)") from None
        X, _ = self._slots()
        columns = {"t": self.t}
        for b in self.model.bodies:
            for k, c in enumerate("xyz"):
                columns[f"{b.name}.{c}"] = X[:, 4 * b.index, k]
        columns["energy"] = self.energy
        columns["constraint_residual"] = self.constraint_residual
        columns["velocity_residual"] = self.velocity_residual
        return pd.DataFrame(columns)

    def joint_reaction(self, joint, frame="world"):
        """Force and torque (k, 3) ``joint`` exerts on its body b at each output.

        Torque about the joint point (``.point``, (k, 3)); minimum-norm
        multipliers on redundant loops. See :mod:`natcoord.dynamics.reactions`.
        """
        from ..dynamics.reactions import joint_reactions
        return joint_reactions(self.model, self.t, self.p, self.v, joint, frame)


FORMAT, VERSION = "natcoord-solution", 1
COORDINATES = ("p and v (k, 12 n): 12 coordinates per body in body order, (o, e1, e2, e3): "
               "frame origin (m) and the world images of the body axes (dimensionless); "
               "v their time derivatives (m/s, 1/s); t in s, energy in J")
_ARRAYS = ("t", "p", "v", "energy", "constraint_residual", "velocity_residual")


def _by_slot(x):
    """``x`` (k, 12 n) as slot vectors (k, 4 n, 3); also with no record (k = 0: the
    solution of a run that failed at once), where ``reshape(k, -1, 3)`` cannot
    infer the slots."""
    return x.reshape(x.shape[0], x.shape[-1] // 3, 3)


def _plain(value):
    """JSON for NumPy scalars and arrays in ``stats`` and ``settings``."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    raise TypeError(f"cannot save {value!r} ({type(value).__name__}) in a solution file")


def _file_name(path):
    """``path`` as :meth:`Solution.save` writes it and :meth:`Solution.load` reads it.

    ``.npz`` is appended to a name that does not end in it (NumPy's
    ``savez`` does so on writing but ``load`` did not on reading, so
    ``save("x")`` wrote a file ``load("x")`` could not find). A directory
    is refused: ``save("out/")`` used to write the hidden file ``out/.npz``.
    """
    text = os.fspath(path)
    if text.endswith(("/", os.sep)) or Path(text).is_dir():
        raise ValueError(f"{text}: is a directory; a solution is saved to a file, e.g. "
                         f"{Path(text) / 'run.npz'}")
    path = Path(text)
    return path if path.suffix.lower() == ".npz" else path.with_name(path.name + ".npz")


#: members ``load`` needs (``lam`` is optional); it opens no other
_REQUIRED = ("metadata", *_ARRAYS, "dropped_rows")
#: bytes the metadata member may declare: its JSON names every body and constraint
#: row (≈ 100 bytes of UTF-32 text per row), so this allows models of ~10⁶ rows
#: while a tampered member cannot claim gigabytes
_METADATA_LIMIT = 256 * 2**20
#: the metadata fields ``load`` uses, with their JSON types
_METADATA_TYPES = {"format": str, "version": int, "model": str, "bodies": list,
                   "row_labels": list, "stats": dict, "settings": dict, "success": bool,
                   "message": str}
_JSON_NAMES = {str: "string", int: "integer", list: "array", dict: "object", bool: "boolean"}
_KINDS = {"f": "floating-point numbers", "iu": "integers", "U": "text"}


def _read(path):
    """``(metadata, arrays)`` of a solution file, every part checked before it is used."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            missing = [name for name in _REQUIRED if f"{name}.npy" not in names]
            if missing:
                raise ValueError(f"{path}: not a complete natcoord solution file: no "
                                 f"{', '.join(missing)} array(s)")
            metadata = _metadata(path, _member(path, archive, "metadata", "U", (),
                                                "() (one JSON string)"))
            return metadata, _arrays(path, archive, metadata, "lam.npy" in names)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as err:
        # RuntimeError: an encrypted member (the JSON's RecursionError is handled in _metadata)
        raise ValueError(f"{path}: not a readable natcoord solution file: damaged, truncated "
                         f"or not written by save ({type(err).__name__}: {err})") from None


def _arrays(path, archive, metadata, with_lam):
    """The arrays, each checked against the metadata and ``len(t)`` before it is read."""
    columns, rows = 12 * len(metadata["bodies"]), len(metadata["row_labels"])
    t = _member(path, archive, "t", "f", (None,), "1-d")
    k = t.size
    arrays = {"t": t}
    for name in ("p", "v"):
        arrays[name] = _member(path, archive, name, "f", (k, columns),
                               f"(len(t), 12 × bodies) = ({k}, {columns})")
    for name in _ARRAYS[3:]:
        arrays[name] = _member(path, archive, name, "f", (k,), f"(len(t),) = ({k},)")
    if with_lam:
        arrays["lam"] = _member(path, archive, "lam", "f", (k, rows),
                                f"(len(t), constraint rows) = ({k}, {rows})")
    dropped = _member(path, archive, "dropped_rows", "iu", (None,), "1-d")
    if dropped.size and (dropped.min() < 0 or dropped.max() >= rows
                         or np.unique(dropped).size < dropped.size):
        raise ValueError(f"{path}: dropped_rows must be distinct constraint rows in "
                         f"0..{rows - 1}, got {dropped.tolist()}")
    arrays["dropped_rows"] = dropped.astype(np.int64)
    return arrays


def _member(path, archive, name, kinds, shape, expected):
    """Array ``name`` of the archive, decompressed only once its header checks out.

    The ``.npy`` header (a few hundred bytes) gives dtype and shape: the dtype
    must be of ``kinds`` (:data:`_KINDS`; Python objects are never unpickled),
    the shape ``shape`` (``None``: any length), and the size the zip
    directory declares must be exactly header plus data. Only then is the data
    read, and at most that many bytes: the zip reader stops at the declared
    size, so a member cannot expand past what was checked.
    """
    info = archive.getinfo(f"{name}.npy")
    if name == "metadata" and info.file_size > _METADATA_LIMIT:
        raise ValueError(f"{path}: metadata declares {info.file_size} bytes, more than the "
                         f"{_METADATA_LIMIT} a solution file's metadata can need")
    with archive.open(info) as member:
        try:
            version = np.lib.format.read_magic(member)
            read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                           (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read_header is None:
                raise ValueError(f".npy format version {version} (save writes 1.0 or 2.0)")
            actual, fortran_order, dtype = read_header(member)
        except ValueError as err:
            raise ValueError(f"{path}: array {name} has no valid .npy header ({err})") from None
        if dtype.hasobject:
            raise ValueError(f"{path}: array {name} holds Python objects, which load refuses "
                             f"to unpickle (allow_pickle=False)")
        if dtype.kind not in kinds or dtype.itemsize == 0:
            raise ValueError(f"{path}: array {name} must hold {_KINDS[kinds]}, got dtype "
                             f"{dtype.str}")
        if len(actual) != len(shape) or any(want is not None and size != want
                                            for size, want in zip(actual, shape)):
            raise ValueError(f"{path}: array {name} has shape {actual}; it must be {expected}")
        size = int(np.prod(actual, dtype=np.int64)) * dtype.itemsize
        if info.file_size != member.tell() + size:
            raise ValueError(f"{path}: array {name} is declared as {info.file_size} bytes in "
                             f"the zip directory, but its shape {actual} of {dtype.str} "
                             f"takes {member.tell() + size}: tampered or truncated")
        data = member.read(size)
    if len(data) != size:
        raise ValueError(f"{path}: array {name} is truncated ({len(data)} of {size} bytes)")
    array = np.frombuffer(data, dtype).reshape(actual, order="F" if fortran_order else "C")
    return array.astype(np.float64) if kinds == "f" else array.copy()


def _metadata(path, text):
    """The metadata JSON, with the fields ``load`` uses of the right types."""
    try:
        metadata = json.loads(str(text[()]))
    except (ValueError, RecursionError) as err:
        raise ValueError(f"{path}: metadata is not valid JSON ({type(err).__name__}: "
                         f"{str(err)[:200]})") from None
    if not isinstance(metadata, dict):
        raise ValueError(f"{path}: metadata must be a JSON object, got "
                         f"{type(metadata).__name__}")
    version = metadata.get("version")
    if metadata.get("format") != FORMAT or (type(version) is int and not 1 <= version <= VERSION):
        raise ValueError(f"{path}: not a {FORMAT} file of version <= {VERSION} (format "
                         f"{metadata.get('format')!r}, version {version!r})")
    for field, kind in _METADATA_TYPES.items():
        if type(metadata.get(field)) is not kind:
            raise ValueError(f"{path}: metadata {field!r} must be a JSON "
                             f"{_JSON_NAMES[kind]}, got {metadata.get(field)!r:.80}")
    for field in ("bodies", "row_labels"):
        if not all(type(name) is str for name in metadata[field]):
            raise ValueError(f"{path}: metadata {field!r} must be a list of strings")
    if len(set(metadata["bodies"])) < len(metadata["bodies"]):
        raise ValueError(f"{path}: metadata 'bodies' names a body twice")
    return metadata


class DetachedModel:
    """What a solution file knows of its model: name, bodies, constraint row labels.

    Stands in for the model of a :class:`Solution` loaded without one; the
    methods that need the model itself (``point``, ``joint_multipliers``, ...)
    raise an error saying to pass ``model=``.
    """

    def __init__(self, path, name, body_names, row_labels):
        self.path, self.name = path, name
        self.body_index = {body: i for i, body in enumerate(body_names)}
        self.row_labels = tuple(row_labels)
        self.n_coords = 12 * len(self.body_index)
        self.n_rows = len(self.row_labels)

    def __getattr__(self, attribute):
        raise AttributeError(f"this solution of {self.name!r} was loaded from {self.path} "
                             f"without its model, which this needs (model.{attribute}): "
                             f"load it with Solution.load(path, model=...), passing the "
                             f"built model (e.g. mech.build())")


def _saved_model(path, metadata, model):
    """``model`` if it matches the file's bodies and rows, else a :class:`DetachedModel`."""
    bodies, rows = metadata["bodies"], metadata["row_labels"]
    if model is None:
        return DetachedModel(path, metadata["model"], bodies, rows)
    names = list(model.body_index)
    if names != bodies or model.n_rows != len(rows):
        raise ValueError(f"{path} was saved from model {metadata['model']!r} with bodies "
                         f"{bodies} ({12 * len(bodies)} coordinates, {len(rows)} constraint "
                         f"rows); model {model.name!r} has bodies {names} ({model.n_coords} "
                         f"coordinates, {model.n_rows} rows): pass the model the file was "
                         f"saved from")
    return model
