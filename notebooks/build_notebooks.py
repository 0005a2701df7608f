"""Write notebooks/six_bar.ipynb, hexapod.ipynb, monte_carlo.ipynb,
identification.ipynb and robots.ipynb (without outputs).

The notebooks are generated so that they stay short, consistent with each
other and free of outputs: edit the cells here (``md`` and ``code``) and run
``python3 notebooks/build_notebooks.py``.
"""
from pathlib import Path
from textwrap import dedent

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent


def md(text):
    return new_markdown_cell(dedent(text).strip())


def code(text):
    return new_code_cell(dedent(text).strip())


SETUP = code("""
    from pathlib import Path

    import matplotlib.pyplot as plt
    import numpy as np
    from IPython.display import HTML, Image, display

    import natcoord as nc
    from natcoord.viz.animate import animate
    from natcoord.study.tolerance import run_grid
    from natcoord.viz.structure import plot_structure

    OUT = Path("../out")
    OUT.mkdir(exist_ok=True)
    SOLVER = "block"   # the O(n) block LDLᵀ; nc.available_solvers() lists the others
""")


def structure(stem, width):
    return code(f"""
        plot_structure(model, OUT / "{stem}_structure.png")
        display(Image(filename=str(OUT / "{stem}_structure.png"), width={width}))
    """)


def residuals(energy_title):
    return code(f"""
        fig, ax = plt.subplots(1, 2, figsize=(11, 3.5), constrained_layout=True)
        positive = lambda x: np.ma.masked_less_equal(x, 0.0)   # exact zeros: no point on a log axis
        ax[0].semilogy(sol.t, positive(sol.constraint_residual), label="‖g‖∞ [m]")
        ax[0].semilogy(sol.t, positive(sol.velocity_residual), label="‖G v + g_t‖∞ [m/s]")
        ax[0].axhline(PROJ_TOL, color="k", ls="--", lw=0.8, label="proj_tol")
        ax[0].set(xlabel="t [s]", title="constraint residuals after projection")
        ax[0].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
        ax[1].plot(sol.t, sol.energy - sol.energy[0])
        ax[1].set(xlabel="t [s]", ylabel="E(t) − E(0) [J]", title="{energy_title}");
    """)


def sweep(t_end):
    return code(f"""
        rows = run_grid(model, rtols=[1e-4, 1e-6, 1e-8], proj_tols=[1e-6, 1e-10],
                        combos=[(SOLVER, "position+velocity")], t_end={t_end}, progress=False)
        print(f"{{'proj_tol':>8}} {{'rtol':>8}} {{'runtime [s]':>11}} {{'steps':>6}} {{'rhs':>6}} "
              f"{{'proj. it.':>9}} {{'output error [m]':>16}}")
        for r in rows:
            print(f"{{r['proj_tol']:8.0e}} {{r['rtol']:8.0e}} {{r['wall_time_median']:11.3f}} "
                  f"{{r['steps']:6d}} {{r['rhs']:6d}} {{r['projection_iterations']:9d}} "
                  f"{{r['output_error']:16.2e}}")

        fig, ax = plt.subplots(1, 2, figsize=(11, 3.5), constrained_layout=True)
        for tol in (1e-6, 1e-10):
            sel = [r for r in rows if r["proj_tol"] == tol]
            x = [-np.log10(r["rtol"]) for r in sel]
            label = f"proj_tol = {{tol:g}} m"
            ax[0].plot(x, [r["wall_time_median"] for r in sel], "o-", label=label)
            ax[1].semilogy(x, [r["output_error"] for r in sel], "o-", label=label)
        ax[0].set(xlabel="−log10(rtol)", ylabel="runtime [s]", title="{t_end:g} s simulated")
        ax[1].set(xlabel="−log10(rtol)", ylabel="max output-point error [m]",
                  title="against a rtol = 1e-12 reference")
        for a in ax:
            a.set_xticks([4, 6, 8])
            a.legend()
    """)


def six_bar():
    return [
        md("""
            # The 6-bar mechanism (IFToMM benchmark A04, Bricard's linkage)

            Five rods (1 kg, 1 m) and ground in one closed loop of six revolute joints.
            Grübler's count gives 0 degrees of freedom, yet the mechanism moves with 1:
            one of the 30 joint equations is redundant. natcoord finds and drops it while
            factoring (constraint partitioning). Each rod carries 12 natural coordinates:
            its origin and its three axes in world coordinates.
        """),
        SETUP,
        code("""
            model = nc.models.six_bar().build()
            assembly = nc.assemble(model)
            print(model)
            print("degrees of freedom:", assembly.dof, "| dropped constraints:",
                  [model.row_labels[r] for r in assembly.dropped])
        """),
        md("""
            ## Structure of the system matrix

            Body nodes (18×18: mass block and rigid-body constraints) and joint nodes in
            elimination order; the one loop produces fill along its path only.
        """),
        structure("six_bar", 600),
        md("## Simulation: released at rest under gravity, 10 s"),
        code("""
            PROJ_TOL = 1e-10
            sol = nc.simulate(model, t_end=10.0, rtol=1e-8, proj_tol=PROJ_TOL, solver=SOLVER,
                              t_eval=np.linspace(0.0, 10.0, 501))
            print(sol)
            print({k: round(v, 4) if isinstance(v, float) else v for k, v in sol.stats.items()})
        """),
        code("""
            P3 = sol.point("rod2", (1.0, -1.0, 0.0))     # the benchmark's output point
            fig, ax = plt.subplots(1, 2, figsize=(11, 3.5), constrained_layout=True)
            for k, c in enumerate("xyz"):
                ax[0].plot(sol.t, P3[:, k], label=c)
            ax[0].set(xlabel="t [s]", ylabel="position [m]", title="P3 = (1, −1, 0) on rod 2")
            ax[0].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))   # outside the data
            ax[1].plot(P3[:, 0], P3[:, 2])
            ax[1].set(xlabel="x [m]", ylabel="z [m]", title="path of P3", aspect="equal");
        """),
        md("""
            Residuals stay at the projection tolerance and the mechanical energy (no
            damping) is conserved up to the integration error.
        """),
        residuals("energy drift (conservative system)"),
        md("## Animation (first 5 s, one period)"),
        code("""
            from natcoord.models.six_bar import RODS
            rods = [(f"rod{k + 1}", start, end) for k, (start, end, _) in enumerate(RODS)]
            short = nc.simulate(model, t_end=5.0, rtol=1e-6, solver=SOLVER,
                                t_eval=np.linspace(0.0, 5.0, 101))
            ground = [(0.0, 0.0, 0.0), (0.0, 0.0, 1.0)]   # rod 1 and rod 5 pivot on ground here
            anim = animate(short, rods, frames=40, trace=("rod2", (1.0, -1.0, 0.0)),
                           vertical_axis="y", ground=ground)
            HTML(anim.to_jshtml())
        """),
        md("""
            ## Runtime versus tolerance (a small version of the paper's Fig. 5)

            `natcoord bench tolerance six-bar` runs the full grid and writes
            `data/six_bar_tolerance.csv`; here three integration tolerances and two
            projection tolerances over 10 s.
        """),
        sweep(10.0),
    ]


def hexapod():
    return [
        md("""
            # The hexapod (Stewart–Gough platform)

            13 moving bodies: a platform on six legs, each a cylinder (universal joint to
            ground) and a piston (prismatic joint in the cylinder, spherical joint to the
            platform): six closed chains through ground, 6 degrees of freedom. In the
            *driven* scenario the six prismatic joints follow the closed-form inverse
            kinematics of a circular platform path, and the drive forces do the work.
        """),
        SETUP,
        code("""
            model = nc.models.hexapod(scenario="driven").build()
            assembly = nc.assemble(model)
            print(model)
            print("degrees of freedom:", assembly.dof, "| dropped constraints:",
                  [model.row_labels[r] for r in assembly.dropped])
            print("free (passive) hexapod:", nc.assemble(nc.models.hexapod().build()).dof,
                  "degrees of freedom")
        """),
        md("""
            ## Structure of the system matrix

            Spanning tree rooted at ground; the five loop-closing joints add fill along
            their loops only.
        """),
        structure("hexapod", 700),
        md("## Simulation: the driven scenario, 10 s"),
        code("""
            PROJ_TOL = 1e-10
            sol = nc.simulate(model, t_end=10.0, rtol=1e-6, proj_tol=PROJ_TOL, solver=SOLVER,
                              t_eval=np.linspace(0.0, 10.0, 501), multipliers=True)
            print(sol)
            print(f"real-time factor: {10.0 / sol.stats['wall_time']:.0f}x")
        """),
        code("""
            from natcoord.models.hexapod import platform_path
            centre = sol.point("platform", (0.0, 0.0, 1.0))
            prescribed = np.array([platform_path(t)[0] for t in sol.t])
            fig, ax = plt.subplots(1, 2, figsize=(11, 3.5), constrained_layout=True)
            for k, c in enumerate("xyz"):
                ax[0].plot(sol.t, centre[:, k], label=c)
            ax[0].set(xlabel="t [s]", ylabel="position [m]", title="platform centre")
            ax[0].legend()
            error = np.linalg.norm(centre - prescribed, axis=1)
            # exact zeros (t = 0) are masked: no floor that would stretch the log axis
            ax[1].semilogy(sol.t, np.ma.masked_less_equal(error, 0.0))
            ax[1].set(xlabel="t [s]", ylabel="distance [m]",
                      title="platform centre − prescribed path");
        """),
        md("""
            Drive forces of the six legs (from the multipliers of the drive rows, along
            the leg axes).
        """),
        code("""
            fig, ax = plt.subplots(figsize=(7, 3.5), constrained_layout=True)
            for k in range(1, 7):
                ax.plot(sol.t, sol.drive_force(f"P{k}"), label=f"leg {k}")
            ax.set(xlabel="t [s]", ylabel="drive force [N]", title="prismatic drives")
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0));
        """),
        md("""
            The drives feed and withdraw energy, so the mechanical energy is not constant
            here; it follows the work of the drive forces (see `tests/test_hexapod.py` for
            the balance).
        """),
        residuals("mechanical energy change (driven system)"),
        md("## Animation (one period of the path, 1 s)"),
        code("""
            from natcoord.models.hexapod import (BASE_POINTS, CYLINDER, PISTON,
                                                 PLATFORM_POINTS, leg_frame)
            segments = []
            for k, (B, P) in enumerate(zip(BASE_POINTS, PLATFORM_POINTS)):
                u = leg_frame(k)[:, 2]
                segments += [(f"cylinder{k + 1}", B, B + CYLINDER["length"] * u),
                             (f"piston{k + 1}", P, P - PISTON["length"] * u)]
            segments += [("platform", PLATFORM_POINTS[k], PLATFORM_POINTS[(k + 1) % 6])
                         for k in range(6)]
            short = nc.simulate(model, t_end=1.0, rtol=1e-6, solver=SOLVER,
                                t_eval=np.linspace(0.0, 1.0, 51))
            anim = animate(short, segments, frames=25, trace=("platform", (0.0, 0.0, 1.0)),
                           ground=BASE_POINTS)   # the base: ground points of the universal joints
            HTML(anim.to_jshtml())
        """),
        md("""
            ## Runtime versus tolerance

            The full grid is `natcoord bench tolerance hexapod` (the passive scenario);
            here the driven scenario over 2 s. Its motion is prescribed, so the platform
            centre is exact up to the projection tolerance whatever `rtol`: the
            integration tolerance buys accuracy of the velocities and drive forces only.
        """),
        sweep(2.0),
    ]


def monte_carlo():
    return [
        md("""
            # Monte Carlo on Dask: the six-bar under manufacturing tolerances

            1000 six-bar (Bricard) mechanisms, each with its own rod masses (±2 %,
            normal), rod cross-section (0.1 m ± 5 %, uniform) and overall size (±0.1 %,
            normal), released at rest and simulated for 2 s. The quantity of interest
            is where the output point P3 ends up. `nc.sweep` runs one simulation per
            sample as a Dask task on a `LocalCluster` (one single-threaded worker
            process per core); on a real cluster pass `client=Client("tcp://…")`
            instead — nothing else changes. Sample `i` draws from its own random
            generator (`SeedSequence(seed).spawn`), so the seed reproduces every
            sample whichever worker runs it.
        """),
        code("""
            import matplotlib.pyplot as plt
            import numpy as np

            import natcoord as nc
            from natcoord.study.sweep import close_client, local_client

            client = local_client(workers=2)        # loopback only; one process per core
            print("Dask dashboard:", client.dashboard_link)
        """),
        md("""
            The model factory takes the sampled values as keywords (it is shipped to
            the workers by value and builds each model there: nothing heavy travels);
            the sampler maps a random generator to one sample.
        """),
        code("""
            def bricard(m1, m2, m3, m4, m5, section, length):
                return nc.models.six_bar(mass=[m1, m2, m3, m4, m5], section=section,
                                         length=length)


            def tolerances(rng):
                masses = rng.normal(1.0, 0.02, size=5)
                return {**{f"m{k}": float(m) for k, m in enumerate(masses, start=1)},
                        "section": float(rng.uniform(0.095, 0.105)),
                        "length": float(rng.normal(1.0, 1e-3))}


            table = nc.sweep(bricard, tolerances, n_samples=1000, seed=2026,
                             simulate_kwargs={"t_end": 2.0, "rtol": 1e-8},
                             measures=("end", "drift", "stats"), client=client)
            print(f"{len(table)} runs, {int(table['success'].sum())} succeeded; "
                  f"steps per run {table['steps'].min():.0f}–{table['steps'].max():.0f}; "
                  f"largest ‖g‖∞ {table['max_constraint_residual'].max():.1e} m")
        """),
        md("""
            The nominal mechanism for comparison, and the distribution of P3 at 2 s.
        """),
        code("""
            nominal = nc.simulate(bricard(1, 1, 1, 1, 1, 0.1, 1.0).build(), 2.0, rtol=1e-8)
            body, point = nominal.model.scenario["output_point"]
            p3 = nominal.point(body, point)[-1]
            ok = table[table["success"]]
            fig, ax = plt.subplots(1, 3, figsize=(12, 3.4), constrained_layout=True)
            for k, axis in enumerate("xyz"):
                values = 1e3 * (ok[f"output_{axis}"] - p3[k])
                ax[k].hist(values, bins=40)
                ax[k].axvline(0.0, color="k", lw=0.8, ls="--", label="nominal")
                ax[k].set(xlabel=f"P3 {axis} − nominal [mm]", title=f"P3 {axis} at t = 2 s")
            ax[0].set_ylabel("samples")
            ax[0].legend(loc="upper left");
            spread = 1e3 * ok[["output_x", "output_y", "output_z"]].std().to_numpy()
            print("standard deviation of P3 [mm]:", np.round(spread, 3))
        """),
        md("""
            Which tolerance matters? The overall size enters the dynamics directly (the
            pendulum-like period scales with √length); the rod masses redistribute.
        """),
        code("""
            fig, ax = plt.subplots(1, 2, figsize=(10, 3.4), constrained_layout=True)
            ax[0].plot(1e3 * (ok["length"] - 1.0), 1e3 * (ok["output_y"] - p3[1]), ".", ms=3)
            ax[0].set(xlabel="size error [mm per m]", ylabel="P3 y − nominal [mm]")
            ax[1].plot(ok["m2"], 1e3 * (ok["output_y"] - p3[1]), ".", ms=3)
            ax[1].set(xlabel="mass of rod 2 [kg]", ylabel="P3 y − nominal [mm]")
            for name in ("length", "section", "m1", "m2", "m3", "m4", "m5"):
                r = np.corrcoef(ok[name], ok["output_y"])[0, 1]
                print(f"correlation of {name:>7} with P3 y: {r:+.2f}")
        """),
        code("""
            close_client(client)
        """),
    ]


def identification():
    return [
        md("""
            # Identification: the hexapod's platform mass and one leg spring–damper

            The passive hexapod with a spring–damper in every leg
            (`nc.models.hexapod(leg_springs=(k, c))`) is released at rest and sags onto
            its springs. From a noisy record of three platform points (centre and two
            rim points, 0.1 mm noise, 50 samples in 1 s) we recover the platform mass
            and the stiffness and damping of leg 1 by generalized Gauss–Newton:
            `nc.estimate` calls `scipy.optimize.least_squares` with the trajectory
            sensitivities `nc.sensitivities` (internal numerical differentiation of the
            integrator, docs/method.md §1.8–1.9) as the Jacobian.
        """),
        code("""
            import time

            import matplotlib.pyplot as plt
            import numpy as np

            import natcoord as nc
            from natcoord.models.hexapod import PLATFORM_CENTRE, PLATFORM_POINTS

            TRUTH = {"mass:platform": 10.0, "stiffness:0": 2000.0, "damping:0": 10.0}
            START = {"mass:platform": 8.0, "stiffness:0": 1500.0, "damping:0": 15.0}
            NOISE = 1e-4                                   # m, standard deviation
            T_EVAL = np.linspace(0.02, 1.0, 50)
            POINTS = [("platform", tuple(PLATFORM_CENTRE)),
                      ("platform", tuple(PLATFORM_POINTS[0])),
                      ("platform", tuple(PLATFORM_POINTS[2]))]
            OPTIONS = dict(rtol=1e-8)

            model = nc.models.hexapod(leg_springs=(2000.0, 10.0)).build()
            truth = nc.simulate(model, T_EVAL[-1], t_eval=T_EVAL, **OPTIONS)
            clean = np.stack([truth.point(body, point) for body, point in POINTS], axis=1)
            data = clean + NOISE * np.random.default_rng(0).standard_normal(clean.shape)
            print(model, "-", nc.assemble(model).dof, "degrees of freedom;", len(T_EVAL),
                  "samples of", len(POINTS), "points")
        """),
        md("""
            The estimate starts 20–50 % off. Each Gauss–Newton iteration runs one
            simulation with sensitivities for the three parameters; the covariance is
            `(JᵀJ)⁻¹` with the weights `1/σ`.
        """),
        code("""
            fit = nc.estimate(model.with_parameters(START), START, T_EVAL, POINTS, data,
                              sigma=NOISE, **OPTIONS)
            print(fit.table(TRUTH))
            print(f"{fit.iterations} Gauss–Newton iterations, {fit.evaluations} residual "
                  f"evaluations, {fit.time:.1f} s; χ²/N = {2 * fit.cost / fit.residuals.size:.2f}")
        """),
        md("""
            Fit against data: the vertical motion of the centre and the tilt that leg 1's
            spring (different from the other five while the estimate is off) produces at
            the rim points.
        """),
        code("""
            start = nc.simulate(model.with_parameters(START), T_EVAL[-1], t_eval=T_EVAL,
                                **OPTIONS)
            fig, ax = plt.subplots(1, 3, figsize=(13, 3.4), constrained_layout=True)
            for k, (title, (body, point)) in enumerate(zip(("centre", "rim P1", "rim P3"),
                                                           POINTS)):
                ax[k].plot(T_EVAL, 1e3 * data[:, k, 2], ".", ms=4, label="data")
                ax[k].plot(T_EVAL, 1e3 * start.point(body, point)[:, 2], "--", lw=1,
                           label="start")
                ax[k].plot(T_EVAL, 1e3 * fit.solution.point(body, point)[:, 2],
                           label="fit")
                ax[k].set(xlabel="t [s]", ylabel="z [mm]", title=f"platform {title}")
            ax[0].legend();
        """),
        code("""
            r = fit.residuals.reshape(data.shape)
            fig, ax = plt.subplots(figsize=(6, 3), constrained_layout=True)
            ax.hist(r.ravel(), bins=30)
            ax.set(xlabel="weighted residual (r − η)/σ", ylabel="count",
                   title="residuals at the estimate");
        """),
    ]


def robots():
    return [
        md("""
            # Real robot models: a URDF arm and a dm-control MJCF, in joint space

            natcoord imports URDF as Pinocchio reads it (links on fixed joints lumped)
            and MJCF through MuJoCo's own compiler (defaults, includes, frames and
            `settotalmass` resolved by MuJoCo). The simulation runs in natural
            coordinates — 12 per body, a constant mass matrix — and joint space comes
            out exactly: `nc.joint_state` in, `sol.q`, `sol.qd`, `sol.qdd` out. Here the
            joint accelerations of both are compared with the peers' side by side, and a
            joint-space trajectory is plotted.

            Needs the `peers` and `models` extras (Pinocchio, MuJoCo, example-robot-data,
            dm-control); the notebook test skips it without them.
        """),
        code("""
            import warnings
            from importlib import metadata, resources
            from pathlib import Path

            import matplotlib.pyplot as plt
            import mujoco
            import numpy as np
            import pinocchio as pin

            import natcoord as nc
            from natcoord.io.mjcf import from_mujoco

            ROBOTS = Path(metadata.distribution("example-robot-data").locate_file(
                "cmeel.prefix/share/example-robot-data/robots"))
            SUITE = resources.files("dm_control") / "suite"
            rng = np.random.default_rng(7)


            def table(names, ours, peer, peer_name):
                print(f"{'joint':>22} {'natcoord q̈':>14} {peer_name + ' q̈':>14} {'difference':>11}")
                for n, a, b in zip(names, ours, peer):
                    print(f"{n:>22} {a:14.8f} {b:14.8f} {a - b:11.1e}")
        """),
        md("""
            ## A URDF arm: Franka Panda against Pinocchio's ABA

            The natcoord joints carry the URDF names, in Pinocchio's order, with
            Pinocchio's conventions (q = 0 at the URDF's zero positions). natcoord
            models the joints' `<dynamics damping>` (Pinocchio reads it into
            `model.damping`, but its ABA leaves it out: the peer gets τ = −c q̇), and
            names what it does not model (collision geometry, limits, …) in one
            warning. At a random joint state, the joint accelerations of the passive
            arm under gravity:
        """),
        code("""
            path = ROBOTS / "panda_description/urdf/panda.urdf"
            panda = nc.load_urdf(path).build()
            pm = pin.buildModelFromUrdf(str(path))
            q, qd = 0.5 * rng.standard_normal(pm.nv), rng.standard_normal(pm.nv)
            peer = pin.aba(pm, pm.createData(), q, qd, -pm.damping * qd)

            state = nc.joint_state(panda, q, qd)
            a, _, _ = nc.accelerations(panda, state)
            js = nc.joint_space(panda)
            ours = js.accelerations(state.p, state.v, a)
            print(panda)
            table(js.v_names, ours, peer, "Pinocchio")
            difference = np.abs(ours - peer).max() / np.abs(peer).max()
            print(f"largest difference relative to max |q̈|: {difference:.1e}")
            assert difference < 1e-9
        """),
        md("""
            ## A dm-control MJCF: the acrobot against MuJoCo's `mj_forward`

            MuJoCo compiles the file; natcoord reads the compiled model. The joints'
            damping becomes a joint spring–damper; what natcoord does not model (here
            the actuator) is named in one warning and kept on `model.import_report`.
            For the comparison MuJoCo's actuation is switched off — and nothing else.
        """),
        code("""
            path = str(SUITE / "acrobot.xml")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                acrobot = nc.load_mjcf(path).build()
            print(*[w.message for w in caught if path in str(w.message)], sep="\\n")
            print("not modelled:", dict(acrobot.import_report["not_modelled"]))

            m = mujoco.MjModel.from_xml_path(path)
            m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ACTUATION
            d = mujoco.MjData(m)
            d.qpos[:] = m.qpos0 + rng.uniform(-1, 1, m.nq)
            d.qvel[:] = rng.standard_normal(m.nv)
            mujoco.mj_forward(m, d)

            q, qd, peer = from_mujoco(acrobot, d.qpos, d.qvel, d.qacc)   # MuJoCo's q = natcoord's
            state = nc.joint_state(acrobot, q, qd)
            a, _, _ = nc.accelerations(acrobot, state)
            js = nc.joint_space(acrobot)
            ours = js.accelerations(state.p, state.v, a)
            table(js.v_names, ours, js.vector(peer, "peer")[0], "MuJoCo")
        """),
        md("""
            ## A joint-space trajectory

            The acrobot released from that state for 10 s: `sol.q` holds the joint
            angles (unwrapped), with MuJoCo's zero and sign (`qpos − qpos0`); MuJoCo's own
            RK4 run with a 0.1 ms step is drawn dashed on top. The joint damping takes
            energy out.
        """),
        code("""
            T = 10.0
            sol = nc.simulate(acrobot, t_end=T, initial_state=state, rtol=1e-12, atol=1e-13,
                              proj_tol=1e-13, t_eval=np.linspace(0.0, T, 1001))
            m.opt.timestep, m.opt.integrator = 1e-4, mujoco.mjtIntegrator.mjINT_RK4
            every = int(round(0.01 / m.opt.timestep))
            peer_q = [np.array(d.qpos)]
            for k in range(int(round(T / m.opt.timestep))):
                mujoco.mj_step(m, d)
                if (k + 1) % every == 0:
                    peer_q.append(np.array(d.qpos))
            peer_q = np.array(peer_q) - m.qpos0

            fig, ax = plt.subplots(1, 2, figsize=(11, 3.5), constrained_layout=True)
            for k, name in enumerate(sol.q_names):
                ax[0].plot(sol.t, sol.q[:, k], label=f"natcoord {name}")
                ax[0].plot(sol.t, peer_q[:, k], "k--", lw=0.8)
            ax[0].set(xlabel="t [s]", ylabel="q [rad]", title="acrobot joint angles (MuJoCo dashed)")
            ax[0].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
            ax[1].plot(sol.t, sol.energy)
            ax[1].set(xlabel="t [s]", ylabel="E [J]", title="mechanical energy (joint damping)")
            print("largest |q_natcoord − q_MuJoCo| over 10 s:",
                  f"{np.abs(sol.q - peer_q).max():.1e} rad (both runs' integration errors, "
                  f"grown by the double pendulum's chaos)");
        """),
    ]


def write(name, cells):
    cells = [nbformat.from_dict(dict(cell)) for cell in cells]     # SETUP is shared
    for k, cell in enumerate(cells):
        cell.id = f"{Path(name).stem}-{k}"        # stable ids: regenerating gives no diff
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.validate(nb)
    nbformat.write(nb, HERE / name)
    print(f"wrote {HERE / name}")


if __name__ == "__main__":
    write("six_bar.ipynb", six_bar())
    write("hexapod.ipynb", hexapod())
    write("monte_carlo.ipynb", monte_carlo())
    write("identification.ipynb", identification())
    write("robots.ipynb", robots())
