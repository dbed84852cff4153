/* flinkversion: pure: what the version a running Flink reports of itself (GET /config's "flink-version", read per
 * JVM) allows flinklet to do with the next one; read strictly: only a release's own number counts, a snapshot, a
 * vendor's build or anything else is a Flink of unknown fixes. No I/O. */
#ifndef FLINKLET_FLINKVERSION_H
#define FLINKLET_FLINKVERSION_H

#include <stdbool.h>

/* Whether checkpoints taken after a claim-mode restore of a NATIVE savepoint can be restored by this Flink: a
 * release (MAJOR.MINOR.PATCH, digits only) with FLINK-39964, fixed in 2.2.2, 2.3.1 and 2.4.0 (never in 1.x, 2.0 or
 * 2.1; no 1.20 backport); before it those checkpoints name the savepoint's files relative to their own directory
 * and a restore from them fails (FileNotFoundException, seen with 2.2.1). NULL, empty, a snapshot ("2.3-SNAPSHOT"),
 * a vendor's suffix ("1.20.1-vvr-8.0.11", "2.2.2-custom") or anything unparsable: false. */
bool flinkversion_claims_native_savepoints(const char *version);

#endif
