"""``torch.distributed`` collectives under ``auto="torch"`` (:mod:`.auto_torch`).

Each public collective of ``torch.distributed`` (:data:`PAYLOAD` names them) is wrapped, in
``torch.distributed`` and in ``torch.distributed.distributed_c10d`` where torch's own Python
code finds it, and timed as phase ``collective`` with the op under it (``collective/all_reduce``).
A collective called inside another (``all_gather_object`` calls ``all_gather``) is part of the
outer one. A collective is a part of the step it falls in but never opens one: a barrier before
the loop or a metric's all-reduce after the optimizer step is at the top level.

Inside the op's phase, counter ``collective_bytes`` adds the bytes of this rank's payload, once
the call has returned: the tensor(s) it contributes (``all_reduce``'s tensor, ``all_gather``'s
input, ``reduce_scatter``'s input list, ``all_to_all``'s input), and for ``broadcast``,
``scatter`` and ``recv``, the tensor it fills. ``barrier`` moves none.

Inside code that ``torch.compile`` traces, a collective is not timed (nor is any auto phase):
torch traces the collective itself, where a phase of ours would break its graph.

An async op (``async_op=True``, ``isend``/``irecv``) is timed to the call's return, which hands
back a ``Work``: the wait for it (``Work.wait()``) is not in the phase.

Not timed here: DistributedDataParallel's gradient all-reduce. Its reducer calls the process
group from C++ (autograd hooks during ``backward``, bucket by bucket, overlapped with the gradient
computation), never these Python functions, so its time is inside ``step/backward``. The one
Python entry to it is a DDP communication hook (``register_comm_hook``), which is the program's
own API (one per model): it is not installed behind the program's back. Nor are collectives
issued from C++ or through ``torch.distributed._functional_collectives``. Their calls and bytes
come from torch's flight recorder instead (:mod:`._torch_flight_recorder`): each wrapped call
notes its span (``auto.own_calls``) so that the recorder's entries made inside it are not
counted twice.
"""

from __future__ import annotations

import functools

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    AutoTorch = Any  # .auto_torch.AutoTorch
    Undo = Callable[[], object]

#: op -> where its payload is: (position, keyword), or None (no tensor moves).
PAYLOAD: dict[str, tuple[int, str] | None] = {
    "all_reduce": (0, "tensor"),
    "all_gather": (1, "tensor"),
    "all_gather_into_tensor": (1, "input_tensor"),
    "reduce_scatter": (1, "input_list"),
    "reduce_scatter_tensor": (1, "input"),
    "broadcast": (0, "tensor"),
    "reduce": (0, "tensor"),
    "all_to_all": (1, "input_tensor_list"),
    "all_to_all_single": (1, "input"),
    "gather": (0, "tensor"),
    "scatter": (0, "tensor"),
    "send": (0, "tensor"),
    "recv": (0, "tensor"),
    "isend": (0, "tensor"),
    "irecv": (0, "tensor"),
    "barrier": None,
}


def payload_bytes(payload: Any) -> int:
    """A tensor's bytes, or a list's of tensors."""
    if isinstance(payload, (list, tuple)):
        return sum(payload_bytes(item) for item in payload)
    return int(payload.numel()) * int(payload.element_size())


def install_collectives(torch: Any, auto: AutoTorch) -> Undo:
    """``collective/<op>`` with ``collective_bytes``: the public ``torch.distributed`` functions."""
    import torch.distributed as dist

    if not dist.is_available():
        raise RuntimeError("torch.distributed is not available in this torch build")
    from torch.distributed import distributed_c10d

    local, compiling, own_calls = auto._local, auto.compiling, auto.own_calls
    wrappers: dict[Any, Any] = {}  # torch's function -> ours, one per op in both namespaces

    def make(op: str, where: tuple[int, str] | None) -> Callable[[Any], Any]:
        def wrap(original: Any) -> Any:
            def collective(*args: Any, **kwargs: Any) -> Any:
                if local.in_collective or compiling():
                    return original(*args, **kwargs)
                local.in_collective = True
                span = own_calls.begin()  # what the flight recorder lists inside it is ours, timed here
                outer = auto.open("collective", in_step=False)
                inner = auto.open(op, in_step=False)
                try:
                    result = original(*args, **kwargs)
                    if where is not None:
                        auto.guarded(_count_payload, auto, where, args, kwargs)
                    return result
                finally:
                    auto.shut(inner)
                    auto.shut(outer)
                    own_calls.end(span)
                    local.in_collective = False

            functools.update_wrapper(collective, original)
            collective.__wrapped_by_lineprofiler__ = True  # type: ignore[attr-defined]
            return collective

        return wrap

    undo: list[Callable[[], None]] = []
    for op, where in PAYLOAD.items():
        for namespace in (dist, distributed_c10d):
            original = getattr(namespace, op, None)
            if original is None:
                continue  # an older torch without this op
            if original not in wrappers:
                wrappers[original] = make(op, where)(original)
            undo.append(_put(namespace, op, original, wrappers[original]))

    def undo_all() -> None:
        for put_back in undo:
            put_back()

    return undo_all


def _put(namespace: Any, name: str, original: Any, wrapper: Any) -> Callable[[], None]:
    setattr(namespace, name, wrapper)

    def put_back() -> None:
        if getattr(namespace, name, None) is wrapper:  # a program that patched over us keeps its own
            setattr(namespace, name, original)

    return put_back


def _count_payload(auto: AutoTorch, where: tuple[int, str], args: Any, kwargs: Any) -> None:
    position, keyword = where
    payload = args[position] if len(args) > position else kwargs.get(keyword)
    if payload is not None:
        auto.count("collective_bytes", payload_bytes(payload))
