"""Ray started by a framework: a Ray Tune job of several trials (a function trainable), each trial
recording phases with a ``Profiler`` of its own, run the two ways a user runs it:

* ``init_before_tune``: ``lp_ray.init(run_dir, ...)`` starts Ray with the profiler's runtime
  environment and ``Tuner.fit()`` uses that Ray (the user never calls ``ray.init``);
* ``init_after_ray_init``: Ray already runs (the user's own ``ray.init()``, a notebook's
  cluster), then ``lp_ray.init(run_dir)``, then ``Tuner.fit()``: the trials take the run's
  settings from Ray's key-value store.

Three trials on two CPUs, so one trial starts in a new actor after another ended. Tune runs a
function trainable in a thread of its trial actor, where Ray names no task: the trial gives its
role itself. The second flow then also runs a Ray Train job (a ``DataParallelTrainer`` of two
workers, whose actors Train's controller actor creates) into the same run: one Ray job, so the
same settings in the store. The driver program is this file, run as a script by the module's
fixture; the tests read what it saw and the report of the run directory it collected.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.ray,
    # Tune and Train start their processes through the same Ray code on every Python; two Ray
    # starts cost about two minutes, so CI pays them once, on 3.12.
    pytest.mark.skipif(sys.version_info[:2] != (3, 12), reason="Ray Tune and Train are tested on 3.12"),
]

#: One trial per value: its train steps. Three trials, two at a time (one CPU each).
TRIAL_STEPS = (1, 2, 3)
SAMPLES_PER_STEP = 5
TRAIN_WORKERS = 2
TRAIN_STEPS = 4
FLOWS = ("init_before_tune", "init_after_ray_init")
#: What a Profiler constructed outside a process's main thread (Tune's trial thread) records: no
#: SIGTERM flush from that process. Not a missing file; every other caveat fails the test.
THREAD_CAVEAT = "signal handlers not installed: profiler constructed outside the main thread"
#: The driver's exit status where ``ray.tune`` or ``ray.train`` cannot be imported (Ray without its
#: ``tune`` extra, which brings Train's dependencies too, or one of them missing): the tests skip,
#: saying why.
NO_TUNE = 77


def train_trial(config: dict) -> None:
    """The Tune trainable: ``config["steps"]`` train steps, each a phase with a sample count."""
    from ray import tune

    from lineprofiler.accounting import Profiler

    # The block's end is the trial's final snapshot: Tune may end the trial's actor before it exits.
    with Profiler(role="trial") as profiler:
        for step in range(config["steps"]):
            with profiler.phase("train_step"):
                profiler.count("samples", SAMPLES_PER_STEP)
            tune.report({"step": step})
        seen = {"identity": profiler.identity.to_json(), "path": str(profiler.path)}
    tune.report({"step": config["steps"], "seen": json.dumps(seen)})


def train_worker_loop(config: dict) -> None:
    """Ray Train's loop, on each worker: ``config["steps"]`` steps; what it saw goes to a file (one
    host here), named by the worker's world rank."""
    import ray.train

    from lineprofiler.accounting import Profiler

    with Profiler(role="train_worker") as profiler:
        for _ in range(config["steps"]):
            with profiler.phase("train_step"):
                profiler.count("samples", SAMPLES_PER_STEP)
        seen = {"identity": profiler.identity.to_json(), "path": str(profiler.path)}
    rank = ray.train.get_context().get_world_rank()
    (Path(config["seen_dir"]) / f"rank-{rank}.json").write_text(json.dumps(seen))


def run_train_job(work: Path) -> list[dict]:
    """A Ray Train job of TRAIN_WORKERS workers; what each saw, in world-rank order."""
    # Train's own base trainer (TorchTrainer is one): the same controller and worker actors, no torch.
    from ray.train import RunConfig, ScalingConfig
    from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

    seen_dir = work / "train-seen"
    seen_dir.mkdir()
    trainer = DataParallelTrainer(
        train_worker_loop,
        train_loop_config={"steps": TRAIN_STEPS, "seen_dir": str(seen_dir)},
        # Half a CPU each: both fit beside Train's controller on the two CPUs.
        scaling_config=ScalingConfig(num_workers=TRAIN_WORKERS, resources_per_worker={"CPU": 0.5}),
        run_config=RunConfig(storage_path=str(work / "train")),
    )
    result = trainer.fit()
    assert result.error is None, result.error
    return [json.loads((seen_dir / f"rank-{rank}.json").read_text()) for rank in range(TRAIN_WORKERS)]


def scenario(flow: str, work: Path, out: Path) -> None:
    """The driver, as a user writes it for ``flow``."""
    import ray
    from ray import tune
    from ray.experimental import internal_kv

    from lineprofiler.accounting import Profiler
    from lineprofiler.integrations import ray as lp_ray

    work.mkdir(parents=True, exist_ok=True)
    # address="local": a Ray of its own, never one that another program on this machine started.
    ray_args = {"address": "local", "num_cpus": 2, "include_dashboard": False, "object_store_memory": 80 << 20}
    seen: dict = {"flow": flow}
    if flow == "init_before_tune":
        seen["run_id"] = lp_ray.init(work / "run", **ray_args)
    else:
        ray.init(**ray_args)
        seen["run_id"] = lp_ray.init(work / "run")
    seen["job_env_vars"] = dict((ray.get_runtime_context().runtime_env or {}).get("env_vars") or {})
    job = str(ray.get_runtime_context().get_job_id())
    stored = internal_kv._internal_kv_get(f"job/{job}/env", namespace="lineprofiler")
    seen["stored"] = json.loads(stored) if stored else None

    tuner = tune.Tuner(
        tune.with_resources(train_trial, {"cpu": 1}),
        param_space={"steps": tune.grid_search(list(TRIAL_STEPS))},
        tune_config=tune.TuneConfig(num_samples=1),
        run_config=tune.RunConfig(storage_path=str(work / "tune"), verbose=0),
    )
    with Profiler(role="driver") as driver:
        started = time.monotonic()
        with driver.phase("tune_fit"):
            results = tuner.fit()
        seen["fit_s"] = time.monotonic() - started
        seen["trials"] = [
            {"error": repr(r.error) if r.error else None, **json.loads(r.metrics.get("seen") or "{}")}
            for r in results
        ]
        if flow == "init_after_ray_init":
            with driver.phase("train_fit"):
                seen["train_workers"] = run_train_job(work)
    collected = lp_ray.collect()
    seen["collect"] = [node.to_json() for node in collected.nodes]
    seen["collect_caveats"] = collected.caveats
    ray.shutdown()
    out.write_text(json.dumps(seen, indent=1))


# ---------------------------------------------------------------------- the tests


@pytest.fixture(scope="module", params=FLOWS)
def tune_run(request, tmp_path_factory) -> tuple[Path, dict]:
    from .conftest import TIMEOUT_S, clean_env, ray_skip_reason

    reason = ray_skip_reason()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp(f"ray-tune-{request.param}")
    out = folder / "seen.json"
    result = subprocess.run(
        [sys.executable, __file__, request.param, str(folder / "work"), str(out)],
        env=clean_env(), cwd=folder, capture_output=True, text=True, timeout=TIMEOUT_S,
    )
    if result.returncode == NO_TUNE:
        pytest.skip(f"Ray Tune or Train is not importable here ({result.stdout.strip()}): pip install 'ray[tune]'")
    if result.returncode != 0:
        pytest.fail(f"the {request.param} driver failed:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}")
    return folder / "work", json.loads(out.read_text())


def _report(run_dir: Path) -> dict:
    from helpers.cli import run_cli  # here: this file is also the driver script, run without tests/ on sys.path

    result = run_cli("report", "--json", run_dir)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return json.loads(result.stdout)


def test_lp_ray_init_reaches_the_trials_the_way_the_flow_allows(tune_run):
    work, seen = tune_run
    if seen["flow"] == "init_before_tune":
        # Our init started Ray: the variables are in the job's runtime environment, which Tune reused.
        assert seen["job_env_vars"]["LINEPROFILER_RUN_DIR"] == str(work / "run")
        assert seen["stored"] is None
    else:
        # Ray ran before us: the runtime environment is fixed without them; the store holds them.
        assert "LINEPROFILER_RUN_DIR" not in seen["job_env_vars"]
        assert seen["stored"]["LINEPROFILER_RUN_DIR"] == str(work / "run")
    assert seen["run_id"].startswith("ray-") and seen["run_id"].endswith("-01000000")


def test_every_trial_ran_in_its_own_process_inside_the_run(tune_run):
    work, seen = tune_run
    trials = seen["trials"]
    assert [t["error"] for t in trials] == [None] * len(TRIAL_STEPS)
    assert {t["identity"]["run_id"] for t in trials} == {seen["run_id"]}
    assert {t["identity"]["role"] for t in trials} == {"trial"}
    assert len({t["identity"]["pid"] for t in trials}) == len(TRIAL_STEPS)  # Tune reuses no actor by default
    assert sorted(t["identity"]["rank"] for t in trials) == list(range(len(TRIAL_STEPS)))
    for trial in trials:
        assert Path(trial["path"]).is_relative_to(work / "run"), trial["path"]


@pytest.mark.parametrize("tune_run", ["init_after_ray_init"], indirect=True)  # the flow that runs Train
def test_ray_train_workers_join_the_same_run(tune_run):
    work, seen = tune_run
    workers = seen["train_workers"]
    assert {w["identity"]["run_id"] for w in workers} == {seen["run_id"]}
    assert {w["identity"]["role"] for w in workers} == {"train_worker"}
    assert len({w["identity"]["pid"] for w in workers}) == TRAIN_WORKERS
    # Ranks are the job's actors in the order they constructed a Profiler, trials first: one job-wide
    # sequence, not Train's world ranks (which would repeat the trials' 0 and 1 in this run).
    trials = len(TRIAL_STEPS)
    assert sorted(t["identity"]["rank"] for t in seen["trials"]) == list(range(trials))
    assert sorted(w["identity"]["rank"] for w in workers) == list(range(trials, trials + TRAIN_WORKERS))
    for worker in workers:
        assert Path(worker["path"]).is_relative_to(work / "run"), worker["path"]


def test_collect_finds_the_trials_files_in_place(tune_run):
    work, seen = tune_run
    # One host, the default node_run_dir: the node's run directory is the driver's, nothing to copy.
    assert [node["state"] for node in seen["collect"]] == ["same-dir"]
    assert seen["collect_caveats"] == []


def test_the_report_has_one_trial_process_per_trial_and_their_exact_counts(tune_run):
    work, seen = tune_run
    report = _report(work / "run")
    assert report["run"]["run_id"] == seen["run_id"]
    roles = {"trial": len(TRIAL_STEPS), "driver": 1}
    if "train_workers" in seen:
        roles["train_worker"] = TRAIN_WORKERS
    assert report["run"]["roles"] == roles
    found = {}
    for phase in report["dominant"]["phases"]:
        found[(phase["role"], phase["path"])] = (
            phase["entries"],
            {c["name"]: c["total"] for c in phase["counters"]},
        )
    steps = sum(TRIAL_STEPS)
    assert found[("trial", "train_step")] == (steps, {"samples": steps * SAMPLES_PER_STEP})
    assert found[("driver", "tune_fit")][0] == 1
    if "train_workers" in seen:
        steps = TRAIN_WORKERS * TRAIN_STEPS
        assert found[("train_worker", "train_step")] == (steps, {"samples": steps * SAMPLES_PER_STEP})
        assert found[("driver", "train_fit")][0] == 1
    # Nothing missing: the only caveat allowed is the one each trial's thread records.
    unexpected = [c for c in report["caveats"] + report["run"]["caveats"] if THREAD_CAVEAT not in c]
    assert unexpected == []


if __name__ == "__main__":
    try:
        import ray.train  # noqa: F401
        import ray.tune  # noqa: F401
    except ImportError as error:
        print(f"{type(error).__name__}: {error}")
        sys.exit(NO_TUNE)
    scenario(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
