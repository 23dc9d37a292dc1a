"""The hooks of ``auto="torch"`` (:mod:`.auto_torch`), one installer per part of a training loop.

Each installer takes torch and the :class:`~.auto_torch.AutoTorch` and returns the function
that removes what it installed: a hook handle's ``remove``, or the original attribute put back
(only while ours is still there: a program that patched over us keeps its own). torch's global
optimizer step hooks, wrappers elsewhere (of ``nn.Module.__call__`` rather than the global module
hooks: :func:`install_forward` says why). Inside code that ``torch.compile`` traces, the hooks
it can reach step aside (``auto.compiling()``): a phase of ours there would break the graph.
"""

from __future__ import annotations

import functools

from ._torch_collectives import install_collectives

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    AutoTorch = Any  # .auto_torch.AutoTorch, which imports this module
    Undo = Callable[[], object]


def _replace(owner: Any, name: str, make: Callable[[Any], Any]) -> Undo:
    """``owner.name = make(original)``; the undo puts the original back while ours is there."""
    original = getattr(owner, name)
    wrapper = make(original)
    functools.update_wrapper(wrapper, original)
    wrapper.__wrapped_by_lineprofiler__ = True
    setattr(owner, name, wrapper)

    def undo() -> None:
        if getattr(owner, name, None) is wrapper:
            setattr(owner, name, original)

    return undo


def _timed(auto: AutoTorch, phase: str, io: bool = False, in_step: bool = True) -> Callable[[Any], Any]:
    """A wrapper timing each call as ``phase`` (``in_step``: a part of a step)."""

    def make(original: Any) -> Any:
        compiling = auto.compiling

        def timed(*args: Any, **kwargs: Any) -> Any:
            if compiling():
                return original(*args, **kwargs)
            entered = auto.open(phase, io, in_step=in_step)
            try:
                return original(*args, **kwargs)
            finally:
                auto.shut(entered)

        return timed

    return make


def install_forward(torch: Any, auto: AutoTorch) -> Undo:
    """``forward``: the outermost module call, through ``nn.Module.__call__`` (wrapped).

    Not torch's global module forward hooks: any global hook takes every module call, the
    innermost ``Linear`` too, off torch's fast path (some 1.2 µs a module for hooks that do
    nothing, then two Python calls of ours); with this wrapper, a module called inside another
    costs one extra Python frame."""
    local, compiling = auto._local, auto.compiling

    def make(original: Any) -> Any:
        def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
            if local.in_forward or compiling():  # a module inside another, or traced by torch.compile
                return original(self, *args, **kwargs)
            local.in_forward = True
            entered = auto.open("forward")
            try:
                return original(self, *args, **kwargs)
            finally:
                local.in_forward = False
                auto.shut(entered)

        return __call__

    return _replace(torch.nn.Module, "__call__", make)


def install_backward(torch: Any, auto: AutoTorch) -> Undo:
    """``backward``: ``torch.autograd.backward``, which ``Tensor.backward`` calls (by its name in
    ``torch.autograd``: wrapping it once sees both). A backward inside a backward is part of it."""
    local, compiling = auto._local, auto.compiling

    def make(original: Any) -> Any:
        def backward(*args: Any, **kwargs: Any) -> Any:
            if local.in_backward or compiling():
                return original(*args, **kwargs)
            local.in_backward = True
            entered = auto.open("backward")
            try:
                return original(*args, **kwargs)
            finally:
                local.in_backward = False
                auto.shut(entered)

        return backward

    return _replace(torch.autograd, "backward", make)


def install_optimizer(torch: Any, auto: AutoTorch) -> Undo:
    """``optimizer``: ``Optimizer.step`` through the global step hooks; the step ends after it.
    ``zero_grad`` is wrapped."""
    import torch.optim.optimizer as optimizer
    local, compiling = auto._local, auto.compiling

    def pre(opt: Any, args: Any, kwargs: Any) -> None:
        if compiling():
            return
        auto.shut(local.optimizer)
        local.optimizer = auto.open("optimizer")

    def post(opt: Any, args: Any, kwargs: Any) -> None:
        if compiling():
            return
        phase, local.optimizer = local.optimizer, None
        auto.shut(phase)
        auto.step_finished()

    first = optimizer.register_optimizer_step_pre_hook(pre)
    second = optimizer.register_optimizer_step_post_hook(post)
    undo_zero = _replace(torch.optim.Optimizer, "zero_grad", _timed(auto, "zero_grad"))

    def undo() -> None:
        first.remove()
        second.remove()
        undo_zero()

    return undo


def install_data_wait(torch: Any, auto: AutoTorch) -> Undo:
    """``data_wait``: a DataLoader iterator's ``__next__``. The call that ends an epoch (the
    sampler's batches all yielded) opens no step of its own, and ends a finished one."""
    from torch.utils.data import dataloader

    base = dataloader._BaseDataLoaderIter

    def make(original: Any) -> Any:
        def __next__(self: Any) -> Any:
            batches = self.__dict__.get("_lineprofiler_batches", -1)
            if batches == -1:  # first call: len() walks the sampler and the dataset, each time
                try:
                    batches = len(self._index_sampler)
                except Exception:  # noqa: BLE001 - an iterable dataset has no length
                    batches = None
                self.__dict__["_lineprofiler_batches"] = batches
            ended = batches is not None and self._num_yielded >= batches
            if ended:
                auto.guarded(auto.end_finished_step)  # the loop's last step, held by a phase of the program
                return original(self)
            entered = auto.open("data_wait")
            try:
                return original(self)
            finally:
                auto.shut(entered)

        return __next__

    return _replace(base, "__next__", make)


def install_checkpoint(torch: Any, auto: AutoTorch) -> Undo:
    """``checkpoint`` (io=True): ``torch.save`` and ``torch.load``."""
    undo_save = _replace(torch, "save", _timed(auto, "checkpoint", io=True, in_step=False))
    undo_load = _replace(torch, "load", _timed(auto, "checkpoint", io=True, in_step=False))

    def undo() -> None:
        undo_save()
        undo_load()

    return undo


def install_workers(torch: Any, auto: AutoTorch) -> Undo:
    """DataLoader workers: the worker loop takes role ``dataloader`` and times its fetcher."""
    from torch.utils.data._utils import fetch, worker

    def make(original: Any) -> Any:
        def _worker_loop(*args: Any, **kwargs: Any) -> Any:
            auto.guarded(auto.become_dataloader_worker)
            auto.guarded(_time_fetchers, fetch, auto)
            return original(*args, **kwargs)

        return _worker_loop

    return _replace(worker, "_worker_loop", make)


def _time_fetchers(fetch: Any, auto: AutoTorch) -> None:
    """In a worker process only (the patches die with it): ``fetch`` per call of the dataset,
    with ``samples`` the samples it returned, and ``collate`` per batch.

    An entry is one call: the recorder times spans and cannot split one into per-sample entries,
    so entries equal the samples for ``dataset[i]`` and for an iterable dataset's ``next()``
    (plus its last call, which ends it and returns none), while a ``__getitems__`` batch is one
    entry of many samples. ``samples`` is always the samples fetched.
    """

    def map_fetch(self: Any, possibly_batched_index: Any) -> Any:
        dataset = self.dataset
        if self.auto_collation:
            if getattr(dataset, "__getitems__", None):
                data = _fetch_one(auto, dataset.__getitems__, possibly_batched_index, len(possibly_batched_index))
            else:
                data = [_fetch_one(auto, dataset.__getitem__, idx, 1) for idx in possibly_batched_index]
        else:
            data = _fetch_one(auto, dataset.__getitem__, possibly_batched_index, 1)
        collate = auto.open("collate")
        try:
            return self.collate_fn(data)
        finally:
            auto.shut(collate)

    fetch._MapDatasetFetcher.fetch = map_fetch

    def make_iterable_init(original: Any) -> Any:
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            # torch's own fetch() runs on, through our iterator and collate function.
            self.dataset_iter = _TimedSamples(auto, self.dataset_iter)
            self.collate_fn = _timed(auto, "collate")(self.collate_fn)

        return __init__

    _replace(fetch._IterableDatasetFetcher, "__init__", make_iterable_init)


class _TimedSamples:
    """An iterable dataset's iterator in a worker: each ``next()`` is a ``fetch`` entry."""

    def __init__(self, auto: AutoTorch, samples: Any) -> None:
        self._auto = auto
        self._samples = samples

    def __iter__(self) -> _TimedSamples:
        return self

    def __next__(self) -> Any:
        auto = self._auto
        entered = auto.open("fetch")
        try:
            sample = next(self._samples)
        except BaseException:
            auto.shut(entered)
            raise
        auto.count("samples", 1)
        auto.shut(entered)
        return sample


def _fetch_one(auto: AutoTorch, get: Any, index: Any, samples: int) -> Any:
    entered = auto.open("fetch")
    try:
        data = get(index)
        auto.count("samples", samples)
        return data
    finally:
        auto.shut(entered)


#: (name, installer), in the order they go in.
INSTALLERS: tuple[tuple[str, Callable[[Any, AutoTorch], Undo]], ...] = (
    ("forward", install_forward),
    ("backward", install_backward),
    ("optimizer", install_optimizer),
    ("data_wait", install_data_wait),
    ("checkpoint", install_checkpoint),
    ("dataloader_workers", install_workers),
    ("collectives", install_collectives),
)
