/* Placeholder: replaced by the real module. Kept compilable so the package builds. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyModuleDef_Slot lp_slots[] = {
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef lp_module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_sampler",
    .m_doc = "placeholder",
    .m_size = 0,
    .m_slots = lp_slots,
};

PyMODINIT_FUNC PyInit__sampler(void)
{
    return PyModuleDef_Init(&lp_module);
}
