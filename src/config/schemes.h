/* schemes: the URI schemes a job's jar is downloaded over and the allowed-schemes list (see src/config/schemes.c). */
#ifndef FLINKLET_SCHEMES_H
#define FLINKLET_SCHEMES_H

#include <stdbool.h>

#include "config.h"

/* The scheme of a jarURI flinklet downloads, lowercase: "https", "http" or "s3"; NULL for a local jar and for any
 * other scheme. */
const char *artifact_remote_scheme(const char *uri);
/* flinklet.artifacts.allowed-schemes as it stands (its default before config_finalize has filled it in). */
const char *artifact_allowed_schemes(const struct spec *s);
/* Whether the list (entries between ',' or ';', blanks around them, any case) names scheme. */
bool artifact_scheme_listed(const char *list, const char *scheme);
/* The first entry of the list that is not a scheme flinklet downloads (malloc'd), or NULL. */
char *artifact_schemes_unknown(const char *list);
#endif
