"""metadata.json: what each process had available, why not, and the backend window's status."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest
from lp_installed import HAS_VIZTRACER, NVIDIA_DRIVER, ON_A_GPU_HOST, TORCH_HAS_CUDA
from lp_integration_helpers import phases_by_path, worker_documents

from lineprofiler.accounting import Profiler
from lineprofiler.accounting.windows import Backend
from lineprofiler.runfiles import workerfile

CAPABILITIES = {"torch", "torch_cuda", "nvml", "viztracer", "nvtx", "psutil"}


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_metadata_records_what_was_available_and_why_not(tmp_path):
    profiler = Profiler(run_dir=tmp_path, role="learner", snapshot_interval_s=None)
    with profiler.phase("step"):
        pass
    profiler.close()
    run_level = load(tmp_path / "metadata.json")
    own_path = profiler.metadata_path()
    assert own_path == tmp_path / "metadata" / profiler.path.parent.name / ("m" + profiler.path.name[1:])
    own = load(own_path)
    for document in (run_level, own):
        assert document["kind"] == "lineprofiler-metadata"
        assert (document["run_id"], document["pid"], document["role"]) == (profiler.run_id, os.getpid(), "learner")
        assert document["worker_file"] == profiler.path.relative_to(tmp_path).as_posix()
        assert set(document["capabilities"]) == CAPABILITIES
        for name, capability in document["capabilities"].items():
            if not capability["available"]:
                assert capability["unavailable_reason"], name  # every missing piece says why
        assert document["backend"] is None and document["annotate"] == {"requested": False}
        # This test's process may hold torch already (another test imported it).
        assert document["sync"]["mode"] in (None, "pending", "torch.cuda.synchronize" if TORCH_HAS_CUDA else None)
    assert own["final"] is True and run_level["final"] is False  # the own file is rewritten at close


@pytest.mark.skipif(NVIDIA_DRIVER, reason=ON_A_GPU_HOST)
def test_metadata_says_nvml_is_missing_with_the_loaders_reason(tmp_path):
    profiler = Profiler(run_dir=tmp_path, role="learner", snapshot_interval_s=None)
    profiler.close()
    for path in (tmp_path / "metadata.json", profiler.metadata_path()):
        nvml = load(path)["capabilities"]["nvml"]
        assert nvml["available"] is False
        assert nvml["unavailable_reason"].startswith("cannot load NVML (no NVIDIA driver?): ")
        assert "libnvidia-ml.so.1" in nvml["unavailable_reason"]


def test_missing_packages_give_reasons_and_never_raise(run_python, tmp_path):
    run_dir = tmp_path / "run"
    run_python(
        f"""
        import sys
        for name in ("torch", "viztracer", "nvtx"):
            sys.modules[name] = None  # as if not installed
        from lineprofiler.accounting import Profiler
        p = Profiler(run_dir={str(run_dir)!r}, backend="viztracer", backend_window=(1, 3),
                     window_phase="iteration", annotate=True, snapshot_interval_s=None)
        for _ in range(5):
            with p.phase("iteration"), p.phase("forward", sync=True):
                pass
        p.close()
        """
    )
    meta = load(run_dir / "metadata.json")
    blocked = "import of {} is blocked in this process (sys.modules[{!r}] is None)"
    assert meta["capabilities"]["viztracer"]["unavailable_reason"] == blocked.format("viztracer", "viztracer")
    assert meta["capabilities"]["torch"]["unavailable_reason"] == blocked.format("torch", "torch")
    assert meta["backend"]["state"] == "unavailable"
    assert meta["backend"]["unavailable_reason"] == blocked.format("viztracer", "viztracer")
    assert meta["sync"] == {
        "mode": None,
        "available": False,
        "unavailable_reason": "sync=True is a no-op: " + blocked.format("torch", "torch"),
    }
    assert meta["annotate"]["requested"] is True and meta["annotate"]["nvtx"] is None
    assert "no NVTX" in meta["annotate"]["unavailable_reason"]
    assert not (run_dir / "backend").exists()
    (document,) = worker_documents(run_dir)
    phases = phases_by_path(document)
    assert phases["iteration"]["entries"] == 5 and phases["iteration/forward"]["entries"] == 5
    assert phases["iteration/forward"]["sync"] is True
    assert document["backend_window"]["state"] == "unavailable"
    assert document["errors"] == []


def test_an_unwritable_run_dir_is_recorded_not_raised(tmp_path):
    blocker = tmp_path / "run"
    blocker.write_text("a file where the run directory should be")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the worker file's own warning
        profiler = Profiler(run_dir=blocker, backend="viztracer", backend_window=(1, 2), window_phase="step",
                            snapshot_interval_s=None)
    with profiler.phase("step"):
        pass
    # The first snapshot after construction also writes the metadata files: both fail, recorded.
    assert profiler.flush() is False
    # The disk comes back: the next snapshot carries what went wrong before.
    blocker.unlink()
    assert profiler.flush() is True
    errors = workerfile.read_worker_file(profiler.path)["errors"]
    assert any(e.startswith("metadata: ") for e in errors), errors
    assert any(e.startswith("snapshot: ") for e in errors), errors
    profiler.close()
    assert load(profiler.metadata_path())["final"] is True


def test_a_disabled_profiler_writes_no_metadata(tmp_path):
    profiler = Profiler(run_dir=tmp_path, enabled=False, backend="torch", backend_window=(1, 2), window_phase="x",
                        annotate=True)
    with profiler.phase("x", sync=True):
        pass
    profiler.close()
    assert list(tmp_path.iterdir()) == []


def test_every_process_writes_its_own_file_and_metadata_json_names_the_run(run_python, tmp_path):
    run_dir = tmp_path / "run"
    run_python(
        f"""
        import multiprocessing as mp
        from lineprofiler.accounting import Profiler

        def work():
            p = Profiler(role="actor", snapshot_interval_s=None)
            with p.phase("act"):
                pass

        if __name__ == "__main__":
            parent = Profiler(run_dir={str(run_dir)!r}, role="learner", snapshot_interval_s=None)
            with parent.phase("learn"):
                pass
            for method in ("spawn", "fork", "forkserver"):
                child = mp.get_context(method).Process(target=work)
                child.start()
                child.join()
                assert child.exitcode == 0, (method, child.exitcode)
            parent.close()
        """,
        as_file=True,
    )
    workers = workerfile.find_worker_files(run_dir)
    documents = [workerfile.read_worker_file(p) for p in workers]
    assert sorted(d["identity"]["role"] for d in documents) == ["actor"] * 3 + ["learner"]
    assert len({d["identity"]["run_id"] for d in documents}) == 1
    for path, document in zip(workers, documents, strict=True):
        own = load(run_dir / "metadata" / path.parent.name / ("m" + path.name[1:]))
        assert own["worker_file"] == path.relative_to(run_dir).as_posix()
        assert own["pid"] == document["identity"]["pid"] and own["final"] is True
    assert len(list((run_dir / "metadata").rglob("*.json"))) == 4  # one per process, no more
    assert not list(run_dir.rglob(".tmp_*"))  # no temp file left by any writer
    run_level = load(run_dir / "metadata.json")
    assert run_level["run_id"] == documents[0]["identity"]["run_id"]
    # The first process of the run to write its metadata wrote it, and no one replaced it: with
    # the parent's periodic snapshots off, that is the spawn child, which closed first.
    actors = {d["identity"]["pid"]: p for p, d in zip(workers, documents, strict=True)
              if d["identity"]["role"] == "actor"}
    assert run_level["role"] == "actor" and run_level["final"] is False
    assert run_level["worker_file"] == actors[run_level["pid"]].relative_to(run_dir).as_posix()


def test_a_rerun_into_the_same_directory_replaces_metadata_json(run_python, tmp_path):
    run_dir = tmp_path / "run"
    code = f"""
        from lineprofiler.accounting import Profiler
        p = Profiler(run_dir={str(run_dir)!r}, snapshot_interval_s=None)
        print(p.run_id)
        p.close()
        """
    first = run_python(code).stdout.strip()
    second = run_python(code, env={"LINEPROFILER_RUN_ID": "rerun"}).stdout.strip()
    assert first != second == "rerun"
    assert load(run_dir / "metadata.json")["run_id"] == "rerun"
    assert {load(p)["run_id"] for p in (run_dir / "metadata").rglob("*.json")} == {first, "rerun"}


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"backend": "nsys", "backend_window": (1, 2), "window_phase": "it"}, ValueError, "backend must be one of"),
        ({"backend": "torch"}, ValueError, "needs backend_window"),
        ({"backend": "torch", "backend_window": (1, 2)}, ValueError, "needs window_phase"),
        ({"backend": "viztracer", "backend_window": (1, 2), "window_phase": "a/b"}, ValueError, "own name"),
        ({"backend": "viztracer", "backend_window": (1, 2), "window_phase": ""}, ValueError, "own name"),
        ({"backend_window": (1, 2), "window_phase": "it"}, ValueError, "needs a backend"),
        ({"backend": "torch", "backend_window": [1, 2, 3], "window_phase": "it"}, TypeError, "pair of ints"),
        ({"backend": "torch", "backend_window": (1.0, 2), "window_phase": "it"}, TypeError, "pair of ints"),
        ({"backend": "torch", "backend_window": (3, 3), "window_phase": "it"}, ValueError, "start < stop"),
        ({"backend": 3.5, "backend_window": (1, 2), "window_phase": "it"}, TypeError, "backend must be"),
    ],
)
def test_wrong_backend_arguments_raise_before_anything_is_written(tmp_path, kwargs, error, message):
    with pytest.raises(error, match=message):
        Profiler(run_dir=tmp_path, **kwargs)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not HAS_VIZTRACER, reason="viztracer is not installed")
@pytest.mark.parametrize("backend", [Backend.VIZTRACER, "viztracer", "VizTracer"])
def test_the_backend_enum_or_its_string(tmp_path, backend):
    profiler = Profiler(run_dir=tmp_path, backend=backend, backend_window=(5, 6), window_phase="it",
                        snapshot_interval_s=None)
    profiler.close()
    assert profiler.backend == "viztracer"
    assert load(tmp_path / "metadata.json")["backend"]["state"] == "waiting"  # never reached entry 5
