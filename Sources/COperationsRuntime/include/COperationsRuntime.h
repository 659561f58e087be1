// The one entry of the Swift runtime the engine calls directly.
#ifndef C_OPERATIONS_RUNTIME_H
#define C_OPERATIONS_RUNTIME_H

#include <stdbool.h>

/// The Swift runtime's swift_tryRetain (part of its stable ABI): retains a native Swift
/// object and returns it, unless the object's deinit has begun (then it returns null).
void *swift_tryRetain(void *object);

/// Retains `object` unless its deinit has begun; true when it did.
static inline bool operations_try_retain(void *object) {
    return swift_tryRetain(object) != 0;
}

#endif
