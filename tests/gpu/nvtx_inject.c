/* Test-only NVTX tool: the library a profiler such as nsys would be, reduced to writing each
 * range push ("PUSH <name>") and pop ("POP") to the file named by LP_NVTX_LOG. NVTX loads it
 * from NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2 once, at the first NVTX call.
 *
 * The types below are the parts of NVTX v3's public injection ABI (nvtxTypes.h,
 * nvToolsExt.h) that this file uses, declared here because the headers are not installed.
 * Covers both entry points: nvtxRangePushA (torch.cuda.nvtx) and nvtxDomainRangePushEx with
 * registered strings (the nvtx package). */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*nvtx_fn)(void);
typedef nvtx_fn **nvtx_table;
typedef struct {
    size_t struct_size;
    int (*GetModuleFunctionTable)(int module, nvtx_table *out_table, unsigned int *out_size);
} nvtx_callbacks;
typedef const void *(*nvtx_get_export_table)(uint32_t id);

typedef struct {
    uint16_t version;
    uint16_t size;
    uint32_t category;
    int32_t colorType;
    uint32_t color;
    int32_t payloadType;
    int32_t reserved0;
    uint64_t payload;
    int32_t messageType; /* 1 ASCII, 3 registered */
    union {
        const char *ascii;
        const void *registered;
    } message;
} nvtx_attributes;

enum { MODULE_CORE = 1, MODULE_CORE2 = 5, ETID_CALLBACKS = 1 };
enum { CORE_RangePushA = 9, CORE_RangePop = 11 };
enum {
    CORE2_DomainRangePushEx = 4,
    CORE2_DomainRangePop = 5,
    CORE2_DomainRegisterStringA = 10,
    CORE2_DomainCreateA = 12,
    CORE2_DomainDestroy = 14,
};

static FILE *out;

static void note(const char *what, const char *name)
{
    if (out) {
        fprintf(out, name ? "%s %s\n" : "%s\n", what, name);
        fflush(out);
    }
}

static int push_a(const char *message)
{
    note("PUSH", message ? message : "");
    return 0;
}
static int pop(void)
{
    note("POP", NULL);
    return 0;
}
/* Handles are our own copies of the strings: the domain's name, a registered string. */
static void *domain_create(const char *name)
{
    return strdup(name ? name : "");
}
static void domain_destroy(void *domain)
{
    free(domain);
}
static void *register_string(void *domain, const char *text)
{
    (void)domain;
    return strdup(text ? text : "");
}
static int domain_push(void *domain, const nvtx_attributes *a)
{
    (void)domain;
    const char *name = "";
    if (a && a->messageType == 1)
        name = a->message.ascii;
    else if (a && a->messageType == 3)
        name = (const char *)a->message.registered;
    note("PUSH", name);
    return 0;
}
static int domain_pop(void *domain)
{
    (void)domain;
    note("POP", NULL);
    return 0;
}

static int set(nvtx_get_export_table get, int module, int id, nvtx_fn fn)
{
    const nvtx_callbacks *callbacks = get(ETID_CALLBACKS);
    nvtx_table table = NULL;
    unsigned int size = 0;
    if (!callbacks || !callbacks->GetModuleFunctionTable(module, &table, &size) || (unsigned)id >= size)
        return 0;
    *table[id] = fn;
    return 1;
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(nvtx_get_export_table get)
{
    const char *path = getenv("LP_NVTX_LOG");
    out = path ? fopen(path, "a") : NULL;
    int ok = set(get, MODULE_CORE, CORE_RangePushA, (nvtx_fn)push_a);
    ok &= set(get, MODULE_CORE, CORE_RangePop, (nvtx_fn)pop);
    ok &= set(get, MODULE_CORE2, CORE2_DomainCreateA, (nvtx_fn)domain_create);
    ok &= set(get, MODULE_CORE2, CORE2_DomainDestroy, (nvtx_fn)domain_destroy);
    ok &= set(get, MODULE_CORE2, CORE2_DomainRegisterStringA, (nvtx_fn)register_string);
    ok &= set(get, MODULE_CORE2, CORE2_DomainRangePushEx, (nvtx_fn)domain_push);
    ok &= set(get, MODULE_CORE2, CORE2_DomainRangePop, (nvtx_fn)domain_pop);
    return ok;
}
