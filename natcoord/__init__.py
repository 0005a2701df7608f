"""natcoord: rigid multibody dynamics in natural coordinates.

Kraus, Winckler & Bock (2001), "Modeling Mechanical DAE Using Natural
Coordinates", Math. Comput. Model. Dyn. Syst. 7(2).
"""
from . import models
from .dynamics.assembly import Assembly, AssemblyError, assemble
from .model.body import box_inertia, cylinder_inertia, rod_inertia
from .dynamics.workspace import AccelerationInfo, Workspace, accelerations
from .integrate.simulate import PROJECTIONS, IntegrationError, SimulationInterrupted, simulate
from .model.drives import Drive
from .model.inputs import PD
from .linalg import available_solvers, default_solver
from .io.mjcf import load_mjcf
from .io.urdf import load_urdf
from .model.mechanism import GROUND, Mechanism
from .model.frozen import Model, State
from .io.modelfile import load_mechanism, save_mechanism
from .dynamics.core_run import ProjectionError
from .integrate.solution import Solution
from .integrate.data import Data, forward
from .viz.plotting import plot_solution as plot
from .viz.animate import animate
from .study.sweep import sweep

__version__ = "0.1.0"
__all__ = ["GROUND", "Mechanism", "Model", "State", "Solution", "Workspace", "Drive", "PD",
           "simulate", "assemble", "Assembly", "accelerations", "AccelerationInfo",
           "IntegrationError", "SimulationInterrupted",
           "AssemblyError", "ProjectionError", "PROJECTIONS", "available_solvers",
           "default_solver", "models", "sweep", "box_inertia", "rod_inertia",
           "cylinder_inertia", "plot", "animate", "Data", "forward"]
# model files (docs/model-format.md)
__all__ += ["load_mechanism", "save_mechanism", "load_urdf", "load_mjcf"]

from .dynamics.linearization import Linearization, linearize  # noqa: E402
from .dynamics.reactions import Reaction, joint_reaction  # noqa: E402

__all__ += ["linearize", "Linearization", "joint_reaction", "Reaction"]

from .analysis.sensitivity import Sensitivities, sensitivities  # noqa: E402

__all__ += ["sensitivities", "Sensitivities"]

from .analysis.estimation import Estimate, estimate  # noqa: E402

__all__ += ["estimate", "Estimate"]

from .dynamics.joint_space import (  # noqa: E402
    JointSpace, JointState, JointTorques, actuator_torques, inverse_dynamics, joint_space,
    joint_state)

__all__ += ["joint_state", "JointState", "inverse_dynamics", "joint_space", "JointSpace",
            "JointTorques", "actuator_torques"]
