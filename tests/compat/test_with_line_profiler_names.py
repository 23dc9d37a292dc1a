"""``import with_line_profiler`` gives every name of ``lineprofiler.__all__``, as the same objects.

0.10.0's own test of its alias (tests/test_shim.py in its sdist) walks ``lineprofiler.__all__``;
0.11.0 added the IPython hooks there, and the alias lacked them until this test.
"""

import lineprofiler
import with_line_profiler


def test_every_public_name_of_lineprofiler_is_the_same_object_under_the_distribution_name():
    for name in lineprofiler.__all__:
        assert getattr(with_line_profiler, name) is getattr(lineprofiler, name), name
    assert set(lineprofiler.__all__) <= set(with_line_profiler.__all__)
