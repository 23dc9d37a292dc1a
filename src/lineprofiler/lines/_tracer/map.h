/* lineprofiler.lines._tracer: the pointer-keyed map the tracer finds code objects and threads
 * in. Internal header, included by tracer.h. */
#ifndef LP_MAP_H
#define LP_MAP_H

#include <Python.h>
#include <stdint.h>

#include "_common.h"

/* A pointer-keyed open-addressing map (linear probing, no deletion: it is
 * rebuilt to drop entries). */
typedef struct {
    uintptr_t key; /* 0: empty */
    void *val;
    PyObject *aux; /* strong or NULL: see lp_TracerObject.codes */
} lp_slot;

typedef struct {
    lp_slot *slots;
    size_t mask; /* capacity - 1; capacity is a power of two */
    size_t used;
} lp_map;

LP_INLINE size_t lp_hash(uintptr_t key)
{
    /* Objects are 16-byte aligned: drop the low bits, then mix (Fibonacci). */
    uint64_t h = (uint64_t)(key >> 4) * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h ^ (h >> 29));
}

LP_INLINE lp_slot *lp_map_find(lp_map *m, uintptr_t key)
{
    if (m->slots == NULL) {
        return NULL;
    }
    size_t i = lp_hash(key) & m->mask;
    for (;;) {
        lp_slot *s = &m->slots[i];
        if (s->key == key) {
            return s;
        }
        if (s->key == 0) {
            return NULL;
        }
        i = (i + 1) & m->mask;
    }
}

#endif /* LP_MAP_H */
