// zlib, for the tour's PNG codec: its development files come with the Swift toolchain's
// documented prerequisites (zlib1g-dev), unlike libpng's.
#include <zlib.h>
