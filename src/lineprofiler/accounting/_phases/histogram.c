/* The fixed-bucket histogram of entry durations: the edge table and its lookup cells. */
#include "phases.h"

#include <math.h>

/* ===================================================================== histogram */

void lp_init_edges(lp_state *st)
{
    for (int k = 0; k <= LP_LAST_EDGE; k++) {
        /* The same IEEE operations as histogram.py, so the tables are equal (tested). */
        double v =
            (double)LP_ONE_US_NS * pow(2.0, (double)(k - LP_BELOW_1US) / (double)LP_BUCKETS_PER_DOUBLING);
        st->edges[k] = (int64_t)floor(v + 0.5);
    }
    /* For each cell (floor(log2 ns), next 3 bits) the bucket of the cell's lowest value: the
     * cell spans a ratio of at most 9/8, less than two bucket widths, so from there the exact
     * bucket is at most two edge comparisons away. */
    for (int l = 0; l < 64; l++) {
        for (int m = 0; m < 8; m++) {
            int start;
            if (l >= 62) {
                start = LP_LAST_EDGE + 1;
            } else {
                int64_t low = ((int64_t)1 << l) + (l >= 3 ? ((int64_t)m << (l - 3)) : 0);
                int b = 0;
                while (b <= LP_LAST_EDGE && st->edges[b] <= low) {
                    b++;
                }
                start = b;
            }
            st->bucket_start[l * 8 + m] = (int16_t)start;
        }
    }
}

PyObject *lp_mod_bucket_edges(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    lp_state *st = lp_get_state(module);
    PyObject *t = PyTuple_New(LP_LAST_EDGE + 1);
    if (t == NULL) {
        return NULL;
    }
    for (int k = 0; k <= LP_LAST_EDGE; k++) {
        PyObject *v = PyLong_FromLongLong(st->edges[k]);
        if (v == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, v);
    }
    return t;
}

PyObject *lp_mod_bucket_index(PyObject *module, PyObject *arg)
{
    long long ns = PyLong_AsLongLong(arg);
    if (ns == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return PyLong_FromLong(lp_bucket(lp_get_state(module), ns));
}
