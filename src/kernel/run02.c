#include "kernel/internal.h"
int k02_dispatch(kt *t) { return k_invariant(t, "todo"); }
int k02_finish(kt *t) { (void)t; return 0; }
