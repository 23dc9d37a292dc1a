"""Connect a profiler's optional pieces to its core: GPU sync, annotation, a backend window,
the GPU facts and the resource sampler. A failure is recorded in the worker file, never raised.

Imported by an enabled profiler only: a disabled one never loads the GPU and window modules,
and a profiler without ``backend=`` or ``annotate=True`` never loads the window modules. The
profiler comes in as a :class:`~._surfaces.WiringTarget`, its arguments as its checked
:class:`~._options.Options`, and what is built goes back to it as a :class:`Wiring`.
"""

from __future__ import annotations

from .._record import Record
from . import gpu
from .sampling import ResourceSampler

TYPE_CHECKING = False  # typing is not imported at run time: every process of a run pays its import
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from ..runfiles.layout import RunPaths
    from ._options import Options
    from ._surfaces import WiringTarget

    RecordError = Callable[[str], None]


class Wiring(Record):
    """What :func:`wire` built, each None when not asked for or when it failed: the sync hook
    (:func:`gpu.make_sync`), the :class:`gpu.Annotator` and the backend window."""

    __slots__ = ("sync_fn", "annotator", "window")

    def __init__(self, sync_fn: Callable[[], object] | None, annotator: Any, window: Any) -> None:
        self.sync_fn = sync_fn
        self.annotator = annotator
        #: A windows.trace_window.Window (torch, viztracer) or a windows.lines_window.LinesWindow (lines).
        self.window = window


class Attachments:
    """The objects that live and die with a profiler (the sampler, a backend window).

    Any of these optional methods is called, and a failure in one is recorded in the worker
    file's ``errors``, never raised: ``start()`` (when added, if recording), ``stop()`` (before
    the final flush), ``before_fork()``, ``after_fork_parent()``, ``after_fork_child()``,
    ``contribute(document)`` (at each snapshot: add keys such as ``"samples"`` or ``"gpu"``),
    ``close()``. A fork made while other threads run Python calls ``before_crowded_fork()`` and
    ``after_crowded_fork_parent()`` instead of the first two where the attachment has them: such
    a fork must not wait for any thread (each wait for the GIL costs a turn behind every busy
    thread), and Python warns of forking a multi-threaded process anyway, so a thread that holds
    nothing the child needs may stay up.
    """

    __slots__ = ("_items", "_record_error")

    def __init__(self, record_error: RecordError) -> None:
        self._items: list[Any] = []
        self._record_error = record_error

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._items))

    def add(self, attachment: Any) -> None:
        self._items.append(attachment)
        self._call_one(attachment, "start")

    def call(self, method: str, *args: Any) -> None:
        """``method(*args)`` on every attachment that has it."""
        for attachment in list(self._items):
            self._call_one(attachment, method, *args)

    def call_fork_hook(self, method: str, fallback: str) -> None:
        """``method()`` on every attachment, ``fallback()`` on one without it."""
        for attachment in list(self._items):
            self._call_one(attachment, method if hasattr(attachment, method) else fallback)

    def _call_one(self, attachment: Any, method: str, *args: Any) -> None:
        fn = getattr(attachment, method, None)
        if fn is None:
            return
        try:
            fn(*args)
        except Exception as error:
            self._record_error(f"attachment {type(attachment).__name__}.{method}: {type(error).__name__}: {error}")


def _failed(record_error: RecordError, what: str, error: Exception) -> None:
    record_error(f"{what}: {type(error).__name__}: {error}")


def wire(target: WiringTarget, options: Options, record_error: RecordError) -> Wiring:
    """Install the hooks the profiler's arguments ask for, before its start file is written.

    * ``set_sync(gpu.make_sync())``: None (no cost at all) unless torch is installed; a
      pending check when it is installed but not imported yet.
    * ``annotate=True``: a :class:`gpu.Annotator`, combined with the window's hooks.
    * ``backend=...``: a :class:`.windows.trace_window.Window` (torch, viztracer) or a
      :class:`~.windows.lines_window.LinesWindow` (lines) watching ``window_phase``, attached so that it
      is cut and written at exit and restarted in a fork child.
    * a :class:`gpu.GpuAttachment` (VRAM where the user's torch runs CUDA; NVML facts).
    * ``set_gpu`` with a :class:`.gpu_events.PhaseGpuTimer`: CUDA events around ``gpu=True``
      phases, read back at each snapshot (it imports nothing until such a phase is entered).
    * a :class:`.source_commit.SourceCommit` (the project's git commit, in the worker file).
    * ``trace="auto"``: a :class:`.auto_trace.AutoTrace` (the project's function calls as phases).
    * ``auto="torch"``: a :class:`.auto_torch.AutoTorch` (a training loop's parts as phases).
    * ``line_sampling=``: a :class:`.line_sampling.LineSampling` (sampled line windows).
    """
    sync_fn = None
    try:
        sync_fn = gpu.make_sync()
        target.set_sync(sync_fn)
    except Exception as error:
        _failed(record_error, "sync hook", error)
    annotator = window = None
    if options.backend is not None or options.annotate:
        annotator, window = _window_and_annotation(target, options, record_error)
    try:
        target.add_attachment(gpu.GpuAttachment())
    except Exception as error:
        _failed(record_error, "GPU attachment", error)
    if target.recorder is not None:
        try:
            from .gpu_events import PhaseGpuTimer

            timer = PhaseGpuTimer(target.recorder.current_path)
            target.recorder.set_gpu(timer.enter, timer.exit)
            target.add_attachment(timer)
        except Exception as error:
            _failed(record_error, "GPU phase time", error)
    try:
        from .source_commit import SourceCommit

        target.add_attachment(SourceCommit(options.lines_project, given=options.source))
    except Exception as error:
        _failed(record_error, "source commit", error)
    if options.auto_trace is not None and target.recorder is not None:
        try:
            from .auto_trace import AutoTrace

            target.add_attachment(AutoTrace(target.recorder, options.lines_project, options.auto_trace))
        except Exception as error:
            _failed(record_error, "trace='auto'", error)
    if options.line_sampling is not None:
        try:
            from .line_sampling import LineSampling

            target.add_attachment(LineSampling(options.line_sampling, options.lines_project, owner=target))
        except Exception as error:
            _failed(record_error, "line_sampling", error)
    if options.auto == "torch" and target.recorder is not None:
        try:
            from .auto_torch import AutoTorch

            target.add_attachment(AutoTorch(target))
        except Exception as error:
            _failed(record_error, "auto='torch'", error)
    return Wiring(sync_fn, annotator, window)


def _window_and_annotation(target: WiringTarget, options: Options, record_error: RecordError) -> tuple[Any, Any]:
    """``annotate=True`` and ``backend=...``: the annotator, the window and their phase hooks."""
    from . import capabilities
    from .identity import resolve_host
    from .windows import Backend, trace_window

    annotator: Any = None
    window: Any = None  # a windows.trace_window.Window or a windows.lines_window.LinesWindow
    if options.annotate:
        try:
            annotator = gpu.Annotator()
        except Exception as error:
            _failed(record_error, "annotate", error)
    if options.backend is not None and options.backend_window is not None and options.window_phase is not None:
        try:
            if options.backend == Backend.LINES.value:
                from .windows.lines_window import LinesWindow  # loads the line layer: only when asked for

                window = LinesWindow(
                    target,
                    options.backend_window,
                    options.window_phase,
                    project=options.lines_project,
                )
            else:
                window = trace_window.Window(
                    options.backend, target.run_paths, options.backend_window, options.window_phase, host=resolve_host()
                )
        except Exception as error:
            _failed(record_error, "backend window", error)
        if window is not None:
            if window.state != "unavailable":
                target.set_watch(options.window_phase, window.on_entry)
            target.add_attachment(window)  # also when unavailable: the worker file says why
    hooked = annotator
    if hooked is not None and hooked.nvtx_source is None and not capabilities.torch().available:
        # Neither NVTX nor a torch that could ever be imported: hooks would only cost time.
        hooked = None
    # A lines window names no phases in a trace: only a torch or VizTracer window takes hooks.
    traced = window if isinstance(window, trace_window.Window) else None
    try:
        enter, exit_ = trace_window.annotate_hooks(hooked, traced)
        if enter is not None or exit_ is not None:
            target.set_annotate(enter, exit_)
    except Exception as error:
        _failed(record_error, "annotate hooks", error)
    return annotator, window


def make_sampler(paths: RunPaths, options: Options, record_error: RecordError) -> ResourceSampler | None:
    """The resource sampler (RSS, /proc I/O, NVML): a native thread whose rows each snapshot
    appends beside the worker file. None with ``sample_interval_s=None``, or when it cannot be
    made (recorded). ``paths`` is the profiler's run directory, whose sample files the sampler asks it for."""
    if options.sample_interval_s is None:
        return None
    try:
        return ResourceSampler(paths, interval_s=options.sample_interval_s, timeline_hz=options.timeline_hz)
    except Exception as error:  # the environment never makes construction raise
        record_error(f"resource sampler not started: {type(error).__name__}: {error}")
        return None
