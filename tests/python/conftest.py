# The gloo jobs of the distributed tests: launched once per pytest run, shared by the tests that check them.
# SPDX-License-Identifier: MIT
import json
import os
import socket
import subprocess
import sys

import pytest

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dist_worker.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Job:
    """A finished launch of WORLD processes running SCENARIOS in one gloo process group (dist_worker.py).
    A scenario that raises on some ranks leaves the others waiting in its collectives, so later scenarios
    of the job may fail too: the first failing scenario names the cause."""

    def __init__(self, out_dir, world, scenarios):
        self.out_dir, self.world = out_dir, world
        port = free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
        env["OMP_NUM_THREADS"] = "1"
        procs = [subprocess.Popen([sys.executable, WORKER, str(port), str(r), str(world), str(out_dir), *scenarios],
                                  env=env, stderr=subprocess.PIPE, text=True) for r in range(world)]
        self.errors = []
        for r, p in enumerate(procs):
            try:
                _, err = p.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            if p.returncode != 0:
                self.errors.append(f"rank {r} exited {p.returncode}: {err[-2000:]}")

    def results(self, scenario):
        """Every rank's result of `scenario`, in rank order; fails the calling test when a rank raised in it
        or did not report it."""
        out = []
        for r in range(self.world):
            path = self.out_dir / f"{scenario}-{r}.json"
            if not path.exists():
                pytest.fail(f"rank {r} wrote no result for scenario {scenario!r}\n" + "\n".join(self.errors))
            result = json.loads(path.read_text())
            if "failure" in result:
                pytest.fail(f"scenario {scenario!r} raised on rank {r}:\n{result['failure']}")
            out.append(result)
        return out


@pytest.fixture(scope="session")
def gloo4(tmp_path_factory):
    """Four processes: every scenario that starts on a world of 4 (the token scenario also resumes on 2 of them)."""
    out = tmp_path_factory.mktemp("gloo4")
    return Job(out, 4, ["cover", "guard", "guard_families", "save", "batch_save", f"tokens={out / 'tokens-state.json'}", "mixture",
                         f"packing={out / 'packing-state.json'}"])


@pytest.fixture(scope="session")
def gloo2(gloo4, tmp_path_factory):
    """Two processes resuming what the four-process job saved (`save`, `batch_save`), from JSON files."""
    out = tmp_path_factory.mktemp("gloo2")
    scenarios = []
    for saved, resume in (("save", "resume"), ("batch_save", "batch_resume")):
        path = out / f"{saved}-state.json"
        results = gloo4.results(saved)
        path.write_text(json.dumps(results[0]["state"]))
        scenarios.append(f"{resume}={path}")
    return Job(out, 2, scenarios)


@pytest.fixture(scope="session")
def gloo8(tmp_path_factory):
    """Eight processes as the global ranks of a parallel mesh (dp=4,tp=2, then pp=2,dp=2,tp=2): the mesh guard."""
    return Job(tmp_path_factory.mktemp("gloo8"), 8, ["mesh_dp_tp", "mesh_pp_dp_tp"])


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the marks
def pytest_collection_modifyitems(items):
    """Under pytest-xdist's `--dist loadgroup` (scripts/test) the tests sharing a launch stay in one
    worker, so that each launch is made once per run: those using the gloo jobs above form one group,
    those using a module-scoped fixture of their module another per module; the others go to any
    worker. Without xdist the marks change nothing."""
    for item in items:
        group = None
        for name in item.fixturenames:
            defs = item._fixtureinfo.name2fixturedefs.get(name)
            if not defs or defs[-1].scope == "function":
                continue
            where = getattr(defs[-1].func, "__module__", "") or ""
            if where.endswith("conftest"):
                group = "gloo-jobs"
                item.add_marker(pytest.mark.processes)
                break
            if where.rpartition(".")[2].startswith("test_"):
                group = item.module.__name__
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


# --- Tests that start processes ------------------------------------------------------------------
# `scripts/test quick` runs the Python tests that start no process (`-m "not processes"`). The mark
# is kept true by a check, not by care: while a test without it is being set up, run or torn
# down, starting a subprocess or a multiprocessing process (DataLoader workers among them) fails
# that test, naming the mark. Fixtures shared by several tests start their processes during the
# setup of the first test that asks for them, which is then the test that must carry the mark:
# every test using a conftest launch (gloo jobs) carries it automatically.
_current = {"item": None}


def _undeclared(what):
    item = _current["item"]
    if item is not None and item.get_closest_marker("processes") is None:
        raise RuntimeError(f"{item.nodeid} starts {what} without @pytest.mark.processes: mark it (tests that "
                           "start processes are left out of `scripts/test quick`)")


_popen_execute_child = subprocess.Popen._execute_child


def _guarded_execute_child(self, args, *rest, **kwargs):
    _undeclared(f"a subprocess ({args if isinstance(args, str) else ' '.join(map(str, args))[:120]})")
    return _popen_execute_child(self, args, *rest, **kwargs)


def _install_process_guard():
    import multiprocessing.process

    start = multiprocessing.process.BaseProcess.start

    def guarded_start(self):
        _undeclared(f"a multiprocessing process ({self.name})")
        return start(self)

    subprocess.Popen._execute_child = _guarded_execute_child
    multiprocessing.process.BaseProcess.start = guarded_start


def pytest_configure(config):
    config.addinivalue_line("markers", "processes: the test starts processes (launched jobs, DataLoader workers, "
                                       "the CLI); `scripts/test quick` leaves it out")
    config.addinivalue_line("markers", "cli: the test runs the distsampler program CMake built beside the extension "
                                       "(DISTSAMPLER_CLI); the quick tier's CTest python_cli_agreement runs them "
                                       "(-m cli), the wheel's run leaves them out")
    # pytest-xdist declares it when installed; scripts/test quick runs without xdist.
    config.addinivalue_line("markers", "xdist_group(name): tests kept in one pytest-xdist worker")
    _install_process_guard()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current["item"] = item
    try:
        yield
    finally:
        _current["item"] = None
