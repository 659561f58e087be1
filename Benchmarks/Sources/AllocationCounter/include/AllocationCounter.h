#ifndef ALLOCATION_COUNTER_H
#define ALLOCATION_COUNTER_H

#include <stdint.h>

/// Allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc)
/// made by every thread of the process since it started. The functions are interposed
/// by this target's definitions, which the executable exports before libc's.
uint64_t allocation_counter_allocations(void);

/// Frees since the process started.
uint64_t allocation_counter_frees(void);

/// Whether the interposed functions ran at all (they have seen an allocation).
int allocation_counter_is_active(void);

#endif
