/* The live file's layout (live.c): its records, its header, and the file as this process keeps it. */
#ifndef LP_PHASES_LIVE_FILE_H
#define LP_PHASES_LIVE_FILE_H

#include "constants.h"

/* The live file's records: plain data only, written by this process and never read back by
 * it, so whatever the file's bytes become (another process truncates, overwrites or copies over
 * it), the process's behaviour does not change. A record is a mirror of a private node or
 * counter, stored after each change; `seq` is odd while an entry is being added (a reader
 * retries or reports it in flight). */
typedef struct lp_live_node {
    uint32_t seq;
    int32_t id;
    int32_t parent;
    int32_t depth;
    int64_t entries;
    int64_t wall_ns;
    int64_t self_ns;
    int64_t cpu_ns;
    int64_t cpu_missing;
    int64_t min_ns;
    int64_t max_ns;
    uint8_t io;
    uint8_t sync;
    uint8_t overflow;
    int64_t io_delta[LP_IO_FIELDS];
    int64_t io_measured;
    int64_t io_failed;
    uint64_t hist[LP_N_BUCKETS];
    uint16_t lname_len; /* the name's UTF-8 bytes, at most LP_LIVE_NAME */
    uint8_t lname_cut;  /* 1: the name was longer and is cut */
    char lname[LP_LIVE_NAME];
} lp_live_node;

typedef struct lp_live_counter {
    int32_t node;
    uint16_t lname_len;
    uint8_t lname_cut;
    int64_t total;
    char lname[LP_LIVE_NAME];
} lp_live_counter;

/* The live file's first page. The reader takes every offset and size from here, so a layout
 * change is a new version only when the meaning of a field changes. */
typedef struct {
    char magic[8]; /* "LPLIVE\0\0" */
    uint32_t version;
    uint32_t header_bytes;
    uint32_t segment_bytes; /* a segment header */
    uint32_t node_bytes;
    uint32_t counter_bytes;
    uint32_t chunk_nodes;
    uint32_t chunk_counters;
    uint32_t n_buckets;
    uint32_t name_bytes;
    uint32_t measure_cpu;
    int64_t pid;
    int64_t created_unix_ns;
    /* published with release stores after the record is complete */
    int32_t n_nodes;
    int32_t n_counters;
    uint64_t epoch; /* bumped by reset(): a reader seeing it change starts over */
    /* offsets in lp_live_node */
    uint32_t off_seq, off_id, off_parent, off_entries, off_wall, off_self, off_cpu, off_cpu_missing;
    uint32_t off_min, off_max, off_io, off_sync, off_overflow, off_depth, off_io_delta, off_io_measured;
    uint32_t off_io_failed, off_hist, off_lname_len, off_lname_cut, off_lname;
    /* offsets in lp_live_counter */
    uint32_t coff_node, coff_total, coff_lname_len, coff_lname_cut, coff_lname;
    uint32_t identity_len;
    char identity[LP_LIVE_IDENTITY]; /* the process's identity as JSON, from Python */
    /* version 2 */
    uint32_t flags;        /* LP_LIVE_FROZEN */
    int64_t alive_unix_ns; /* wall clock of a recent phase exit: a sign of life after SIGKILL */
} lp_live_header;

/* The live file as this process keeps it: one reserved range of address space that the header
 * and the segments are mapped into, at the offsets they have in the file, so one range tells the
 * SIGBUS handler and the fork hook what is ours (see live_ranges.c). Private memory. */
typedef struct {
    int fd;     /* -1 while none is attached */
    long pid;   /* the process that attached it: a fork child never writes to it */
    int slot;   /* its entry in live.c's table of mapped ranges */
    int frozen; /* 1: it could not grow; later nodes and counters are in the snapshots only */
    char *base;
    size_t reserved;
    int64_t size; /* bytes of the file mapped so far */
    uint64_t epoch;
    int64_t alive_mono_ns; /* the monotonic time alive_unix_ns was last stamped at */
    lp_live_header *hdr;
    int32_t n_nodes;                   /* nodes with a record: a prefix of the tree */
    int32_t n_counters;                /* counters with a record: a prefix too */
    lp_live_node **node_records;       /* per node chunk: its records, or NULL */
    lp_live_counter **counter_records; /* per counter chunk */
    int32_t records_cap;               /* entries in each of the two arrays */
} lp_live;

/* A mapped range's state (live_ranges.c): whole, lost (its file shrank: the SIGBUS handler mapped
 * anonymous memory over it), or a fork child's copy (the fork hook did). */
enum { LP_RANGE_OK = 0, LP_RANGE_LOST = 1, LP_RANGE_FORKED = 2 };

#endif /* LP_PHASES_LIVE_FILE_H */
