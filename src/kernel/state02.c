#include "kernel/internal.h"
int kstate02_check(const sp_workflow *wf, const json_t *s, kfail *f) { (void)wf; (void)s; return kfail_set(f, "invalid-input", "state.invalid", "todo"); }
json_t *kstate02_initial(const json_t *tenant, const json_t *run_id, const json_t *input) { (void)tenant; (void)run_id; (void)input; return NULL; }
