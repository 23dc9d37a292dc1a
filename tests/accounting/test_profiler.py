"""Profiler in one process: construction, the worker file, snapshots, attachments, hooks."""

from __future__ import annotations

import json
import os
import time
import warnings

import pytest

from lineprofiler.accounting import Profiler
from lineprofiler.runfiles import histogram, workerfile


def only_worker_file(run_dir):
    files = workerfile.find_worker_files(run_dir)
    assert len(files) == 1, files
    return files[0]


def test_the_seed_example_writes_a_valid_worker_file(tmp_path):
    profiler = Profiler(run_dir=tmp_path / "profile", role="actor", snapshot_interval_s=None)
    with profiler:
        for _ in range(5):
            with profiler.phase("iteration"), profiler.phase("self_play"):
                with profiler.phase("mcts"):
                    profiler.count("mcts_simulations", 64)
    path = only_worker_file(tmp_path / "profile")
    assert path == profiler.path
    assert path.parent == tmp_path / "profile" / "workers" / profiler.identity.host
    assert path.name == f"w_{profiler.run_id}_{os.getpid()}_{profiler.identity.uuid}.json"
    doc = workerfile.read_worker_file(path)
    assert doc["schema_version"] == workerfile.SCHEMA_VERSION and doc["kind"] == workerfile.KIND
    assert doc["identity"]["role"] == "actor" and doc["identity"]["pid"] == os.getpid()
    assert doc["times"]["status"] == "exited" and doc["times"]["end_unix_ns"] is not None
    assert doc["snapshot"] == {
        "interval_s": None, "writes": 2, "failures": 0, "last_error": None,
        "last_success_unix_ns": doc["times"]["last_flush_unix_ns"],
    }
    assert doc["histogram"] == {"scheme": histogram.SCHEME, "n_buckets": histogram.N_BUCKETS}
    phases = {p["path"]: p for p in doc["phases"]}
    assert set(phases) == {"iteration", "iteration/self_play", "iteration/self_play/mcts"}
    assert phases["iteration"]["entries"] == 5 and phases["iteration"]["cpu_ns"] is not None
    assert doc["counters"] == [
        {"phase": "iteration/self_play/mcts", "name": "mcts_simulations", "total": 320, "calls": 5, "min": 64,
         "max": 64}
    ]
    assert doc["caps"]["max_paths"] == 10_000 and doc["repairs"]["mismatched_exits"] == 0
    assert doc["errors"] == [] and set(doc["gpu"]) == {"vram", "nvml", "phase_time"}
    # The resource sampler is on by default: its rows go to a sample file beside this one.
    assert doc["samples"]["file"] == path.name.removesuffix(".json") + ".samples"
    assert (path.parent / doc["samples"]["file"]).is_file()
    # after the with: no-ops, nothing more recorded
    with profiler.phase("late"):
        profiler.count("late")
    assert "late" not in json.dumps(workerfile.read_worker_file(path))


def test_the_start_file_exists_before_any_data(tmp_path):
    profiler = Profiler(run_dir=tmp_path, snapshot_interval_s=None)
    try:
        doc = workerfile.read_worker_file(only_worker_file(tmp_path))
        assert doc["times"]["status"] == "started" and doc["phases"] == []
        with profiler.phase("learner_step"):  # no `with profiler:` needed: always on
            pass
        assert profiler.flush()
        doc = workerfile.read_worker_file(profiler.path)
        assert doc["times"]["status"] == "running" and doc["phases"][0]["path"] == "learner_step"
    finally:
        profiler.close()


def test_defaults_come_from_the_environment_and_enabling_exports_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LINEPROFILER_ROLE", "learner")
    profiler = Profiler(snapshot_interval_s=None)
    try:
        assert profiler.run_dir == tmp_path / "profile" and profiler.role == "learner"
        assert os.environ["LINEPROFILER_PROFILE"] == "1"
        assert os.environ["LINEPROFILER_RUN_DIR"] == str(tmp_path / "profile")
        assert os.environ["LINEPROFILER_RUN_ID"] == profiler.run_id
        child = Profiler(role="actor", snapshot_interval_s=None)  # joins with no arguments
        assert (child.run_dir, child.run_id) == (profiler.run_dir, profiler.run_id)
        child.close()
    finally:
        profiler.close()
    monkeypatch.setenv("LINEPROFILER_RUN_DIR", str(tmp_path / "elsewhere"))
    other = Profiler(snapshot_interval_s=None)
    other.close()
    assert other.run_dir == tmp_path / "elsewhere"
    assert other.run_id == profiler.run_id  # inherited through LINEPROFILER_RUN_ID


def test_a_rerun_without_a_launcher_is_a_new_run(tmp_path):
    first = Profiler(run_dir=tmp_path, snapshot_interval_s=None)
    first.close()
    os.environ.pop("LINEPROFILER_RUN_ID")  # a new shell, same directory
    second = Profiler(run_dir=tmp_path, snapshot_interval_s=None)
    second.close()
    assert first.run_id != second.run_id
    assert len(workerfile.find_worker_files(tmp_path)) == 2


def test_disabled_profilers_write_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for profiler in (Profiler(enabled=False), Profiler(run_dir=tmp_path / "x", enabled=False)):
        with profiler:
            with profiler.phase("a"), profiler.phase("b", io=True, sync=True):
                profiler.count("c", 3)
        assert profiler.flush() is False
    monkeypatch.setenv("LINEPROFILER_PROFILE", "0")
    profiler = Profiler(run_dir=tmp_path / "y")
    with profiler.phase("a"):
        pass
    profiler.close()
    assert not profiler.enabled and list(tmp_path.iterdir()) == []
    assert "LINEPROFILER_RUN_ID" not in os.environ


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"run_dir": 3}, TypeError),
        ({"role": 3}, TypeError),
        ({"enabled": "yes"}, TypeError),
        ({"measure_cpu": 1}, TypeError),
        ({"backend": "cprofile"}, ValueError),
        ({"backend": 3}, TypeError),
        ({"backend_window": (5, 5)}, ValueError),
        ({"backend_window": (0, 5)}, ValueError),
        ({"backend_window": 5}, TypeError),
        ({"window_phase": 1}, TypeError),
        ({"annotate": None}, TypeError),
        ({"snapshot_interval_s": 0}, ValueError),
        ({"snapshot_interval_s": "5"}, TypeError),
        ({"max_paths": 0}, ValueError),
    ],
)
def test_wrong_arguments_raise(tmp_path, kwargs, error):
    with pytest.raises(error):
        Profiler(**{"run_dir": tmp_path, **kwargs})
    assert list(tmp_path.iterdir()) == []


def test_later_arguments_are_accepted_and_recorded(tmp_path):
    profiler = Profiler(
        run_dir=tmp_path, backend="torch", backend_window=(100, 110), window_phase="iteration", annotate=True,
        snapshot_interval_s=None,
    )
    profiler.close()
    config = workerfile.read_worker_file(profiler.path)["config"]
    assert config["backend"] == "torch" and config["backend_window"] == [100, 110]
    assert config["window_phase"] == "iteration" and config["annotate"] is True


def test_an_unwritable_run_dir_warns_once_and_keeps_counting(tmp_path, monkeypatch):
    from lineprofiler.accounting._process import PROCESS

    monkeypatch.setattr(PROCESS, "warned_unwritable", False)  # once per process
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.warns(RuntimeWarning, match="cannot write"):
        profiler = Profiler(run_dir=blocker / "profile", snapshot_interval_s=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second warning would raise here
        with profiler.phase("work"):
            profiler.count("items", 2)
        assert profiler.flush() is False
        document = profiler._document("running", False)
        profiler.close()
    assert document["phases"][0]["entries"] == 1
    assert document["snapshot"]["failures"] >= 2 and "cannot create" in document["errors"][0]
    assert document["snapshot"]["last_error"]
    assert not (blocker / "profile").exists()


def test_periodic_snapshots_come_from_a_background_thread(tmp_path):
    profiler = Profiler(run_dir=tmp_path, snapshot_interval_s=0.05)
    try:
        with profiler.phase("tick"):
            pass
        deadline = time.monotonic() + 60  # generous: only a hung thread misses it
        doc = None
        while time.monotonic() < deadline:
            doc = workerfile.read_worker_file(profiler.path)
            if doc["times"]["status"] == "running" and doc["phases"]:
                break
            time.sleep(0.02)
        assert doc["times"]["status"] == "running" and doc["phases"][0]["path"] == "tick"
    finally:
        profiler.close()
    assert workerfile.read_worker_file(profiler.path)["times"]["status"] == "exited"


class Recorder:
    def __init__(self, fail=()):
        self.calls = []
        self.fail = set(fail)

    def _call(self, name, *args):
        self.calls.append(name)
        if name in self.fail:
            raise RuntimeError(f"{name} failed")

    def start(self):
        self._call("start")

    def stop(self):
        self._call("stop")

    def contribute(self, document):
        self._call("contribute")
        document["samples"] = {"rows": 3}

    def close(self):
        self._call("close")


def test_attachments_are_called_and_their_failures_recorded(tmp_path):
    good, bad = Recorder(), Recorder(fail={"start", "contribute", "close"})
    profiler = Profiler(run_dir=tmp_path, snapshot_interval_s=None)
    profiler.add_attachment(good)
    profiler.add_attachment(bad)
    profiler.add_attachment(object())  # no methods at all: fine
    assert profiler.flush()
    doc = workerfile.read_worker_file(profiler.path)
    assert doc["samples"] == {"rows": 3}
    profiler.close()
    assert good.calls == ["start", "contribute", "stop", "contribute", "close"]
    doc = workerfile.read_worker_file(profiler.path)
    assert any("Recorder.start: RuntimeError: start failed" in e for e in doc["errors"])
    assert any("Recorder.contribute" in e for e in doc["errors"])


def test_hooks_through_the_profiler(tmp_path):
    seen = []
    profiler = Profiler(run_dir=tmp_path, snapshot_interval_s=None)
    profiler.set_watch("iteration", seen.append)
    profiler.set_annotate(lambda n: seen.append(f"+{n}"), lambda n: seen.append(f"-{n}"))
    profiler.set_sync(lambda: seen.append("sync"))
    with profiler.phase("iteration", sync=True):
        pass
    profiler.close()
    assert seen == [1, "+iteration", "sync", "sync", "-iteration"]
    disabled = Profiler(enabled=False)
    disabled.set_sync(lambda: None)  # accepted, does nothing


def test_host_override_is_sanitised_into_the_run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LINEPROFILER_HOST", "../../escape")
    profiler = Profiler(run_dir=tmp_path / "run", snapshot_interval_s=None)
    profiler.close()
    assert tmp_path / "run" / "workers" in profiler.path.parents
    assert only_worker_file(tmp_path / "run") == profiler.path
