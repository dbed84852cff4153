/* fsmode: the umask of `flinklet run` (include/fsmode.h says why the state volume is group-shared). */
#include "fsmode.h"

#include <sys/stat.h>

mode_t fsmode_apply_umask(void)
{
	return umask(FSMODE_UMASK);
}
