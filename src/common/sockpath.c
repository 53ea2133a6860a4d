/*
 * sockpath.c - the default control socket of tickd's clients (sockpath.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common/sockpath.h"

const char *tk__sockpath_resolve(const char *opt)
{
    if (opt)
        return opt;
    const char *env = getenv("TICKD_SOCKET");
    if (env && env[0])
        return env;
    struct stat st;
    if (stat(TK_SOCKPATH_LOCAL, &st) == 0 || (errno != ENOENT && errno != ENOTDIR))
        return TK_SOCKPATH_LOCAL;
    if (stat(TK_SOCKPATH_ACTIVATED, &st) == 0)
        return TK_SOCKPATH_ACTIVATED;
    return TK_SOCKPATH_SYSTEM;
}
