/* For TestRegions: gt_run (regions.h) compiled alone, to be instrumented. */
#define GT_RUN gt_run
#include "regions.h"
