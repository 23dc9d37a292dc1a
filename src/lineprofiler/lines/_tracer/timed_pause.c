/* pause_after(seconds): the end of a sampled window, timed without the GIL.
 *
 * A window of the accounting layer's line sampling is closed by its own thread. Were that
 * thread to read the clock once it holds the GIL again, the lines open at the end would be
 * billed the wait for the GIL too: a busy program hands it over only at its next check, then
 * waits for the scheduler to run the closing thread, and the line it stopped at would collect
 * milliseconds per window that it never ran. So the thread sleeps here with the GIL released,
 * marks the end on the clock and switches the callbacks off at that instant (they read `on`,
 * and return at once when it is 0), then takes the GIL back; stop() then bills every open line
 * up to the mark (lp_close_all()). */
#include "tracer.h"

#include <errno.h>
#include <time.h>

PyObject *lp_tracer_pause_after(lp_TracerObject *self, PyObject *arg)
{
    double seconds = PyFloat_AsDouble(arg);
    if (seconds == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (!(seconds >= 0.0 && seconds <= 3600.0)) {
        PyErr_SetString(PyExc_ValueError, "pause_after: seconds must be from 0 to 3600");
        return NULL;
    }
    if (!self->on) {
        Py_RETURN_NONE;
    }
    int64_t ns = (int64_t)(seconds * 1e9);
    struct timespec left = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    int64_t mark;
    Py_BEGIN_ALLOW_THREADS;
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
    mark = lp_clock(self, 0);
    __atomic_store_n(&self->stop_mark, mark, __ATOMIC_RELAXED);
    __atomic_store_n(&self->on, 0, __ATOMIC_RELEASE);
    Py_END_ALLOW_THREADS;
    Py_RETURN_NONE;
}
