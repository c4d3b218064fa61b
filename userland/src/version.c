// SPDX-License-Identifier: LGPL-2.1-or-later
#include "internal.h"

/* The version of the library that runs, which may be newer than the header. */
const char *perwine_version(void)
{
	return PERWINE_STR(PERWINE_VERSION_MAJOR) "." PERWINE_STR(PERWINE_VERSION_MINOR) "."
	       PERWINE_STR(PERWINE_VERSION_MICRO);
}
