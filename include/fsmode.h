/* fsmode: the permission bits of what flinklet, and the JVM it launches, create on the state volume.
 *
 * Shared with the directory's group, never with others, so that a later run under another uid of the same
 * group can lock, append to, replace and delete what an earlier run made: OpenShift's restricted policy runs
 * each pod under an arbitrary uid in group 0, and Kubernetes' fsGroup makes the volume the pod's group's. The
 * group of new entries is the state directory's when that directory has the setgid bit (the image makes
 * /var/lib/flinklet 2770, group 0; fsGroup sets the bit on the volume); mkdir(2) passes the bit on to new
 * directories. */
#ifndef FLINKLET_FSMODE_H
#define FLINKLET_FSMODE_H

#include <sys/types.h>

/* the umask of `flinklet run`, inherited by the JVM (Flink's checkpoints and savepoints): others get nothing */
#define FSMODE_UMASK 0007
/* directories: rwx for the owner and the group (2770 under a setgid parent) */
#define FSMODE_DIR 0770
/* files: rw for the owner and the group */
#define FSMODE_FILE 0660
/* the generated API token: readable by the group (the next run's uid), written by nobody in place */
#define FSMODE_SECRET 0640

/* Sets the process umask to FSMODE_UMASK and returns the previous one. */
mode_t fsmode_apply_umask(void);

#endif
