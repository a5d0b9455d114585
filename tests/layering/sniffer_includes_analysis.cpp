// A deliberate wrong-way include: a file of the sniff layer that includes a header of the analysis
// layer above it. It must not compile, because a layer sees only its own headers and those of the
// layers it links (CMakeLists.txt). The ctest test "layering: a sniffer that includes an analysis
// header does not compile" builds it (it is not part of the normal build) and passes only when
// the compiler cannot find the analysis header.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/sniff/sniffer.h"
