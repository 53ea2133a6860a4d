/*
 * tickd/error.h - one error list for libtickd.
 *
 * Every public call of libtickd returns an int: 0 on success, or one of the
 * negative TK_E* codes below.  Codes and their messages come from one X-macro
 * list (libuv's UV_ERRNO_MAP), so tk_strerror() and the enum never drift apart.
 * A call that fails changes nothing.  The world keeps a human sentence about
 * the last failure (tk_world_last_error()) naming the argument at fault.
 */
#ifndef TICKD_ERROR_H
#define TICKD_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

#define TK_ERRNO_MAP(X)                                                        \
    X(EINVAL, -1, "invalid argument")                                          \
    X(ENOENT, -2, "not found")                                                 \
    X(ESTATE, -3, "invalid state")                                             \
    X(ELIMIT, -4, "limit exceeded")                                            \
    X(ENOMEM, -5, "out of memory")                                             \
    X(EEXIST, -6, "already exists")                                            \
    X(EIO, -7, "input/output error")

enum {
    TK_OK = 0,
#define TK__ERR_ENUM(name, code, msg) TK_##name = (code),
    TK_ERRNO_MAP(TK__ERR_ENUM)
#undef TK__ERR_ENUM
};

/* Static message for an error code ("unknown error" for anything else). */
const char *tk_strerror(int err);

/* Short name of an error code ("EINVAL"...), "OK" for 0. */
const char *tk_errname(int err);

#ifdef __cplusplus
}
#endif
#endif
