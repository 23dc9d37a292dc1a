"""The start file's JSON writer writes what json writes, byte for byte, or hands over to json."""

from __future__ import annotations

import json
import random

import pytest

from lineprofiler.runfiles import plainjson, workerfile


def _reference(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _random_value(rng: random.Random, depth: int) -> object:
    kind = rng.randrange(9 if depth < 5 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randrange(-(2**70), 2**70)
    if kind == 2:
        return rng.choice([0.0, -0.0, 1e300, 5e-324, 0.1, -2.5, 1e16, rng.random() * 10 ** rng.randrange(-30, 30)])
    if kind in (3, 4, 5):
        alphabet = 'ab"\\/\n\t\x00\x1f\x7f é€😀\u2028\ud800'
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
    if kind == 6:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7:
        return tuple(_random_value(rng, depth + 1) for _ in range(rng.randrange(4)))
    return {str(_random_value(rng, 9)): _random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def test_random_plain_documents_match_json_byte_for_byte():
    rng = random.Random(20261130)
    for _ in range(3000):
        value = _random_value(rng, 0)
        assert plainjson.dumps(value) == _reference(value)


def test_a_real_worker_document_matches(tmp_path):
    from lineprofiler.accounting import Profiler

    with Profiler(run_dir=tmp_path, role="learner") as profiler:
        with profiler.phase("step"):
            profiler.count("items", 3)
    (path,) = workerfile.find_worker_files(tmp_path)
    document = json.loads(path.read_bytes())
    assert plainjson.dumps(document) == _reference(document)


@pytest.mark.parametrize(
    "value",
    [{1: "int key"}, {"x": float("nan")}, [float("inf")], {"s": {1, 2}}, b"bytes", [True.__class__]],
)
def test_what_is_not_plain_goes_to_json(value):
    assert plainjson.dumps(value) is None


def test_deep_and_cyclic_documents_go_to_json_and_fail_as_json_fails():
    deep: list[object] = []
    for _ in range(200):
        deep = [deep]
    assert plainjson.dumps(deep) is None
    assert workerfile.encode_json(deep) == _reference(deep).encode()
    cyclic: list[object] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError):
        workerfile.encode_json(cyclic)


def test_non_finite_floats_are_refused_as_before():
    with pytest.raises(ValueError):
        workerfile.encode_json({"x": float("nan")})
