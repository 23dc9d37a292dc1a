"""The role line that names a training step's parts and whether the DataLoader is its bottleneck.

Real programs write the runs: trainer processes with a real accounting ``Profiler`` open
``step`` and under it ``data_wait``, ``forward``, ``backward``, ``optimizer`` and ``zero_grad``
(the names ``auto="torch"`` records) around known sleeps, and fork real ``multiprocessing``
children (as a DataLoader forks its workers on Linux) that make their own ``Profiler`` of role
``dataloader`` and load in ``fetch`` and ``collate`` phases, back to back (saturated) or seldom
(idle). Two runs, written at once:

* ``fed``: ``loader_bound`` (data_wait large, two saturated workers) and ``wait_elsewhere``
  (data_wait large, two idle workers), so each trainer's workers are told apart by parent;
* ``alone``: no DataLoader workers at all, ``no_workers`` (data_wait large) and
  ``compute_bound`` (data_wait empty), as a loop with ``num_workers=0`` has.

One more test runs a real PyTorch loop under ``lineprofiler record --auto torch`` (Python 3.11,
where CI installs torch; skipped elsewhere, saying so).
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import textwrap

import pytest
from lp_installed import HAS_TORCH, NO_TORCH

from helpers.cli import run_cli
from helpers.env import clean_env
from lineprofiler.report.compute.blocks.step_parts import (
    DATA_WAIT_LARGE,
    DATA_WAIT_SMALL,
    WORKERS_IDLE,
    WORKERS_SATURATED,
)

STEPS = 6
#: Per step, the seconds each part sleeps (data_wait 0: entered, empty). A loaded machine
#: wakes sleepers late, so the parts are far apart and only lower bounds are asserted.
FORWARD_S, BACKWARD_S, OPTIMIZER_S, DATA_WAIT_S = 0.010, 0.030, 0.005, 0.040
#: A worker loads this many batches: a saturated one sleeps inside fetch, back to back; an idle
#: one sleeps outside its phases and fetches at once (a late wake-up is then outside too).
BATCHES, FETCH_S, IDLE_PAUSE_S = 40, 0.010, 0.010

TRAINER = textwrap.dedent(
    f"""
    import multiprocessing as mp
    import sys
    import time

    from lineprofiler.accounting import Profiler


    def worker(busy):
        with Profiler(run_dir="profile", role="dataloader") as profiler:
            for _ in range({BATCHES}):
                if not busy:
                    time.sleep({IDLE_PAUSE_S})
                with profiler.phase("fetch"):
                    if busy:
                        time.sleep({FETCH_S})
                profiler.count("samples", 1)
                with profiler.phase("collate"):
                    pass


    def main(role, workers, data_wait_s):
        profiler = Profiler(run_dir="profile", role=role)
        children = [mp.get_context("fork").Process(target=worker, args=(role == "loader_bound",))
                    for _ in range(workers)]
        for child in children:
            child.start()
        for _ in range({STEPS}):
            with profiler.phase("step"):
                with profiler.phase("data_wait"):
                    if data_wait_s:  # sleep(0) would yield the CPU: on a loaded machine, for long
                        time.sleep(data_wait_s)
                with profiler.phase("zero_grad"):
                    pass
                with profiler.phase("forward"):
                    time.sleep({FORWARD_S})
                with profiler.phase("backward"):
                    time.sleep({BACKWARD_S})
                with profiler.phase("optimizer"):
                    time.sleep({OPTIMIZER_S})
        for child in children:
            child.join()
        profiler.close()


    if __name__ == "__main__":
        main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
    """
)

#: (run, role, workers, data_wait seconds) of each trainer.
TRAINERS = (
    ("fed", "loader_bound", 2, DATA_WAIT_S),
    ("fed", "wait_elsewhere", 2, DATA_WAIT_S),
    ("alone", "no_workers", 0, DATA_WAIT_S),
    ("alone", "compute_bound", 0, 0.0),
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Both run directories, their trainers run at once: ``{run: profile dir}``."""
    root = tmp_path_factory.mktemp("step-parts")
    children = []
    for run, role, workers, data_wait in TRAINERS:
        folder = root / run
        folder.mkdir(exist_ok=True)
        (folder / "trainer.py").write_text(TRAINER)
        env = clean_env(LINEPROFILER_RUN_ID=f"steps-{run}")
        command = [sys.executable, "trainer.py", role, str(workers), str(data_wait)]
        children.append(subprocess.Popen(command, cwd=folder, env=env, stderr=subprocess.PIPE, text=True))
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
    return {run: root / run / "profile" for run in ("fed", "alone")}


def report(*args):
    code, out, err = run_cli("report", *args)
    assert code == 0 and err == "", err
    return out


def roles_of(run_dir):
    return {role["name"]: role for role in json.loads(report(run_dir, "--json"))["roles"]}


def step_line(text, role):
    (line,) = [line.strip() for line in text.splitlines() if line.strip().startswith(f"{role} step parts: ")]
    return line


def shown(line):
    """``{part: percent}`` as the line prints them (``<1%``: 0.5)."""
    head = line.split(" — ")[0].split(": ", 1)[1]
    return {name: 0.5 if value == "<1" else int(value) for name, value in re.findall(r"(\w+) (<1|\d+)%", head)}


#: Each part's sleep per step: its least wall time.
SLEEPS = {"data_wait": DATA_WAIT_S, "forward": FORWARD_S, "backward": BACKWARD_S, "optimizer": OPTIMIZER_S}


def test_saturated_workers_make_the_loader_the_bottleneck_and_idle_ones_point_elsewhere(runs):
    text = report(runs["fed"])
    roles = roles_of(runs["fed"])
    for role, verdict in (("loader_bound", "loader_bound"), ("wait_elsewhere", "wait_elsewhere")):
        steps = roles[role]["step_parts"]
        assert steps["paths"] == ["step"] and steps["steps"] == STEPS and steps["verdict"] == verdict
        parts = {p["name"]: p for p in steps["parts"]}
        assert list(parts) == ["data_wait", "forward", "backward", "optimizer", "zero_grad"]
        # Each share is its part's wall time over the steps', each wall at least its sleeps.
        for name, sleep in SLEEPS.items():
            assert parts[name]["share"] == parts[name]["wall_ns"] / steps["wall_ns"]
            assert parts[name]["wall_ns"] >= STEPS * sleep * 1e9
        assert steps["wall_ns"] >= sum(p["wall_ns"] for p in parts.values())
        assert parts["data_wait"]["share"] >= DATA_WAIT_LARGE and parts["zero_grad"]["share"] < 0.005
        assert sum(p["share"] for p in parts.values()) + steps["other"] == pytest.approx(1.0)
        workers = steps["workers"]
        # Each trainer's own two children, told apart from the other trainer's by parent pid.
        assert workers["role"] == "dataloader" and workers["processes"] == workers["found"] == 2
        assert workers["least"] <= workers["busy"] <= workers["most"]
        assert workers["busy"] == workers["loading_ns"] / workers["lifetime_ns"]
        line = step_line(text, role)
        # Rounded to whole percents; zero_grad, empty, reads <1%; other only where it rounds to 1%.
        shares = {name: part["share"] for name, part in parts.items()}
        if steps["other"] >= 0.005:
            shares["other"] = steps["other"]
        expected = {name: 0.5 if 0 < share < 0.005 else round(share * 100) for name, share in shares.items()}
        assert list(shown(line).items()) == list(expected.items()) and expected["zero_grad"] == 0.5
    loaded = roles["loader_bound"]["step_parts"]["workers"]
    assert loaded["busy"] >= WORKERS_SATURATED
    assert " — the loader is the bottleneck: 2 dataloader workers, " in step_line(text, "loader_bound")
    assert "(more num_workers, or a cheaper __getitem__)" in step_line(text, "loader_bound")
    idle = roles["wait_elsewhere"]["step_parts"]["workers"]
    # Each idle worker sleeps outside its phases and fetches at once.
    assert idle["most"] < WORKERS_IDLE
    assert " — the workers are not the bottleneck: 2 dataloader workers, " in step_line(text, "wait_elsewhere")
    # The split of step says what the step line says: it is not printed beside it.
    assert "split of step" not in text
    assert roles["dataloader"]["step_parts"] is None and "dataloader step parts" not in text


def test_without_workers_the_loader_is_not_measured_and_compute_names_its_leading_part(runs):
    text = report(runs["alone"])
    roles = roles_of(runs["alone"])
    assert "dataloader" not in roles
    waiting = roles["no_workers"]["step_parts"]
    assert waiting["verdict"] == "no_workers" and waiting["workers"] is None
    assert waiting["workers_reason"] == "no dataloader workers were recorded"
    assert step_line(text, "no_workers").endswith(
        " — the loader is not measured: no dataloader workers were recorded; with num_workers=0 the "
        "batches are loaded inside data_wait, in this process"
    )
    computing = roles["compute_bound"]["step_parts"]
    # The part that leads is the largest but data_wait (backward sleeps longest, but a loaded
    # machine wakes sleepers so late that another can overtake it).
    assert computing["parts"][0]["name"] == "data_wait" and computing["parts"][0]["share"] < DATA_WAIT_SMALL
    leading = max(computing["parts"][1:], key=lambda p: p["share"])
    assert computing["verdict"] == "compute_bound" and computing["leading"] == leading["name"]
    assert step_line(text, "compute_bound").endswith(
        f" — compute-bound: {leading['name']} leads ({round(leading['share'] * 100)}%); workers not measured: "
        "no dataloader workers were recorded"
    )


def test_the_html_page_says_what_the_text_says(runs, tmp_path):
    text = report(runs["fed"])
    page = tmp_path / "report.html"
    report(runs["fed"], "--html", page)
    drawn = page.read_text()
    paragraph = re.search(r'<p data-step-parts="loader_bound">([^<]*)</p>', drawn)
    assert paragraph is not None
    assert html.unescape(paragraph.group(1)) == step_line(text, "loader_bound")
    assert 'data-split="step"' not in drawn


@pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)
def test_a_torch_loop_recorded_with_auto_torch_names_its_step_parts(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(
        """
        import time
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, Dataset

        class Slow(Dataset):
            def __len__(self):
                return 32

            def __getitem__(self, i):
                time.sleep(0.01)
                return torch.full((8,), float(i)), torch.zeros(1)

        if __name__ == "__main__":
            model = nn.Linear(8, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            for x, y in DataLoader(Slow(), batch_size=4, num_workers=2, multiprocessing_context="fork"):
                opt.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                opt.step()
        """
    ))
    recorded = subprocess.run(
        [sys.executable, "-m", "lineprofiler", "record", "-d", "profile", "--auto", "torch", "train.py"],
        cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=300,
    )
    assert recorded.returncode == 0, recorded.stderr
    steps = roles_of(tmp_path / "profile")["train"]["step_parts"]
    parts = {p["name"]: p["share"] for p in steps["parts"]}
    assert steps["steps"] == 8 and list(parts) == ["data_wait", "forward", "backward", "optimizer", "zero_grad"]
    # The workers sleep 40 ms a batch; the step computes in well under a millisecond.
    assert parts["data_wait"] >= DATA_WAIT_LARGE
    # The DataLoader's forked workers, found as children of the trainer.
    assert steps["workers"]["processes"] == 2 and steps["workers"]["busy"] > WORKERS_IDLE
    line = step_line(report(tmp_path / "profile"), "train")
    assert line.startswith("train step parts: data_wait ") and "2 dataloader workers, " in line
