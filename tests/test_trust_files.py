"""Trust in the files natcoord writes and reads (issue 24, round two).

A result on disk is whole, the old one or the new one: every write goes to a
temporary file beside the target, is fsynced and renamed onto it under an
advisory lock (natcoord.util.atomic), so writers of one path take turns and
an interrupted or killed write leaves the previous file as it was. A solution
file is read as untrusted input: only the members ``save`` writes are opened,
each checked (size in the zip directory, shape, dtype) before it is
decompressed, and every fault is a ValueError naming the file.
"""
import io
import json
import re
import signal
import subprocess
import sys
import threading
import time
import zipfile

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import natcoord as nc  # noqa: E402
from natcoord import cli  # noqa: E402
from natcoord.util import atomic  # noqa: E402
from natcoord.util.atomic import FileLocked, atomic_write, locked  # noqa: E402


@pytest.fixture(scope="module")
def four_bar():
    """The four-bar for 0.05 s with multipliers; it drops three redundant rows."""
    model = nc.models.four_bar().build()
    sol = nc.simulate(model, 0.05, t_eval=np.linspace(0.0, 0.05, 6), multipliers=True)
    sol.settings = {"t_end": 0.05, "rtol": 1e-6, "solver": sol.stats["solver"]}
    return model, sol


@pytest.fixture
def saved(four_bar, tmp_path):
    """A good solution file, ``run.npz``, to damage or to overwrite."""
    path = tmp_path / "run.npz"
    four_bar[1].save(path)
    return path


def leftovers(directory):
    """What a finished write must not leave: temporary files and lock sidecars."""
    return sorted(p.name for p in directory.iterdir()
                  if p.name.startswith(".") or p.suffix == ".lock")


def assert_same_solution(back, sol):
    for name in ("t", "p", "v", "energy", "constraint_residual", "velocity_residual", "lam",
                 "dropped_rows"):
        np.testing.assert_array_equal(getattr(back, name), getattr(sol, name), err_msg=name)
    assert (back.stats, back.settings, back.dropped, back.success, back.message) == (
        sol.stats, dict(sol.settings), sol.dropped, sol.success, sol.message)


def run_cli(capsys, *argv):
    """``(exit status, stdout, stderr)`` of ``natcoord simulate ...``."""
    status = cli.main(["simulate", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


# ------------------------------------------------------------------ round trip
def test_round_trip_keeps_every_array_and_field(four_bar, saved):
    model, sol = four_bar
    assert sol.lam is not None and sol.dropped          # redundant rows and multipliers
    back = nc.Solution.load(saved, model=model)
    assert_same_solution(back, sol)
    assert back.p.dtype == back.t.dtype == np.float64 and back.dropped_rows.dtype == np.int64
    back.p[0, 0] = 1.0                                   # loaded arrays are the caller's
    assert_same_solution(nc.Solution.load(saved), sol)   # and so is a detached load


def test_a_run_without_outputs_round_trips(four_bar, tmp_path):
    """A run that failed before its first output still saves and loads (k = 0)."""
    empty = nc.Solution(four_bar[0], [], {"steps": 0}, [], success=False, message="no output")
    empty.save(tmp_path / "empty.npz")
    back = nc.Solution.load(tmp_path / "empty.npz")
    assert back.t.shape == (0,) and back.p.shape == (0, 36) and back.lam is None
    assert (back.success, back.message) == (False, "no output")


def test_save_and_load_share_one_suffix_rule(four_bar, tmp_path):
    sol = four_bar[1]
    sol.save(tmp_path / "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npz"]
    assert_same_solution(nc.Solution.load(tmp_path / "x"), sol)
    assert_same_solution(nc.Solution.load(str(tmp_path / "x.npz")), sol)


def test_a_directory_is_refused_and_nothing_written(four_bar, tmp_path):
    sol = four_bar[1]
    (tmp_path / "existing").mkdir()
    for where in (f"{tmp_path}/", f"{tmp_path}/new/", tmp_path / "existing"):
        with pytest.raises(ValueError, match="is a directory"):
            sol.save(where)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["existing"]


# ----------------------------------------------------------------- concurrency
def test_a_second_saver_waits_for_the_first_then_writes_its_file_whole(
        four_bar, saved, monkeypatch):
    """Writer A stops half-way through its file; writer B, started then, waits for
    A's lock instead of interleaving bytes with it, and the file on disk stays
    the old, whole one until A renames its own; B's file then replaces it."""
    model = four_bar[0]
    first, second = nc.Solution.load(saved, model=model), nc.Solution.load(saved, model=model)
    first.message, second.message = "writer A", "writer B"
    half_written, resume = threading.Event(), threading.Event()
    savez = np.savez_compressed

    def slow_for_a(file, **arrays):
        if threading.current_thread().name != "A":
            return savez(file, **arrays)
        buffer = io.BytesIO()
        savez(buffer, **arrays)
        data = buffer.getvalue()
        file.write(data[:len(data) // 2])
        half_written.set()
        resume.wait(10)
        file.write(data[len(data) // 2:])

    monkeypatch.setattr(np, "savez_compressed", slow_for_a)
    writers = [threading.Thread(target=s.save, args=(saved,), name=n)
               for s, n in ((first, "A"), (second, "B"))]
    writers[0].start()
    assert half_written.wait(10)
    writers[1].start()
    time.sleep(0.3)
    assert writers[1].is_alive()                                 # B waits for A's lock
    assert nc.Solution.load(saved).message == four_bar[1].message   # the old file, whole
    resume.set()
    for writer in writers:
        writer.join(10)
    assert nc.Solution.load(saved).message == "writer B"
    assert leftovers(saved.parent) == []


def test_two_processes_saving_one_path_never_corrupt_it(four_bar, saved, tmp_path):
    """The issue's reproducer: ``simulate --out same.npz`` twice at once gave a zip
    with a bad CRC. Two processes now save the same file 20 times each."""
    target = tmp_path / "same.npz"
    script = ("import sys, natcoord as nc\n"
              "sol = nc.Solution.load(sys.argv[1])\n"
              "for _ in range(20):\n"
              "    sol.save(sys.argv[2])\n")
    savers = [subprocess.Popen([sys.executable, "-c", script, str(saved), str(target)])
              for _ in range(2)]
    assert [saver.wait(120) for saver in savers] == [0, 0]
    assert_same_solution(nc.Solution.load(target), four_bar[1])
    assert leftovers(tmp_path) == []


def test_a_lock_held_past_the_wait_is_a_clear_error_naming_the_file(
        four_bar, saved, monkeypatch):
    """Another process holds the lock of run.npz: the save gives up after the
    wait with FileLocked (a TimeoutError) naming the file, which is unchanged."""
    monkeypatch.setattr(atomic, "LOCK_TIMEOUT", 0.3)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from natcoord.util.atomic import locked\n"
         "with locked(sys.argv[1]):\n"
         "    print('held', flush=True)\n"
         "    time.sleep(60)\n", str(saved)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        changed = nc.Solution.load(saved)
        changed.message = "not written"
        with pytest.raises(FileLocked) as err:
            changed.save(saved)
        assert str(saved) in str(err.value) and "0.3 s" in str(err.value)
        assert isinstance(err.value, TimeoutError)
    finally:
        holder.kill()
        holder.wait()
    assert_same_solution(nc.Solution.load(saved), four_bar[1])


def test_cli_out_locked_by_another_writer_exits_3_in_one_line(
        four_bar, saved, capsys, monkeypatch):
    monkeypatch.setattr(atomic, "LOCK_TIMEOUT", 0.2)
    monkeypatch.setattr(cli, "simulate", lambda *args, **kwargs: nc.Solution.load(saved))
    before = saved.read_bytes()
    with locked(saved):
        status, out, err = run_cli(capsys, "four-bar", "--quiet", "--out", str(saved))
    assert status == cli.NOT_WRITTEN == 3
    complaint = [line for line in err.splitlines() if "not written" in line]
    assert len(complaint) == 1 and f"--out {saved}" in complaint[0]
    assert "Solution.save" not in err and "written to" not in out
    assert saved.read_bytes() == before


def test_locked_appends_take_turns(tmp_path):
    """``locked(path)`` for appends (the sweep CSVs): the lines of writers that
    append under the lock never interleave."""
    path = tmp_path / "rows.csv"

    def append(tag):
        for i in range(50):
            with locked(path), open(path, "a") as file:
                file.write(f"{tag},")
                file.flush()
                file.write(f"{i}\n")

    writers = [threading.Thread(target=append, args=(tag,)) for tag in "abcd"]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(30)
    lines = path.read_text().splitlines()
    assert len(lines) == 200 and all(line[0] in "abcd" and line[2:].isdigit() for line in lines)
    assert leftovers(tmp_path) == []


# ----------------------------------------------------------------- interrupted
def test_ctrl_c_during_a_save_leaves_the_old_file_and_no_temporary(
        four_bar, saved, monkeypatch):
    def interrupted(file, **arrays):
        file.write(b"PK\x03\x04 the first bytes of a new file")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez_compressed", interrupted)
    with pytest.raises(KeyboardInterrupt):
        four_bar[1].save(saved)
    assert_same_solution(nc.Solution.load(saved), four_bar[1])
    assert leftovers(saved.parent) == []


def test_sigkill_during_a_save_leaves_the_old_file_and_no_stale_lock(four_bar, saved):
    """SIGKILL cannot clean up: it may leave a hidden temporary file, never a
    damaged target, and the lock dies with its holder (flock)."""
    script = ("import os, signal, sys, numpy as np, natcoord as nc\n"
              "sol = nc.Solution.load(sys.argv[1])\n"
              "def killed(file, **arrays):\n"
              "    file.write(b'PK partial')\n"
              "    file.flush()\n"
              "    os.kill(os.getpid(), signal.SIGKILL)\n"
              "np.savez_compressed = killed\n"
              "sol.save(sys.argv[1])\n")
    killed = subprocess.run([sys.executable, "-c", script, str(saved)], timeout=120)
    assert killed.returncode == -signal.SIGKILL
    assert_same_solution(nc.Solution.load(saved), four_bar[1])
    start = time.perf_counter()
    four_bar[1].save(saved)                                # the lock is free at once
    assert time.perf_counter() - start < 5.0
    assert not any(name.endswith(".lock") for name in leftovers(saved.parent))


# -------------------------------------------------------------- tampered files
def members(path):
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def metadata_with(path, **change):
    return np.array(json.dumps({**json.loads(str(members(path)["metadata"])), **change}))


def rewritten(**change):
    """Damage: the file's members with ``change`` (``None`` removes a member)."""
    def damage(source, target):
        arrays = {**members(source), **{k: v(source) for k, v in change.items()}}
        np.savez(target, **{k: v for k, v in arrays.items() if v is not None})
    return damage


def raw_bytes(transform):
    return lambda source, target: target.write_bytes(transform(source.read_bytes()))


def member_replaced(name, transform):
    """Damage: member ``name``'s bytes (.npy header and data) replaced by
    ``transform(bytes)``, beyond what ``np.savez`` would write."""
    def damage(source, target):
        with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
            for info in old.infolist():
                data = old.read(info)
                new.writestr(info, transform(data) if info.filename == f"{name}.npy" else data)
    return damage


def member_resized(name, extra):
    """Damage: member ``name`` with its .npy header intact and ``extra`` bytes of
    data added (or removed, extra < 0), so the zip directory disagrees with it."""
    return member_replaced(name, lambda data: data + bytes(extra) if extra > 0 else data[:extra])


def npy_header(fields):
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, fields)
    return buffer.getvalue()


TAMPERED = {  # case -> (damage, phrase of the message)
    "empty file": (raw_bytes(lambda data: b""), "damaged, truncated"),
    "truncated": (raw_bytes(lambda data: data[:len(data) // 2]), "damaged, truncated"),
    "not a zip": (raw_bytes(lambda data: b"t,p,v\n0,1,2\n"), "damaged, truncated"),
    "non-JSON metadata": (rewritten(metadata=lambda s: np.array("{'format': 1")),
                          "metadata is not valid JSON"),
    "JSON nested 100000 deep": (rewritten(metadata=lambda s: np.array("[" * 100_000)),
                                "metadata is not valid JSON"),
    "metadata not an object": (rewritten(metadata=lambda s: np.array("[1, 2]")),
                               "must be a JSON object"),
    "metadata missing": (rewritten(metadata=lambda s: None), "no metadata"),
    "missing arrays": (rewritten(p=lambda s: None, energy=lambda s: None), "no p, energy"),
    "version as a string": (rewritten(metadata=lambda s: metadata_with(s, version="1")),
                            "'version' must be a JSON integer"),
    "newer version": (rewritten(metadata=lambda s: metadata_with(s, version=99)),
                      "version <= 1"),
    "success as a string": (rewritten(metadata=lambda s: metadata_with(s, success="yes")),
                            "'success' must be a JSON boolean"),
    "body names not strings": (rewritten(metadata=lambda s: metadata_with(s, bodies=[1, 2])),
                               "list of strings"),
    "p with fewer rows than t": (rewritten(p=lambda s: members(s)["p"][:-1]),
                                 "array p has shape (5, 36); it must be (len(t), 12 × bodies) "
                                 "= (6, 36)"),
    "t holding strings": (rewritten(t=lambda s: members(s)["t"].astype(str)),
                          "array t must hold floating-point numbers"),
    "empty metadata string": (rewritten(metadata=lambda s: np.array("")),
                              "metadata is not valid JSON"),
    "metadata of zero-width text": (member_replaced("metadata", lambda data: npy_header(
        {"descr": "<U0", "fortran_order": False, "shape": ()})), "must hold text"),
    "energy of another length": (rewritten(energy=lambda s: np.zeros(7)),
                                 "array energy has shape (7,)"),
    "lam one row short": (rewritten(lam=lambda s: members(s)["lam"][:, :-1]),
                          "array lam has shape (6, 37)"),
    "dropped row out of range": (rewritten(dropped_rows=lambda s: np.array([0, 999])),
                                 "dropped_rows must be distinct constraint rows"),
    "object array (pickle)": (rewritten(metadata=lambda s: np.array([{"a": 1}], dtype=object)),
                              "allow_pickle=False"),
    "member longer than its header says": (member_resized("p", 2**20), "tampered or truncated"),
    "member shorter than its header says": (member_resized("v", -8), "tampered or truncated"),
}


@pytest.mark.parametrize("damage, phrase", TAMPERED.values(), ids=TAMPERED.keys())
def test_a_tampered_file_is_a_value_error_naming_it(saved, tmp_path, damage, phrase):
    target = tmp_path / "tampered.npz"
    damage(saved, target)
    with pytest.raises(ValueError) as err:
        nc.Solution.load(target)
    assert str(target) in str(err.value) and phrase in str(err.value)


def test_an_extra_member_is_never_decompressed(four_bar, saved, monkeypatch):
    """A zip bomb beside the real members: 50 MB of zeros in ~50 kB. Load opens
    only the members save writes, so the bomb costs nothing."""
    with zipfile.ZipFile(saved, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bomb.npy", bytes(50 * 2**20))
    assert saved.stat().st_size < 200_000
    opened, real_open = [], zipfile.ZipFile.open

    def spy(self, name, *args, **kwargs):
        opened.append(getattr(name, "filename", name))
        return real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    start = time.perf_counter()
    back = nc.Solution.load(saved)
    assert time.perf_counter() - start < 1.0
    assert "bomb.npy" not in opened and "dropped.npy" not in opened
    assert_same_solution(back, four_bar[1])


# ---------------------------------------------------------- figures and models
def test_a_figure_replaces_the_old_one_whole(four_bar, tmp_path, monkeypatch):
    from matplotlib.figure import Figure
    path = tmp_path / "run.png"
    four_bar[1].plot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and leftovers(tmp_path) == []
    before = path.read_bytes()

    def interrupted(fig, fname, **options):
        with open(fname, "wb") as file:
            file.write(b"\x89PNG half an image")
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", interrupted)
    with pytest.raises(KeyboardInterrupt):
        four_bar[1].plot(path)
    assert path.read_bytes() == before and leftovers(tmp_path) == []


def test_a_figure_path_without_suffix_is_written_where_asked(four_bar, tmp_path):
    four_bar[1].plot(tmp_path / "overview")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["overview"]
    assert (tmp_path / "overview").read_bytes()[:4] == b"\x89PNG"


def test_a_model_file_is_written_atomically(tmp_path):
    path = tmp_path / "four_bar.json"
    nc.save_mechanism(nc.models.four_bar(), path)
    nc.save_mechanism(nc.models.four_bar(), path)          # replaces, leaves nothing
    assert nc.load_mechanism(path).build().n_coords == nc.models.four_bar().build().n_coords
    assert leftovers(tmp_path) == []
    with pytest.raises(IsADirectoryError, match=re.escape(str(tmp_path))):
        nc.save_mechanism(nc.models.four_bar(), tmp_path)


# ------------------------------------------------------------------ the helper
def test_atomic_write_refuses_appending_and_a_missing_directory(tmp_path):
    with pytest.raises(ValueError, match="locked"):
        with atomic_write(tmp_path / "rows.csv", "a"):
            pass
    with pytest.raises(FileNotFoundError, match="no directory"):
        with atomic_write(tmp_path / "missing" / "rows.csv"):
            pass


def test_atomic_write_inside_locked_rewrites_under_one_lock(tmp_path):
    """Read, merge and rewrite a file under one lock: ``lock=False`` inside."""
    path = tmp_path / "rows.csv"
    path.write_text("a,1\n")
    with locked(path):
        rows = path.read_text().splitlines()
        with atomic_write(path, "w", lock=False, newline="") as file:
            file.write("\n".join([*rows, "b,2"]) + "\n")
    assert path.read_text() == "a,1\nb,2\n" and leftovers(tmp_path) == []
