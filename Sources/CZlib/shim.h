// Exposes zlib (gzip for CoverDrop's padded compressed strings) to Swift.
#include <zlib.h>
