"""Collect: every live node's run-directory files, through Ray's object store, into the driver's
run directory, and ``run_dir/ray/collect.json`` saying what came of each node.

:func:`read_node` is the node's side (a Ray task pinned to each node), :func:`collect` the
driver's; :mod:`._ray_files` moves the files. ``run_dir/ray/`` (RAY_DIR) holds ``collect.json``
(nodes and actors, with caveat lines: its format is ``runfiles/raycollect.py``, which the report
reads) and ``state.json`` (what was copied from where, for the next collect).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray

from ..accounting.identity import ENV_HOST, ENV_RUN_DIR, ENV_RUN_ID
from ..runfiles import layout, raycollect, workerfile
from ..runfiles.raycollect import RAY_DIR
from . import _ray_files
from ._ray_driver import driver_settings
from ._ray_process import adopt_job_env, host_label, ray_run

COLLECT_FILE = raycollect.COLLECT_FILE
STATE_FILE = "state.json"
COLLECT_KIND = raycollect.KIND
COLLECT_SCHEMA = raycollect.SCHEMA_VERSION
#: Bytes per object sent through the object store, and how many a node may have in flight.
CHUNK_BYTES = 4 << 20
BACKPRESSURE_OBJECTS = 4

_collect_lock = threading.Lock()
#: read_node as a Ray task, made on the first collect.
_reader: Any = None


def read_node(known: Mapping[str, Any], probe: Mapping[str, Any], chunk_bytes: int) -> Iterator[dict[str, Any]]:
    """Run on a node by :func:`collect`: ``{"kind": "hello", ...}`` (this node, its machine, its
    run directory), then :func:`_ray_files.stream_files` of that directory. ``probe``: what tells
    the driver's run directory (:func:`_ray_files.same_directory`); a node run directory that is
    that folder (one host, a shared file system) is not sent, so never copied onto itself."""
    adopt_job_env()  # a job Ray started without the profiler's runtime environment
    root = os.environ.get(ENV_RUN_DIR) or ""
    hello: dict[str, Any] = {
        "kind": "hello", "run_dir": root, "host": None, "machine": layout.machine_id(), "same": False,
        "missing": False,
    }
    try:
        node_id = ray.get_runtime_context().get_node_id()
        hello["host"] = os.environ.get(ENV_HOST, "").strip() or host_label(node_id, ray.nodes())
    except Exception:
        pass
    if not root or not os.path.isdir(root):
        hello["missing"] = True
    elif _ray_files.same_directory(root, probe):
        hello["same"] = True
    yield hello
    if hello["missing"] or hello["same"]:
        yield {"kind": "done", "present": None, "errors": []}
        return
    yield from _ray_files.stream_files(root, known, chunk_bytes)


# ---------------------------------------------------------------------- collect: the driver side


@dataclass
class NodeResult:
    """What one collect did for one node."""

    node_id: str
    host: str | None
    ip: str | None
    alive: bool
    #: "collected", "same-dir" (its run directory is the driver's: nothing to copy), "left" (no
    #: longer in the cluster), "failed" (the node's task failed: see ``errors``) or
    #: "collecting" (unfinished)
    state: str = "collecting"
    files: int = 0
    bytes: int = 0
    removed: int = 0
    #: files not copied because the driver's copy is the node's file itself
    in_place: int = 0
    node_run_dir: str | None = None
    last_collected_unix_ns: int | None = None
    reason: str | None = None
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id, "host": self.host, "ip": self.ip, "alive": self.alive, "state": self.state,
            "files_copied": self.files, "bytes_copied": self.bytes, "files_removed": self.removed,
            "files_in_place": self.in_place, "node_run_dir": self.node_run_dir,
            "last_collected_unix_ns": self.last_collected_unix_ns, "reason": self.reason, "errors": self.errors[:20],
        }


@dataclass
class CollectResult:
    """What :func:`collect` did: one :class:`NodeResult` per node, and the caveat lines."""

    run_dir: Path
    nodes: list[NodeResult]
    caveats: list[str]
    dead_actors: list[dict[str, Any]]
    #: the driver's own problems: ray/state.json or ray/collect.json not written
    errors: list[str] = field(default_factory=list)

    @property
    def files(self) -> int:
        return sum(n.files for n in self.nodes)

    @property
    def bytes(self) -> int:
        return sum(n.bytes for n in self.nodes)


def _utc(unix_ns: int | None) -> str:
    if not unix_ns:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(unix_ns / 1e9))


def _node_name(node: NodeResult) -> str:
    where = f"{node.host}" if node.host else f"node {node.node_id[:8]}"
    details = ", ".join(x for x in (node.ip, f"node {node.node_id[:8]}" if node.host else None) if x)
    return f"{where} ({details})" if details else where


def _dead_actors(job_id: str | None, labels: dict[str, str]) -> list[dict[str, Any]]:
    """This job's actors that Ray reports dead, with the reason it gives."""
    if not job_id:
        return []
    try:
        from ray._private import state as ray_state
        from ray.core.generated import common_pb2

        # Generated protobuf code, untyped: Any, whether or not Ray is installed where mypy runs.
        generated: Any = common_pb2
        table = ray_state.state.actor_table(None, job_id=ray.JobID.from_hex(job_id), actor_state_name="DEAD")
    except Exception:
        return []
    dead = []
    for actor_id, row in sorted(table.items()):
        cause = row.get("DeathCause")
        context = getattr(cause, "actor_died_error_context", None)
        reason_number = getattr(context, "reason", 0)
        try:
            reason = generated.ActorDiedErrorContext.Reason.Name(reason_number)
        except Exception:
            reason = "UNSPECIFIED"
        node_id = str((row.get("Address") or {}).get("NodeID") or "")
        message = str(getattr(context, "error_message", "") or "").strip()
        dead.append({
            "actor_id": actor_id, "class_name": row.get("ActorClassName"), "name": row.get("Name") or None,
            "pid": row.get("Pid"), "node_id": node_id, "host": labels.get(node_id), "reason": reason,
            "message": message[:300], "end_unix_ms": row.get("EndTime") or None,
        })
    return dead


def _unfinished(dest: Path, actor: dict[str, Any]) -> bool:
    """True when the dead actor's process left a worker file here without a final flush (an
    actor that ended normally wrote one at exit; one that never profiled left no file)."""
    host, pid = actor.get("host"), actor.get("pid")
    if not host or not isinstance(pid, int):
        return False
    statuses = [document["times"].get("status") for document in workerfile.worker_files_of(dest, host, pid)]
    return bool(statuses) and not any(status in ("exited", "signalled") for status in statuses)


def _known_nodes(state: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``state.json``'s nodes, each with only what collect uses, of the types it uses: a file
    edited by hand or cut short costs what it no longer says, never an exception."""
    saved = state.get("nodes")
    known: dict[str, dict[str, Any]] = {}
    if not isinstance(saved, dict):
        return known
    for node_id, node in saved.items():
        if not isinstance(node_id, str) or not isinstance(node, dict):
            continue
        files = node.get("files")
        last = node.get("last_collected_unix_ns")
        known[node_id] = {
            "host": _text(node.get("host")),
            "ip": _text(node.get("ip")),
            "files": {
                rel: mark for rel, mark in (files.items() if isinstance(files, dict) else ())
                if isinstance(rel, str) and isinstance(mark, list)
            },
            "last_collected_unix_ns": last if type(last) is int and last > 0 else None,
        }
    return known


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _place_marker(dest: Path, errors: list[str]) -> dict[str, Any]:
    """What a node needs to tell that its run directory is ``dest``
    (:func:`_ray_files.same_directory`): ``dest``'s file identity, and the token of a marker
    written under ``dest/ray/`` for this collect."""
    token = secrets.token_hex(16)
    try:
        layout.write_atomic(_ray_files.marker_path(dest, token), token.encode("ascii"), root=dest)
    except OSError as error:
        errors.append(
            f"{dest / RAY_DIR}: marker not written ({error.strerror or error}): a node that shares this run "
            f"directory from another machine cannot tell"
        )
        token = ""
    identity = layout.file_identity(dest)
    return {"identity": list(identity) if identity is not None else None, "token": token}


def _remove_marker(dest: Path, probe: Mapping[str, Any]) -> None:
    if probe.get("token"):
        with contextlib.suppress(OSError):
            layout.remove(_ray_files.marker_path(dest, probe["token"]), root=dest)


def collect(run_dir: str | os.PathLike[str] | None = None, *, timeout_s: float = 600.0) -> CollectResult:
    """Copy every live node's run-directory files that changed since the last collect into
    ``run_dir`` (default: the driver's, as :func:`init` set it), and write ``run_dir/ray/
    collect.json``. Call it from the driver, while Ray runs: during the job for a live report,
    and at its end before ``ray.shutdown()``.

    A node whose run directory is ``run_dir`` itself (the default ``node_run_dir`` on one host,
    or a shared file system) is left as it is: its files, and the live files its processes
    map, are never copied onto themselves. A node that fails, sends what collect cannot read, or
    does not answer within ``timeout_s`` costs its own files only; it is named in the result and
    in ``collect.json``. Raises RuntimeError when Ray is not running.
    """
    if not ray.is_initialized():
        raise RuntimeError("lineprofiler: collect needs a running Ray (call it before ray.shutdown())")
    configured = driver_settings()
    dest = Path(os.path.abspath(os.fspath(
        run_dir or configured.get("run_dir") or os.environ.get(ENV_RUN_DIR) or "profile"
    )))
    dest.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    with _collect_lock:
        errors: list[str] = []
        known_nodes = _known_nodes(_ray_files.read_json(dest / RAY_DIR / STATE_FILE))
        nodes = ray.nodes()
        labels = {str(n["NodeID"]): host_label(str(n["NodeID"]), nodes) or "" for n in nodes}
        found = ray_run()
        job_id = found[1] if found else None
        dead_actors = _dead_actors(job_id, labels)
        results: dict[str, NodeResult] = {}
        streams: dict[str, Any] = {}
        reader = _remote_reader()
        probe = _place_marker(dest, errors)
        try:
            for n in nodes:
                node_id = str(n["NodeID"])
                before = known_nodes.get(node_id) or {}
                result = NodeResult(
                    node_id, before.get("host") or labels.get(node_id), n.get("NodeManagerAddress"),
                    bool(n.get("Alive")), last_collected_unix_ns=before.get("last_collected_unix_ns"),
                )
                if not result.alive:
                    ran_here = bool(before) or any(a["node_id"] == node_id for a in dead_actors)
                    if ran_here:
                        result.state = "left"
                        result.reason = str(n.get("DeathReasonMessage") or "") or None
                        results[node_id] = result
                    continue
                results[node_id] = result
                streams[node_id] = reader.options(
                    num_cpus=0, max_retries=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                    _generator_backpressure_num_objects=BACKPRESSURE_OBJECTS,
                ).remote(before.get("files") or {}, probe, CHUNK_BYTES)
            for node_id, known in known_nodes.items():  # collected before, gone from Ray's table since
                if node_id not in results and node_id not in {str(n["NodeID"]) for n in nodes}:
                    results[node_id] = NodeResult(
                        node_id, known.get("host"), known.get("ip"), False, state="left",
                        last_collected_unix_ns=known.get("last_collected_unix_ns"),
                    )
            for node_id, stream in streams.items():
                _receive_node(dest, results[node_id], known_nodes.setdefault(node_id, {}), stream, deadline)
        finally:
            _remove_marker(dest, probe)
        ordered = sorted(results.values(), key=lambda r: (r.state != "same-dir", r.host or "", r.node_id))
        hosts = {r.node_id: r.host for r in ordered if r.host}
        for actor in dead_actors:
            actor["host"] = hosts.get(actor["node_id"]) or actor["host"]
        dead_actors = [a for a in dead_actors if _unfinished(dest, a)]
        caveats = _caveats(ordered, dead_actors)
        run = configured.get("run_id") or os.environ.get(ENV_RUN_ID) or (found[0] if found else None)
        for name, document in (
            (STATE_FILE, {"kind": COLLECT_KIND + "-state", "nodes": known_nodes}),
            (COLLECT_FILE, raycollect.build_document(
                run_id=run, job_id=job_id, collected_unix_ns=time.time_ns(),
                nodes=[r.to_json() for r in ordered], dead_actors=dead_actors, caveats=caveats,
            )),
        ):
            try:
                _ray_files.write_json(dest / RAY_DIR, name, document)
            except OSError as error:  # the copies are in place; the next collect copies them again
                errors.append(f"{dest / RAY_DIR / name} not written: {error.strerror or error}")
    return CollectResult(dest, ordered, caveats, dead_actors, errors)


def _receive_node(dest: Path, result: NodeResult, before: dict[str, Any], stream: Any, deadline: float) -> None:
    """One node's stream into ``dest``: ``result`` says what came of it, ``before`` (its entry in
    ``state.json``) what was copied from it, for the next collect."""
    files = dict(before.get("files") or {})
    try:
        items = _items(stream, deadline)
        hello = next(items, None)
        if not isinstance(hello, dict) or hello.get("kind") != "hello":
            raise _ray_files.MalformedMessage("the node's first message is not its hello")
        result.host = _text(hello.get("host")) or result.host
        result.node_run_dir = _text(hello.get("run_dir"))
        if hello.get("missing") is True:
            result.errors.append(f"no run directory {result.node_run_dir!r} on this node")
        received = _ray_files.receive(dest, items, files, node_machine=_text(hello.get("machine")))
        result.files, result.bytes, result.removed = received.files, received.bytes, received.removed
        result.in_place = received.in_place
        result.errors.extend(received.errors)
        if received.done:
            result.state = "same-dir" if hello.get("same") is True else "collected"
    except Exception as error:
        result.state = "failed"
        first = (str(error).strip().splitlines() or [""])[0][:300]
        result.errors.insert(0, f"{type(error).__name__}: {first}")
    finally:
        try:
            ray.cancel(stream, force=True)
        except Exception:
            pass
    if result.state in ("collected", "same-dir"):
        result.last_collected_unix_ns = time.time_ns()
    before.update(host=result.host, ip=result.ip, files=files, last_collected_unix_ns=result.last_collected_unix_ns)


def _items(stream: Any, deadline: float) -> Iterator[dict[str, Any]]:
    """The node's stream, one object at a time, within the deadline."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the node did not finish within collect's timeout")
        ready, _ = ray.wait([stream], timeout=remaining)
        if not ready:
            raise TimeoutError("the node did not finish within collect's timeout")
        try:
            ref = next(stream)
        except StopIteration:
            return
        yield ray.get(ref)


def _caveats(nodes: list[NodeResult], dead_actors: list[dict[str, Any]]) -> list[str]:
    lines = []
    for node in nodes:
        if node.state == "left":
            why = f" ({node.reason})" if node.reason else ""
            if node.last_collected_unix_ns:
                lines.append(
                    f"Ray node {_node_name(node)} left the cluster{why}: what its processes wrote after the "
                    f"collect of {_utc(node.last_collected_unix_ns)} is missing"
                )
            else:
                lines.append(
                    f"Ray node {_node_name(node)} left the cluster{why} before any collect: its processes "
                    f"are missing from every total"
                )
        elif node.state not in ("collected", "same-dir"):
            first = node.errors[0] if node.errors else "no answer"
            lines.append(
                f"Ray node {_node_name(node)} could not be collected ({first}): its newest files may be missing"
            )
        elif node.errors:
            lines.append(f"Ray node {_node_name(node)}: {len(node.errors)} file(s) not copied; first: {node.errors[0]}")
    for actor in dead_actors:
        where = f" on {actor['host']}" if actor.get("host") else ""
        message = actor.get("message") or actor["reason"]
        lines.append(
            f"Ray actor {actor.get('class_name') or '?'} pid {actor.get('pid')}{where} died ({message}): "
            f"its numbers stop at its last snapshot"
        )
    return lines


def _remote_reader() -> Any:
    global _reader
    if _reader is None:
        _reader = ray.remote(read_node)
    return _reader
