"""``lineprofiler record`` and ``auto="torch"``: a program with no profiler in it, run as a user
runs it, recorded into a run directory that ``lineprofiler report`` reads.

The torch tests use the CPU build of torch (installed for Python 3.11 only; elsewhere they skip
saying so): a small MLP, a Dataset, a DataLoader with 2 forked workers, 5 optimizer steps and a
``torch.save``, with no phase() call anywhere.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from lp_installed import HAS_TORCH, NO_TORCH
from lp_integration_helpers import phases_by_path, worker_documents

from helpers.cli import run_cli, run_cli_process
from helpers.env import clean_env
from lineprofiler.runfiles.livefile import read_live

SPAWNING = """
import multiprocessing as mp
import sys

def child(n):
    sys.exit(n)

if __name__ == "__main__":
    children = [mp.get_context("spawn").Process(target=child, args=(n,)) for n in (0, 5)]
    for process in children:
        process.start()
    for process in children:
        process.join()
    print("children", [process.exitcode for process in children])
    print("argv", sys.argv[1:])
    sys.exit(int(sys.argv[1]))
"""

TRAIN = """
import sys
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

SAMPLES, BATCH = 40, 8

class Ramp(Dataset):
    def __len__(self):
        return SAMPLES

    def __getitem__(self, i):
        x = torch.full((8,), i / SAMPLES)
        return x, x.sum(dim=0, keepdim=True)

def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    steps = 0
    for x, y in DataLoader(Ramp(), batch_size=BATCH, num_workers=2, multiprocessing_context=sys.argv[2]):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        steps += 1
    torch.save(model.state_dict(), sys.argv[1])
    print("steps", steps, "loss", round(float(loss), 6))

if __name__ == "__main__":  # a spawned worker imports this file
    main()
"""


def _plain(script: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *args], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=300
    )


def run_dir_file(run_dir: Path, name: str) -> Path:
    (path,) = run_dir.glob(f"workers/*/{name}")
    return path


def _by_role(run_dir: Path) -> dict[str, list[dict]]:
    roles: dict[str, list[dict]] = {}
    for document in worker_documents(run_dir):
        roles.setdefault(document["identity"]["role"], []).append(document)
    return roles


def test_record_runs_the_program_as_python_does_and_records_its_spawned_children(tmp_path: Path) -> None:
    script = tmp_path / "spawner.py"
    script.write_text(SPAWNING)
    plain = _plain(script, "3", "x", cwd=tmp_path)
    done = run_cli_process("record", "-d", tmp_path / "run", script, "3", "x", cwd=tmp_path, timeout=300)
    assert (done.returncode, done.stdout) == (plain.returncode, plain.stdout) == (3, plain.stdout)
    assert "children [0, 5]" in done.stdout and "argv ['3', 'x']" in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"lineprofiler: recorded into {tmp_path / 'run'} (lineprofiler report {tmp_path / 'run'})"
    roles = _by_role(tmp_path / "run")
    # The program (role: its stem) and both spawned children, one run.
    assert list(roles) == ["spawner"] and len(roles["spawner"]) == 3, roles.keys()
    assert len({d["identity"]["run_id"] for d in roles["spawner"]}) == 1


def test_record_passes_on_an_uncaught_exception_and_bad_input_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text("print('before')\nraise RuntimeError('boom')\n")
    done = run_cli_process("record", "-d", tmp_path / "run", "--role", "r", script, cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == "before\n"
    assert "RuntimeError: boom" in done.stderr and "lineprofiler/" not in done.stderr.split("RuntimeError")[0]
    assert list(_by_role(tmp_path / "run")) == ["r"]
    missing = run_cli("record", tmp_path / "nope.py")
    assert missing.code == 2 and len(missing.err.strip().splitlines()) == 1 and "nope.py" in missing.err
    nothing = run_cli("record", "--auto", "torch")
    assert nothing.code == 2 and "give a script" in nothing.err
    helped = run_cli("record", "--help")
    assert helped.code == 0 and "--auto {torch}" in helped.out and "--role ROLE" in helped.out


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_record_ends_by_the_signal_that_ends_the_program(tmp_path: Path, signum: int) -> None:
    script = tmp_path / "sleeper.py"
    script.write_text("import time\nprint('up', flush=True)\ntime.sleep(60)\n")
    statuses = []
    for command in ([sys.executable, str(script)], [sys.executable, "-m", "lineprofiler", "record", str(script)]):
        process = subprocess.Popen(command, cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None and process.stdout.readline() == "up\n"
        process.send_signal(signum)
        process.communicate(timeout=60)
        statuses.append(process.returncode)
    assert statuses == [-signum, -signum]
    assert list(_by_role(tmp_path / "profile")) == ["sleeper"]


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_record_auto_torch_records_a_plain_training_script(tmp_path: Path, start: str) -> None:
    # fork: the workers keep the trainer's profiler; spawn: they start one from the environment.
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    plain = _plain(script, str(tmp_path / "plain.pt"), start, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    done = run_cli_process(
        "record", "-d", tmp_path / "run", "--auto", "torch", script, str(tmp_path / "plain.pt"), start,
        cwd=tmp_path, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == plain.stdout and done.stdout.startswith("steps 5 ")
    roles = _by_role(tmp_path / "run")
    assert sorted(roles) == ["dataloader", "train"] and len(roles["dataloader"]) == 2 and len(roles["train"]) == 1
    (trainer,) = roles["train"]
    phases = phases_by_path(trainer)
    entries = {path: phase["entries"] for path, phase in phases.items()}
    for part in ("step", "step/data_wait", "step/forward", "step/backward", "step/optimizer", "step/zero_grad"):
        assert entries.get(part) == 5, entries
    assert entries.get("checkpoint") == 1 and phases["checkpoint"]["io"], entries
    assert trainer["repairs"]["mismatched_exits"] == 0 and trainer["auto_torch"]["errors"] == 0
    fetched = sum(phases_by_path(d)["fetch"]["entries"] for d in roles["dataloader"])
    samples = sum(c["total"] for d in roles["dataloader"] for c in d["counters"] if c["name"] == "samples")
    collated = sum(phases_by_path(d)["collate"]["entries"] for d in roles["dataloader"])
    assert (fetched, samples, collated) == (40, 40, 5)
    for worker in roles["dataloader"]:
        assert worker["errors"] == [] and worker["auto_torch"]["failed"] == []
        live = read_live(run_dir_file(tmp_path / "run", worker["live_file"]))
        assert live.identity["role"] == "dataloader"  # what a killed worker leaves says its role too
    report = run_cli("report", tmp_path / "run", "--json", "--no-samples")
    assert report.code == 0, report.err
    named = {role["name"]: role["processes"] for role in json.loads(report.out)["roles"]}
    assert named == {"train": 1, "dataloader": 2}


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_auto_torch_in_code_nests_under_the_programs_phases_and_removes_its_hooks(tmp_path: Path) -> None:
    # The program's own phase opens after the data wait and holds the optimizer step: the step
    # cannot end inside it, so it ends at the next data wait, and nothing is cut.
    code = f"""
import torch
from torch import nn
from lineprofiler.accounting import Profiler

import torch._dynamo  # before the hooks: torch.compile then traces into them
p = Profiler({str(tmp_path / "run")!r}, "trainer", auto="torch")
def hooked():
    import torch.distributed as dist
    optim = torch.optim.Optimizer
    return (torch.save, torch.nn.Module.__call__, torch.autograd.backward, optim.zero_grad, dist.all_reduce)
originals = hooked()
model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(12, 4)), batch_size=4)
with p.phase("epoch"):
    for (x,) in data:
        with p.phase("train_step"):
            model(x).sum().backward()
            opt.step()
for features in (5, 4):  # a forward that raises is closed, and the next is counted
    try:
        model(torch.ones(2, features))
    except RuntimeError:
        pass
from torch._dynamo.utils import counters
compiled = torch.compile(lambda x: model(x).sum(), backend="eager")
for _ in range(2):  # traced code: the hooks step aside rather than break the graph
    compiled(torch.ones(2, 4))
p.close()
restored = hooked()
print(all(a is b for a, b in zip(originals, restored)) is False, getattr(torch.save, "__wrapped__", None) is None)
print("graph_breaks", sum(counters["graph_break"].values()))
"""
    done = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "graph_breaks", "0"]  # wrapped while on, torch's own after
    (document,) = worker_documents(tmp_path / "run")
    entries = {path: phase["entries"] for path, phase in phases_by_path(document).items()}
    assert entries["epoch"] == 1 and entries["epoch/step"] == 3, entries
    assert entries["epoch/step/data_wait"] == 3 and entries["epoch/step/train_step"] == 3
    assert entries["epoch/step/train_step/forward"] == 3 and entries["epoch/step/train_step/optimizer"] == 3
    # After the epoch the two forwards open a step of their own (no optimizer step: close ends it).
    assert entries["step/forward"] == 2 and entries["step"] == 1
    assert document["repairs"]["mismatched_exits"] == 0 and document["repairs"]["stale_exits"] == 0


def test_auto_takes_torch_only() -> None:
    from lineprofiler.accounting import Profiler

    with pytest.raises(ValueError, match="auto must be None or one of 'torch'"):
        Profiler(enabled=False, auto="jax")


@pytest.mark.skipif(HAS_TORCH, reason="torch is installed here: the hooks go in")
def test_auto_torch_without_torch_says_why_in_the_worker_file(tmp_path: Path) -> None:
    from lineprofiler.accounting import Profiler

    with Profiler(tmp_path / "run", "main", auto="torch", sample_interval_s=None) as profiler:
        with profiler.phase("work"):
            pass
    (document,) = worker_documents(tmp_path / "run")
    assert document["auto_torch"]["hooks"] == []
    assert document["auto_torch"]["unavailable_reason"] == "auto='torch': torch is not installed for this interpreter"
    assert [p["path"] for p in document["phases"]] == ["work"]


def test_record_runs_a_module_as_python_m_does(tmp_path: Path) -> None:
    package = tmp_path / "trainer_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text("import sys\nprint('module', sys.argv[1:])\nsys.exit(4)\n")
    plain = subprocess.run(
        [sys.executable, "-m", "trainer_pkg", "a"], cwd=tmp_path, env=clean_env(), capture_output=True, text=True
    )
    done = run_cli_process("record", "-d", tmp_path / "run", "-m", "trainer_pkg", "a", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (plain.returncode, plain.stdout) == (4, "module ['a']\n")
    assert list(_by_role(tmp_path / "run")) == ["trainer_pkg"]  # a package's role: its name


GPU_WIRING = """
import sys
import torch
from torch import nn

from lineprofiler.accounting import Profiler

built_with_cuda = torch.cuda._is_compiled
if sys.argv[2] == "cuda":
    torch.cuda._is_compiled = lambda: True  # a CUDA build, while the hooks go in
with Profiler(sys.argv[1], "trainer", auto="torch", sample_interval_s=None) as profiler:
    torch.cuda._is_compiled = built_with_cuda  # torch's own code asks it too
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        model(torch.ones(2, 4)).sum().backward()
        opt.step()
"""


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
@pytest.mark.parametrize("build", ["cpu", "cuda"])
def test_auto_torch_asks_for_gpu_time_only_where_torch_has_cuda(tmp_path: Path, build: str) -> None:
    script = tmp_path / "wiring.py"
    script.write_text(GPU_WIRING)
    done = _plain(script, str(tmp_path / "run"), build, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (document,) = worker_documents(tmp_path / "run")
    assert {p["path"] for p in document["phases"]} >= {"step", "step/forward", "step/backward", "step/optimizer"}
    reason = document["gpu"]["phase_time"]["unavailable_reason"]
    if build == "cpu":
        assert reason == "no phase(..., gpu=True) was entered in this process"
    else:
        # The parts asked for GPU time; the timer, asking torch itself, found no CUDA in it.
        assert reason == "no CUDA device: this torch is built without CUDA"
