"""The package imports and its C modules load."""

import importlib

import pytest


@pytest.mark.parametrize(
    "name",
    [
        "lineprofiler",
        "lineprofiler.lines._tracer",
        "lineprofiler.accounting._phases",
        "lineprofiler.accounting._sampler",
    ],
)
def test_module_imports(name):
    assert importlib.import_module(name) is not None


def test_histogram_error_bound():
    from lineprofiler.runfiles import histogram

    assert 0.044 < histogram.RELATIVE_ERROR < 0.0446
    assert histogram.bucket_index(histogram.EDGES[0] - 1) == 0
    assert histogram.bucket_index(histogram.EDGES[-1]) == histogram.N_BUCKETS - 1
