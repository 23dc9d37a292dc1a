"""SimWorker's documents cannot drift from real worker files: same keys, at every level.

The report's tests build their runs with ``SimWorker`` (tests/report/builders.py), so that every
number can be predicted from the durations a test chose. Here a file written by a real
``Profiler`` (nested, io=True, counted and open phases, the sampler, NVML through the test stub)
is the reference: a key the profiler adds, renames or drops fails this test until the builders
follow, so the report's tests (and the fuzz test, which mutates every key) keep reading what
users' files hold.
"""

import json

from lp_report_builders import MS, SimWorker, actor_loop, gpu_document, key_paths, key_shape, off_cpu_split

from lineprofiler.report.read.merge import load_run


def simulated_file(tmp_path):
    sim = SimWorker("actor")
    actor_loop(sim, 3, mcts_ns=10 * MS, env_ns=1 * MS)
    with sim.phase("checkpoint", io=True):
        sim.work(1 * MS)
    sim.count("episodes")
    sim.open("serve")
    sim.wait(50 * MS)
    split = off_cpu_split([{"path": "iteration/self_play/mcts", "elapsed_ns": 30 * MS, "on_cpu_ns": 20 * MS,
                            "runqueue_ns": 5 * MS, "throttled_ns": 0, "blocked_ns": 5 * MS}])
    samples = sim.write_samples(tmp_path, {"rss_bytes": [10**6, 2 * 10**6], "gpu0_busy": [10, 20],
                                           "gpu0_mine": [-1, 5]}, off_cpu=split)
    path = sim.write(tmp_path, samples=samples, gpu=gpu_document(devices=[0]))
    return path, json.loads(path.read_bytes())


def test_simworker_documents_have_every_key_a_real_worker_file_has(tmp_path, real_document):
    _, simulated = simulated_file(tmp_path)
    real, sim = key_paths(key_shape(real_document)), key_paths(key_shape(simulated))
    lacking, extra = sorted(real - sim), sorted(sim - real)
    assert not lacking, f"keys real files have and SimWorker's lack: {lacking}"
    assert not extra, f"keys SimWorker writes that real files do not have: {extra}"
    # The same columns too, in the same order: the sampler's and then NVML's.
    assert simulated["samples"]["columns"] == real_document["samples"]["columns"]


def test_key_shape_sees_a_key_missing_at_any_depth(real_document):
    shape = key_shape(real_document)
    for path in ("identity.run_id_source", "phases[].open_self_ns", "samples.gpu.devices", "gpu.nvml.devices[].name"):
        assert path in key_paths(shape)
    damaged = json.loads(json.dumps(real_document))
    del damaged["phases"][0]["cpu_missing"]  # one phase of several: the union still has it
    assert "phases[].cpu_missing" in key_paths(key_shape(damaged))
    for phase in damaged["phases"]:
        phase.pop("cpu_missing", None)
    assert "phases[].cpu_missing" not in key_paths(key_shape(damaged))


def test_open_phases_are_simulated_as_the_recorder_reports_them(tmp_path):
    path, simulated = simulated_file(tmp_path)
    serve = next(p for p in simulated["phases"] if p["path"] == "serve")
    opened = (serve["entries"], serve["open_entries"], serve["open_ns"], serve["open_self_ns"])
    assert opened == (0, 1, 50 * MS, 50 * MS)
    assert serve["cpu_ns"] is None and serve["min_ns"] is None and serve["hist"] == []
    # The report reads it as it reads a real file's open phase.
    run = load_run(path.parents[2])
    assert run.roles["actor"].phases["serve"].open_entries == 1
