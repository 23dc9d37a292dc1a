"""Connect a profiler's optional pieces to its core: GPU sync, annotation, a backend window,
the GPU facts and the resource sampler. A failure is recorded in the worker file, never raised.

Imported by an enabled profiler only: a disabled one never loads the GPU and window modules,
and a profiler without ``backend=`` or ``annotate=True`` never loads the window module.
"""

from __future__ import annotations

from . import gpu
from .sampling import ResourceSampler

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from .profiler import Profiler


def _failed(profiler: Profiler, what: str, error: Exception) -> None:
    profiler._record_error(f"{what}: {type(error).__name__}: {error}")


def wire(profiler: Profiler) -> None:
    """Install the hooks the profiler's arguments ask for, before its start file is written.

    * ``set_sync(gpu.make_sync())``: None (no cost at all) unless torch is installed; a
      pending check when it is installed but not imported yet.
    * ``annotate=True``: a :class:`gpu.Annotator`, combined with the window's hooks.
    * ``backend=...``: a :class:`.trace_window.Window` (torch, viztracer) or a
      :class:`~.lines_window.LinesWindow` (lines) watching ``window_phase``, attached so that it
      is cut and written at exit and restarted in a fork child.
    * a :class:`gpu.GpuAttachment` (VRAM where the user's torch runs CUDA; NVML facts).
    """
    try:
        profiler._sync_fn = gpu.make_sync()
        profiler.set_sync(profiler._sync_fn)
    except Exception as error:
        _failed(profiler, "sync hook", error)
    if profiler.backend is not None or profiler.annotate:
        _window_and_annotation(profiler)
    try:
        profiler.add_attachment(gpu.GpuAttachment())
    except Exception as error:
        _failed(profiler, "GPU attachment", error)


def _window_and_annotation(profiler: Profiler) -> None:
    """``annotate=True`` and ``backend=...``: the annotator, the window and their phase hooks."""
    from . import capabilities, trace_window
    from .backends import Backend
    from .identity import resolve_host

    if profiler.annotate:
        try:
            profiler._annotator = gpu.Annotator()
        except Exception as error:
            _failed(profiler, "annotate", error)
    if profiler.backend is not None and profiler.backend_window is not None and profiler.window_phase is not None:
        try:
            if profiler.backend == Backend.LINES.value:
                from .lines_window import LinesWindow  # loads the line layer: only when asked for

                profiler.window = LinesWindow(
                    profiler, profiler.backend_window, profiler.window_phase, project=profiler.lines_project
                )
            else:
                profiler.window = trace_window.Window(
                    profiler.backend,
                    profiler.run_dir,
                    profiler.backend_window,
                    profiler.window_phase,
                    host=resolve_host(),
                )
        except Exception as error:
            _failed(profiler, "backend window", error)
        if profiler.window is not None:
            if profiler.window.state != "unavailable":
                profiler.set_watch(profiler.window_phase, profiler.window.on_entry)
            profiler.add_attachment(profiler.window)  # also when unavailable: the worker file says why
    annotator = profiler._annotator
    if annotator is not None and annotator.nvtx_source is None and not capabilities.torch().available:
        # Neither NVTX nor a torch that could ever be imported: hooks would only cost time.
        annotator = None
    # A lines window names no phases in a trace: only a torch or VizTracer window takes hooks.
    window = profiler.window if isinstance(profiler.window, trace_window.Window) else None
    try:
        enter, exit_ = trace_window.annotate_hooks(annotator, window)
        if enter is not None or exit_ is not None:
            profiler.set_annotate(enter, exit_)
    except Exception as error:
        _failed(profiler, "annotate hooks", error)


def attach_sampler(profiler: Profiler) -> None:
    """The resource sampler (RSS, /proc I/O, NVML): a native thread whose rows each snapshot
    appends beside the worker file. ``sample_interval_s=None`` leaves it out."""
    if profiler.sample_interval_s is None:
        return
    try:
        sampler = ResourceSampler(
            profiler._run_dir, interval_s=profiler.sample_interval_s, timeline_hz=profiler.timeline_hz
        )
    except Exception as error:  # the environment never makes construction raise
        profiler._record_error(f"resource sampler not started: {type(error).__name__}: {error}")
        return
    profiler.add_attachment(sampler)
