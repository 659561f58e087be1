// The module's code is the inline function in its header; SwiftPM wants a source file.
#include "COperationsRuntime.h"
