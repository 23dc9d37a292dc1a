/* The _phases extension's constants: the histogram's scheme, the caps, the live file's and the
 * trace's layouts, the flags. */
#ifndef LP_PHASES_CONSTANTS_H
#define LP_PHASES_CONSTANTS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdatomic.h>
#include <stdint.h>

#include "_clock.h"
#include "_common.h"
#include "_procio.h"
#include "accounting/_phases_capi.h"

/* The histogram scheme of runfiles/histogram.py: EDGES[k] = round(1000 * 2**((k - 40)/8)),
 * from 31 ns (EDGES[0]) through 1 us (EDGES[40]) to about 10^4 s. */
#define LP_BUCKETS_PER_DOUBLING 8
#define LP_ONE_US_NS            1000
#define LP_BELOW_1US            40
#define LP_LAST_EDGE            (266 + LP_BELOW_1US)
#define LP_N_BUCKETS            (LP_LAST_EDGE + 2)

#define LP_DEFAULT_MAX_PATHS    10000
#define LP_DEFAULT_MAX_COUNTERS 10000
#define LP_DEFAULT_MAX_DEPTH    256 /* path components; deeper entries go to the overflow node */
#define LP_MAX_MAX_DEPTH        100000
#define LP_MAX_ERRORS           32       /* error strings kept; the rest are only counted */
#define LP_MAX_ERROR_TEXT       500      /* characters of an exception's text an error keeps */
#define LP_MAX_FRAMES           100000   /* frames per stack before entries are dropped */
#define LP_MAX_INHERITED        8        /* recorders whose open frame a new stack inherits */
#define LP_NODE_CHUNK           64       /* nodes per allocation: node pointers never move */
#define LP_NAME_CACHE           64       /* direct-mapped name -> canonical name cache */
#define LP_PHASE_CACHE          128      /* direct-mapped (name, flags) -> Phase cache */
#define LP_COUNTER_CHUNK        64       /* counters per allocation: counter pointers never move */
#define LP_LIVE_NAME            200      /* UTF-8 bytes of a name kept in the live file */
#define LP_LIVE_HEADER          4096     /* the live file's header: identity and layout */
#define LP_LIVE_IDENTITY        2048     /* bytes of identity JSON the header keeps */
#define LP_LIVE_SEGMENT         64       /* a chunk's segment header in the live file */
#define LP_LIVE_VERSION         3        /* 3: the histogram reaches below 1 us */
#define LP_LIVE_FROZEN          1u       /* flags: the file stopped growing */
#define LP_LIVE_ALIVE_NS        10000000 /* alive_unix_ns is stamped at most every 10 ms */
#define LP_LIVE_SLOTS           1024     /* live files mapped at once per process */
#define LP_SEG_NODES            1
#define LP_SEG_COUNTERS         2
#define LP_SEG_TRACE            3 /* the trace block (spans.c): one segment, right after the header */
#define LP_ROOT                 0
#define LP_OVERFLOW             1

/* The trace (spans.c). Capacities are the caller's; these are the fixed parts of the block.
 * Threads: a thread-per-request server's thousands. A thread keeps its row for the trace's life
 * (the ring's spans name it), so the rows are a bound, not a cache: spans and links of threads
 * past it are counted only (spans_unthreaded, links_unthreaded). 88 bytes a row, 704 KiB of
 * address space in each copy of the block, of which only the rows used are touched; below 32768,
 * as an open entry keeps the thread in an int16. */
#define LP_TRACE_DEFAULT_SPANS 200000
#define LP_TRACE_DEFAULT_LINKS 50000
#define LP_TRACE_MAX_SPANS     50000000
#define LP_TRACE_MAX_LINKS     5000000
#define LP_TRACE_THREADS       8192  /* threads named in the block; later ones are counted only */
#define LP_TRACE_THREAD_HASH   16384 /* the thread lookup's slots: a power of two, twice the rows */
#define LP_TRACE_STACKS        256   /* flows whose open entries the live file shows */
#define LP_TRACE_OPEN_DEPTH    32    /* open entries per flow the live file shows */
#define LP_TRACE_TEXT          56    /* UTF-8 bytes of a link's channel and of its key */
#define LP_TRACE_THREAD_NAME   64
#define LP_TRACE_PAIRS         64 /* clock pairs kept: the first, then the newest */
#define LP_TRACE_HEADER        2048
#define LP_LINK_SIGNAL         0
#define LP_LINK_WAIT           1
#define LP_LINK_BEGIN          2 /* a request lifecycle's first checkpoint (trace_begin) */
#define LP_LINK_MARK           3 /* a named checkpoint: the channel text is "channel\x1fname" */
#define LP_LINK_END            4
#define LP_LINK_KINDS          5
#define LP_MARK_SEPARATOR      0x1F

/* A frame's t0 until its entry clock has been read: a snapshot that runs in between (possible
 * only while a test clock runs Python code) must not take the slot's old value for a start. */
#define LP_T0_PENDING INT64_MIN

#define LP_FLAG_IO   1
#define LP_FLAG_SYNC 2
#define LP_FLAG_GPU  4
/* Phase objects are kept per combination of the flags above. */
#define LP_FLAG_SETS 8

/* Why a frame's entry went to the overflow node (lp_frame.over), so entries below it are
 * counted with the same cap. */
#define LP_OVER_PATHS 1
#define LP_OVER_DEPTH 2

#endif /* LP_PHASES_CONSTANTS_H */
