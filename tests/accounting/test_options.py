"""One set of argument checks: Profiler and trace_window.Window refuse the same things the same way."""

from __future__ import annotations

import pytest

from lineprofiler.accounting import Profiler
from lineprofiler.accounting.windows import Backend
from lineprofiler.accounting.windows.trace_window import Window

BAD_BACKENDS = [("nsys", ValueError), (3, TypeError), (3.5, TypeError), (b"torch", TypeError)]
BAD_WINDOWS = [
    ((0, 5), ValueError), ((5, 5), ValueError), ((6, 5), ValueError), (("1", 2), TypeError), ((1.0, 2), TypeError),
    ((True, 3), TypeError), ((1,), TypeError), ((1, 2, 3), TypeError), (5, TypeError),
]
BAD_PHASES = [("", ValueError), ("a/b", ValueError), (3, TypeError)]


def _raised(call) -> type[BaseException] | None:
    try:
        call()
    except (TypeError, ValueError) as error:
        return type(error)
    return None


@pytest.mark.parametrize("backend, error", BAD_BACKENDS)
def test_a_bad_backend(tmp_path, backend, error):
    assert _raised(lambda: Profiler(tmp_path, backend=backend, backend_window=(1, 2), window_phase="it")) is error
    assert _raised(lambda: Window(backend, tmp_path, (1, 2), "it")) is error
    assert _raised(lambda: Backend.parse(backend)) is error
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("window, error", BAD_WINDOWS)
def test_a_bad_window(tmp_path, window, error):
    assert _raised(lambda: Profiler(tmp_path, backend="viztracer", backend_window=window, window_phase="it")) is error
    assert _raised(lambda: Window("viztracer", tmp_path, window, "it")) is error
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("phase, error", BAD_PHASES)
def test_a_bad_window_phase(tmp_path, phase, error):
    assert _raised(lambda: Profiler(tmp_path, backend="viztracer", backend_window=(1, 2), window_phase=phase)) is error
    assert _raised(lambda: Window("viztracer", tmp_path, (1, 2), phase)) is error
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("backend", ["torch", "TORCH", " viztracer ", Backend.TORCH, "none", "", None])
def test_good_backends_agree(tmp_path, backend):
    profiler = Profiler(tmp_path, enabled=False, backend=backend,
                        backend_window=None if Backend.parse(backend) is None else (1, 2), window_phase="it")
    expected = Backend.parse(backend)
    assert profiler.backend == (None if expected is None else expected.value)


# ---- backend="lines"


@pytest.mark.parametrize("window, error", BAD_WINDOWS)
def test_a_bad_lines_window(tmp_path, window, error):
    assert _raised(lambda: Profiler(tmp_path, backend="lines", backend_window=window, window_phase="it")) is error
    assert list(tmp_path.iterdir()) == []


def test_lines_needs_its_window_and_phase(tmp_path):
    with pytest.raises(ValueError, match="backend='lines' needs backend_window"):
        Profiler(tmp_path, backend="lines")
    with pytest.raises(ValueError, match="backend='lines' needs window_phase"):
        Profiler(tmp_path, backend="lines", backend_window=(1, 2))
    with pytest.raises(ValueError, match="backend='lines' runs in a lines_window.LinesWindow"):
        Window("lines", tmp_path, (1, 2), "it")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "backend, project, error, message",
    [
        ("lines", 3, TypeError, "lines_project must be a str, a path or None"),
        ("lines", b"/tmp", TypeError, "lines_project must be a str, a path or None"),
        ("lines", "", ValueError, "lines_project must name a folder"),
        ("lines", "does/not/exist", ValueError, "lines_project must be an existing folder"),
        ("viztracer", ".", ValueError, "lines_project needs backend='lines'"),
        (None, ".", ValueError, "lines_project needs backend='lines'"),
    ],
)
def test_a_bad_lines_project(tmp_path, backend, project, error, message):
    run_dir = tmp_path / "run"
    window = None if backend is None else (1, 2)
    with pytest.raises(error, match=message):
        Profiler(run_dir, backend=backend, backend_window=window, window_phase="it", lines_project=project)
    assert not run_dir.exists()


def test_a_good_lines_project_is_resolved(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    profiler = Profiler(tmp_path / "run", enabled=False, backend="lines", backend_window=(1, 2), window_phase="it",
                        lines_project=tmp_path / "link")
    assert profiler.backend == "lines" and profiler.lines_project == str((tmp_path / "real").resolve())
