"""The Ray integration where no Ray cluster runs: what it says without Ray, what identity asks of it,
and its naming rules."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from .conftest import clean_env


def _python(code: str, tmp_path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=clean_env(), cwd=tmp_path,
        capture_output=True, text=True, timeout=120,
    )


def test_without_ray_the_import_says_what_to_install(tmp_path):
    result = _python(
        """
        import sys
        sys.modules["ray"] = None  # as if Ray were not installed
        import lineprofiler.integrations.ray
        """,
        tmp_path,
    )
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last == "ImportError: lineprofiler.integrations.ray needs Ray: pip install 'with-line-profiler[ray]'"


def test_a_profiler_never_loads_the_integration_where_ray_is_not_imported(tmp_path):
    result = _python(
        """
        import json, sys
        from lineprofiler.accounting import Profiler
        with Profiler(run_dir="profile") as p:
            pass
        print(json.dumps([p.identity.run_id_source, "ray" in sys.modules,
                          "lineprofiler.integrations.ray" in sys.modules]))
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["generated", False, False]


def test_a_blocked_ray_import_does_not_break_a_profiler(tmp_path):
    result = _python(
        """
        import sys
        sys.modules["ray"] = None
        from lineprofiler.accounting import Profiler
        with Profiler(run_dir="profile") as p:
            pass
        print(p.identity.run_id_source, p.identity.role)
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["generated", "main"]


def test_ray_imported_but_not_started_changes_nothing(tmp_path, needs_ray):
    result = _python(
        """
        import ray
        from lineprofiler.accounting import Profiler
        with Profiler(run_dir="profile") as p:
            pass
        print(p.identity.run_id_source, p.identity.role, p.identity.rank)
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["generated", "main", "None"]


def test_init_refuses_a_ray_started_without_the_profiler_environment(tmp_path, needs_ray):
    result = _python(
        """
        import ray
        from lineprofiler.integrations import ray as lp_ray
        ray.is_initialized = lambda: True  # a Ray the caller started with plain ray.init()
        ray.get_runtime_context = lambda: type("C", (), {"runtime_env": {"env_vars": {}}})()
        try:
            lp_ray.init("profile")
        except RuntimeError as error:
            print(error)
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "runtime_env=lp_ray.runtime_env(run_dir)" in result.stdout


@pytest.fixture
def lp_ray(needs_ray):
    from lineprofiler.integrations import ray as module

    return module


def test_run_id_from_session_and_job(lp_ray):
    assert lp_ray.run_id_from("session_2026-11-30_09-11-20_379609_14102", "01000000") == (
        "ray-20261130T091120.379609-14102-01000000"
    )
    assert lp_ray.run_id_from("odd", "02000000") == "ray-odd-02000000"


def _node(node_id: str, host: str, ip: str, alive: bool = True) -> dict:
    return {"NodeID": node_id, "NodeManagerHostname": host, "NodeManagerAddress": ip, "Alive": alive}


def test_host_label_is_the_host_name_then_the_address_then_both_with_the_node_id(lp_ray):
    a, b, c = "a" * 56, "b" * 56, "c" * 56
    assert lp_ray.host_label(a, [_node(a, "n1", "10.0.0.1"), _node(b, "n2", "10.0.0.2")]) == "n1"
    # containers that all call themselves "ray-worker"
    assert lp_ray.host_label(a, [_node(a, "w", "10.0.0.1"), _node(b, "w", "10.0.0.2")]) == "10.0.0.1"
    # several nodes on one machine
    assert lp_ray.host_label(a, [_node(a, "vm", "10.0.0.1"), _node(b, "vm", "10.0.0.1")]) == "vm-aaaaaaaa"
    # a node that left does not rename the live ones
    assert lp_ray.host_label(a, [_node(a, "vm", "10.0.0.1"), _node(c, "vm", "10.0.0.1", alive=False)]) == "vm"
    assert lp_ray.host_label(a, [_node(b, "vm", "10.0.0.1")]) is None


def test_runtime_env_carries_the_run_dir_and_passes_a_fixed_run_id_on(lp_ray, tmp_path):
    env = lp_ray.runtime_env("profile", env={})["env_vars"]
    assert env["LINEPROFILER_RUN_DIR"] == str(tmp_path / "profile") or env["LINEPROFILER_RUN_DIR"].endswith("profile")
    assert env["LINEPROFILER_PROFILE"] == "1"
    assert env["LINEPROFILER_RUN_ID"] == ""  # empty: a value a node inherited must not split the run
    fixed = lp_ray.runtime_env("p", node_run_dir="${SCRATCH}/p", env={"LINEPROFILER_RUN_ID": "run42",
                                                                       "LINEPROFILER_PROFILE": "0"})["env_vars"]
    assert fixed == {"LINEPROFILER_RUN_DIR": "${SCRATCH}/p", "LINEPROFILER_PROFILE": "0",
                     "LINEPROFILER_RUN_ID": "run42", "LINEPROFILER_ATTEMPT": "0"}
