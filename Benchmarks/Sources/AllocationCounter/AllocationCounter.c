// Counts the process's allocations by defining malloc & co. in the executable: the
// dynamic linker resolves every library's calls to these definitions first, and each
// forwards to the next definition (libc's) found with dlsym(RTLD_NEXT, ...).
//
// dlsym itself may allocate (calloc) before the real functions are known: those few
// requests are served from a static bootstrap buffer and never freed to libc.
#define _GNU_SOURCE
#include "AllocationCounter.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef void *(*malloc_function)(size_t);
typedef void *(*calloc_function)(size_t, size_t);
typedef void *(*realloc_function)(void *, size_t);
typedef int (*posix_memalign_function)(void **, size_t, size_t);
typedef void *(*aligned_alloc_function)(size_t, size_t);
typedef void *(*memalign_function)(size_t, size_t);
typedef void *(*valloc_function)(size_t);
typedef void (*free_function)(void *);

static malloc_function real_malloc;
static calloc_function real_calloc;
static realloc_function real_realloc;
static posix_memalign_function real_posix_memalign;
static aligned_alloc_function real_aligned_alloc;
static memalign_function real_memalign;
static valloc_function real_valloc;
static free_function real_free;

static _Atomic uint64_t allocations;
static _Atomic uint64_t frees;
static _Atomic int resolving;

// Serves allocations made while the real functions are being looked up.
static _Alignas(16) unsigned char bootstrap[16384];
static _Atomic size_t bootstrap_used;

static int in_bootstrap(const void *pointer) {
    return (const unsigned char *)pointer >= bootstrap && (const unsigned char *)pointer < bootstrap + sizeof bootstrap;
}

static void *bootstrap_allocate(size_t size) {
    size_t rounded = (size + 15) & ~(size_t)15;
    size_t offset = atomic_fetch_add(&bootstrap_used, rounded);
    if (offset + rounded > sizeof bootstrap) return NULL;
    return bootstrap + offset;  // static storage: already zeroed
}

static void resolve(void) {
    if (real_free != NULL) return;
    // Several threads may resolve at once; each stores the same values. The flag only
    // routes the allocations dlsym makes meanwhile to the bootstrap buffer.
    atomic_fetch_add(&resolving, 1);
    real_malloc = (malloc_function)dlsym(RTLD_NEXT, "malloc");
    real_calloc = (calloc_function)dlsym(RTLD_NEXT, "calloc");
    real_realloc = (realloc_function)dlsym(RTLD_NEXT, "realloc");
    real_posix_memalign = (posix_memalign_function)dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = (aligned_alloc_function)dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = (memalign_function)dlsym(RTLD_NEXT, "memalign");
    real_valloc = (valloc_function)dlsym(RTLD_NEXT, "valloc");
    free_function resolved_free = (free_function)dlsym(RTLD_NEXT, "free");
    atomic_fetch_sub(&resolving, 1);
    real_free = resolved_free;
}

static int resolving_now(void) { return atomic_load_explicit(&resolving, memory_order_relaxed) > 0 && real_free == NULL; }

static void count_allocation(void) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); }

void *malloc(size_t size) {
    if (resolving_now()) return bootstrap_allocate(size);
    resolve();
    count_allocation();
    return real_malloc(size);
}

void *calloc(size_t count, size_t size) {
    if (resolving_now()) return bootstrap_allocate(count * size);
    resolve();
    count_allocation();
    return real_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    if (in_bootstrap(pointer)) {
        // Moves a bootstrap block to the real heap (its old size is unknown: copy what fits).
        void *moved = malloc(size);
        if (moved != NULL) {
            size_t available = (size_t)(bootstrap + sizeof bootstrap - (unsigned char *)pointer);
            memcpy(moved, pointer, size < available ? size : available);
        }
        return moved;
    }
    if (resolving_now()) return bootstrap_allocate(size);
    resolve();
    count_allocation();
    return real_realloc(pointer, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    resolve();
    count_allocation();
    return real_posix_memalign(result, alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    resolve();
    count_allocation();
    return real_aligned_alloc(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
    resolve();
    count_allocation();
    return real_memalign(alignment, size);
}

void *valloc(size_t size) {
    resolve();
    count_allocation();
    return real_valloc(size);
}

void free(void *pointer) {
    if (pointer == NULL || in_bootstrap(pointer)) return;
    resolve();
    atomic_fetch_add_explicit(&frees, 1, memory_order_relaxed);
    real_free(pointer);
}

uint64_t allocation_counter_allocations(void) { return atomic_load_explicit(&allocations, memory_order_relaxed); }

uint64_t allocation_counter_frees(void) { return atomic_load_explicit(&frees, memory_order_relaxed); }

int allocation_counter_is_active(void) { return real_free != NULL; }
