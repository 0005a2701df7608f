"""natcoord: rigid multibody dynamics in natural coordinates.

Kraus, Winckler & Bock (2001), "Modeling Mechanical DAE Using Natural
Coordinates", Math. Comput. Model. Dyn. Syst. 7(2).
"""
from . import models
from .assembly import Assembly, AssemblyError, assemble
from .body import box_inertia, cylinder_inertia, rod_inertia
from .dynamics import AccelerationInfo, Workspace, accelerations
from .integrate import PROJECTIONS, IntegrationError, SimulationInterrupted, simulate
from .drives import Drive
from .linalg import available_solvers, default_solver
from .importers import load_mjcf, load_urdf
from .mechanism import GROUND, Mechanism
from .model import Model, State
from .modelfile import load_mechanism
from .projection import ProjectionError
from .solution import Solution
from .plotting import plot_solution as plot
from .animate import animate
from .study import sweep

__version__ = "0.1.0"
__all__ = ["GROUND", "Mechanism", "Model", "State", "Solution", "Workspace", "Drive",
           "simulate", "assemble", "Assembly", "accelerations", "AccelerationInfo",
           "IntegrationError", "SimulationInterrupted",
           "AssemblyError", "ProjectionError", "PROJECTIONS", "available_solvers",
           "default_solver", "models", "sweep", "box_inertia", "rod_inertia",
           "cylinder_inertia", "plot", "animate"]
# model files (docs/model-format.md)
__all__ += ["load_mechanism", "load_urdf", "load_mjcf"]

from .derivatives import Linearization, linearize  # noqa: E402
from .reactions import Reaction, joint_reaction  # noqa: E402

__all__ += ["linearize", "Linearization", "joint_reaction", "Reaction"]

from .sensitivity import Sensitivities, sensitivities  # noqa: E402

__all__ += ["sensitivities", "Sensitivities"]

from .estimation import Estimate, estimate  # noqa: E402

__all__ += ["estimate", "Estimate"]
