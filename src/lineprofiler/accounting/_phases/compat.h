/* What differs between the Python versions the _phases extension builds for. */
#ifndef LP_PHASES_COMPAT_H
#define LP_PHASES_COMPAT_H

#include "constants.h"

/* One exception object taken and put back; 3.11 has only the (type, value, traceback) triple. */
static inline PyObject *lp_err_take(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (type == NULL) {
        return NULL;
    }
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL) {
        PyException_SetTraceback(value, tb);
    }
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

static inline void lp_err_restore(PyObject *exc)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    if (exc == NULL) {
        return;
    }
    PyObject *type = Py_NewRef((PyObject *)Py_TYPE(exc));
    PyObject *tb = PyException_GetTraceback(exc);
    PyErr_Restore(type, exc, tb);
#endif
}

#endif /* LP_PHASES_COMPAT_H */
