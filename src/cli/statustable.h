/* statustable: the human-readable table of `flinklet status`. */
#ifndef FLINKLET_STATUSTABLE_H
#define FLINKLET_STATUSTABLE_H

#include <stdbool.h>

#include "status.h"

/* Prints st as a table to stdout; supervised: a supervisor holds the state directory (its JVM's pid and tasks are
 * shown); without one, what `flinklet run` on dir would restore next (dir NULL: not known, as over --url). */
void status_table_print(const struct status *st, bool supervised, const char *dir);

#endif
