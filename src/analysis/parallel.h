// Work spread over the analysis's threads (internal to the analysis layer): the support layer's
// parallelFor (dumpsift/support/parallel.h), which the heap walkers share.
#pragma once

#include "dumpsift/support/parallel.h"

namespace dumpsift::detail {

using dumpsift::parallelFor;

} // namespace dumpsift::detail
