/*
 * sockpath.c - the default control socket of tickd's clients and the
 * sockets of named instances (sockpath.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

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

static int alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

int tk__world_name_valid(const char *name, char *why, size_t len)
{
    size_t n = name ? strlen(name) : 0;
    const char *reason = NULL;
    char bad[64];
    if (n == 0) {
        reason = "is empty";
    } else if (n > TK_WORLD_NAME_MAX) {
        snprintf(bad, sizeof bad, "is longer than %d characters", TK_WORLD_NAME_MAX);
        reason = bad;
    } else {
        for (size_t i = 0; i < n && !reason; i++) {
            char c = name[i];
            if (alnum(c) || c == '_' || c == '.' || c == '-')
                continue;
            if ((unsigned char)c >= 0x21 && (unsigned char)c < 0x7f)
                snprintf(bad, sizeof bad,
                         "contains '%c' (letters, digits, '_', '.' and '-' only)", c);
            else
                snprintf(bad, sizeof bad,
                         "contains byte 0x%02x (letters, digits, '_', '.' and '-' only)",
                         (unsigned char)c);
            reason = bad;
        }
        if (!reason && !alnum(name[0]))
            reason = "must start with a letter or a digit";
    }
    if (!reason)
        return 1;
    if (len)
        snprintf(why, len, "%s", reason);
    return 0;
}

int tk__sockpath_world(const char *name, char *buf, size_t buflen, char *why, size_t whylen)
{
    char reason[96];
    if (!tk__world_name_valid(name, reason, sizeof reason)) {
        snprintf(why, whylen, "world name '%.*s' %s", TK_WORLD_NAME_MAX + 8, name ? name : "",
                 reason);
        return -1;
    }
    const char *dir = getenv("TICKD_RUNTIME_DIR");
    if (!dir || !dir[0])
        dir = TK_RUNTIME_DIR;
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    struct sockaddr_un un;
    int n = snprintf(buf, buflen, "%.*s/%s.sock", (int)dl, dir, name);
    if (n < 0 || (size_t)n >= buflen || (size_t)n >= sizeof un.sun_path) {
        snprintf(why, whylen,
                 "the socket of world '%s' in %.*s is longer than a Unix socket path "
                 "(%zu bytes; TICKD_RUNTIME_DIR)",
                 name, (int)dl, dir, sizeof un.sun_path - 1);
        return -1;
    }
    return 0;
}
