/* as_store_mem: an in-memory autoscaler state store for the tests (tests/support/as_store_mem.c); flinklet itself
 * keeps the autoscaler's state on the volume (src/autoscaler/as_store_file.c). */
#ifndef FLINKLET_AS_STORE_MEM_H
#define FLINKLET_AS_STORE_MEM_H

#include "as_internal.h"

/* In memory only (lost when the process ends). */
struct as_state_store as_store_memory_new(void);

#endif
