/* The trace's layout (spans.c): its records and the block that holds them. */
#ifndef LP_PHASES_TRACE_H
#define LP_PHASES_TRACE_H

#include "constants.h"

/* The trace's records (spans.c). Each is written twice: into the recorder's private block,
 * which the snapshots read, and into the live file's copy, which this process only ever writes.
 * `seq` is the record's number + 1 (its low 32 bits), stored last: a reader takes a record only
 * when its seq is the one its slot must hold, so a record being overwritten is never half read. */
typedef struct {
    int64_t start_ns;
    int64_t end_ns;
    int64_t cpu_ns; /* -1: not measured */
    int32_t phase_id;
    int32_t thread;
    uint32_t seq;
    uint32_t pad;
} lp_span;

typedef struct {
    int64_t t_ns;
    uint32_t seq;
    int32_t thread;
    int32_t phase_id; /* -1: none open */
    uint8_t kind;     /* LP_LINK_SIGNAL ... LP_LINK_END */
    uint8_t channel_len;
    uint8_t key_len;
    uint8_t cut; /* 1: the channel was cut, 2: the key */
    char channel[LP_TRACE_TEXT];
    char key[LP_TRACE_TEXT];
} lp_link;

typedef struct {
    int64_t ident;
    int64_t native_id;
    uint32_t name_len;
    uint32_t seq; /* odd while the name is rewritten */
    char name[LP_TRACE_THREAD_NAME];
} lp_trace_thread;

typedef struct {
    int64_t start_ns;
    int32_t phase_id;
    int16_t thread;
    int16_t inherited; /* 1: a copy of another flow's entry, shown in that flow's table */
} lp_open_entry;

typedef struct {
    int32_t depth; /* entries open; those past LP_TRACE_OPEN_DEPTH are counted only */
    int32_t in_use;
    lp_open_entry entries[LP_TRACE_OPEN_DEPTH];
} lp_open_stack;

/* The block's first bytes: its layout (every offset from the block's start) and the counts. */
typedef struct {
    uint32_t magic; /* "LPTR" */
    uint32_t header_bytes;
    uint32_t span_bytes, link_bytes, thread_bytes, stack_bytes;
    uint32_t span_capacity, link_capacity, thread_capacity, stack_capacity, open_depth, text_bytes;
    uint32_t thread_name_bytes, pair_capacity;
    uint64_t off_threads, off_stacks, off_spans, off_links;
    int64_t recorded;       /* spans closed, ever: the newest is recorded - 1 */
    int64_t links_recorded; /* links made, ever */
    int64_t links_truncated;
    int64_t spans_unthreaded; /* spans of threads past LP_TRACE_THREADS: counted, not kept */
    int64_t stacks_unshown;   /* flows past LP_TRACE_STACKS: their open entries are not in the file */
    int32_t n_threads;
    int32_t n_pairs; /* clock pairs taken, ever */
    int64_t pairs[LP_TRACE_PAIRS][3];
    /* after the pairs, so a reader of the fields above finds them where they were */
    int64_t links_unthreaded; /* links of threads past LP_TRACE_THREADS: kept with thread -1 */
} lp_trace_header;

typedef struct lp_trace {
    uint64_t epoch; /* unique per process; a stack's open table is valid while it holds this */
    size_t bytes;   /* the block's size, header included */
    char *mem;      /* the private block (anonymous memory) */
    char *file;     /* its copy in the live file, or NULL */
    int64_t capacity;
    int64_t link_capacity;
    int64_t next;      /* the slot of the next span */
    int64_t next_link; /* the slot of the next link */
    lp_trace_header h; /* the private counts; the blocks' headers are copies, written only */
    uint64_t tkey;     /* the last thread's state id + 1 (0 none) */
    int32_t tidx;
    uint64_t thread_keys[LP_TRACE_THREADS];    /* per row: its thread state's id + 1 */
    int32_t thread_hash[LP_TRACE_THREAD_HASH]; /* open addressing on the key: a row + 1, 0 empty */
    uint8_t stack_used[LP_TRACE_STACKS];
    int32_t stack_hint;
} lp_trace;

#endif /* LP_PHASES_TRACE_H */
