/*
 * error.c - messages for the TK_E* codes of tickd/error.h.
 */
#include "tickd/error.h"

const char *tk_strerror(int err)
{
    switch (err) {
    case TK_OK:
        return "success";
#define TK__ERR_MSG(name, code, msg)                                           \
    case TK_##name:                                                            \
        return msg;
        TK_ERRNO_MAP(TK__ERR_MSG)
#undef TK__ERR_MSG
    default:
        return "unknown error";
    }
}

const char *tk_errname(int err)
{
    switch (err) {
    case TK_OK:
        return "OK";
#define TK__ERR_NAME(name, code, msg)                                          \
    case TK_##name:                                                            \
        return #name;
        TK_ERRNO_MAP(TK__ERR_NAME)
#undef TK__ERR_NAME
    default:
        return "EUNKNOWN";
    }
}
