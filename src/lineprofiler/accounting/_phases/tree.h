/* The phase tree's private records (tree.c, counters.c): nodes, the child lookup, counters. */
#ifndef LP_PHASES_TREE_H
#define LP_PHASES_TREE_H

#include "live_file.h"

/* A node of the phase tree, in private memory (chunks: a node never moves). `live` is its
 * record in the live file while one is attached in this process. */
typedef struct lp_node {
    uint32_t seq; /* the record's sequence number, kept here so the record is never read */
    int32_t id;
    int32_t parent;
    PyObject *name; /* borrowed: the canonical name, owned by the recorder's names dict */
    PyObject *path; /* owned, built lazily */
    int64_t entries;
    int64_t wall_ns;
    int64_t self_ns;
    int64_t cpu_ns;
    int64_t cpu_missing; /* entries whose thread-CPU clock could not be read */
    int64_t min_ns;
    int64_t max_ns;
    uint8_t io;
    uint8_t sync;
    uint8_t overflow;
    int32_t depth; /* path components: 0 for the root, 1 for a top-level phase */
    int64_t io_delta[LP_IO_FIELDS];
    int64_t io_measured;
    int64_t io_failed;
    /* Entries still open, filled by each snapshot from every thread's stack (never added to
     * the totals above, which an entry joins only when it closes). */
    int64_t open_entries;
    int64_t open_ns;
    int64_t open_self_ns;
    lp_live_node *live;
    uint64_t hist[LP_N_BUCKETS];
} lp_node;

typedef struct {
    int32_t parent;
    int32_t node; /* -1: empty slot */
    PyObject *name;
} lp_child_slot;

typedef struct {
    int32_t node;
    PyObject *name; /* borrowed canonical name */
    int64_t total;  /* one aligned store per count(): never torn */
    int64_t calls;  /* count() calls, and the least and most one added: its spread */
    int64_t min, max;
    lp_live_counter *live; /* its record in the live file, or NULL */
} lp_counter;

#endif /* LP_PHASES_TREE_H */
