/*
 * reply.c - what tickctl does with tickd's messages: tell responses from
 * notifications and from garbage, print results on stdout and errors on
 * stderr (with a "did you mean" when the error names a typo), and turn a
 * failed connection into a message and an exit status.
 *
 * Shared by the single request and --watch (tickctl.c) and by batches and
 * scripts (script.c), so every mode prints an answer the same way:
 *
 *   result   pretty JSON on stdout (--compact: one line)
 *   error    "tickctl: error CODE: MESSAGE" on stderr, error.data after it;
 *            in a batch or script the request is located first:
 *            "tickctl: line 3: error -32001: ..."
 *
 * What it deliberately does not do: decide exit statuses for answers (the
 * callers count them) or read the socket.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "tickctl_int.h"

void tk__ctl_say(const char *fmt, ...)
{
    va_list ap;
    fputs("tickctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void tk__ctl_emit(const char *p, size_t n)
{
    if (fwrite(p, 1, n, stdout) == n && fflush(stdout) == 0)
        return;
    /* EPIPE is seen only when SIGPIPE is blocked by the parent. */
    if (errno == EPIPE)
        exit(TK_CTL_EXIT_FAIL);
    tk__ctl_say("writing to stdout: %s", strerror(errno));
    exit(TK_CTL_EXIT_FAIL);
}

void tk__ctl_print_result(const json_t *result, bool compact)
{
    tk_ctl_buf_t out = {0};
    tk__ctl_json_append(&out, result, compact ? 0 : TK_CTL_PRETTY_INDENT);
    tk__ctl_buf_putc(&out, '\n');
    tk__ctl_emit(out.data, out.len);
    tk__ctl_buf_free(&out);
}

tk_ctl_msg_kind_t tk__ctl_msg_classify(const json_t *m, char **why)
{
    if (!json_is_object(m)) {
        *why = tk__ctl_strf("not a JSON object");
        return TK_CTL_MSG_MALFORMED;
    }
    const json_t *ver = json_object_get(m, "jsonrpc");
    if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0) {
        *why = tk__ctl_strf("\"jsonrpc\" is not \"2.0\"");
        return TK_CTL_MSG_MALFORMED;
    }
    if (json_is_string(json_object_get(m, "method")) && !json_object_get(m, "id"))
        return TK_CTL_MSG_NOTIFICATION;
    const json_t *res = json_object_get(m, "result");
    const json_t *err = json_object_get(m, "error");
    if (!json_object_get(m, "id") || (res != NULL) == (err != NULL)) {
        *why = tk__ctl_strf("a response needs \"id\" and one of \"result\" and "
                            "\"error\"");
        return TK_CTL_MSG_MALFORMED;
    }
    if (res)
        return TK_CTL_MSG_RESULT;
    if (!json_is_object(err) || !json_is_integer(json_object_get(err, "code")) ||
        !json_is_string(json_object_get(err, "message"))) {
        *why = tk__ctl_strf("\"error\" needs an integer \"code\" and a string "
                            "\"message\"");
        return TK_CTL_MSG_MALFORMED;
    }
    return TK_CTL_MSG_ERROR;
}

/*
 * The "did you mean" for an error, or NULL: -32601 (the method sent is
 * unknown), a -32602 message "PATH: unknown parameter", or a message
 * naming "unknown method 'NAME'" (a timer action's method).
 */
static char *hint_for(long long code, const char *message, const char *method)
{
    static const char unknown_param[] = ": unknown parameter";
    static const char unknown_method[] = "unknown method '";
    if (code == -32601 && method)
        return tk__ctl_suggest_method(method);
    if (code != -32602)
        return NULL;
    const char *um = strstr(message, unknown_method);
    if (um) {
        um += sizeof unknown_method - 1;
        size_t n = strcspn(um, "'");
        char *name = tk__ctl_strf("%.*s", (int)n, um);
        char *s = tk__ctl_suggest_method(name);
        free(name);
        return s;
    }
    size_t len = strlen(message), ul = sizeof unknown_param - 1;
    if (!method || len <= ul || strcmp(message + len - ul, unknown_param) != 0)
        return NULL;
    char *path = tk__ctl_strf("%.*s", (int)(len - ul), message);
    char *s = tk__ctl_suggest_param(method, path);
    free(path);
    return s;
}

void tk__ctl_print_error(const json_t *msg, const char *method, const char *where)
{
    const json_t *err = json_object_get(msg, "error");
    const json_t *jm = json_object_get(err, "message");
    json_int_t code = json_integer_value(json_object_get(err, "code"));
    fprintf(stderr, "tickctl: %s%serror %" JSON_INTEGER_FORMAT ": ", where ? where : "",
            where ? ": " : "", code);
    fwrite(json_string_value(jm), 1, json_string_length(jm), stderr);
    fputc('\n', stderr);
    const json_t *data = json_object_get(err, "data");
    if (data) {
        tk_ctl_buf_t b = {0};
        tk__ctl_json_append(&b, data, TK_CTL_PRETTY_INDENT);
        tk__ctl_buf_putc(&b, '\n');
        fwrite(b.data, 1, b.len, stderr);
        tk__ctl_buf_free(&b);
    }
    char *hint = hint_for((long long)code, json_string_value(jm), method);
    if (hint) {
        fprintf(stderr, "tickctl: did you mean %s?\n", hint);
        free(hint);
    }
    fflush(stderr);
}

int tk__ctl_conn_error(const char *socket, double timeout, const tk_ctl_conn_t *c, int rc,
                       const char *what)
{
    switch (rc) {
    case TK_CTL_ECONNECT:
        if (c->err == ENAMETOOLONG)
            tk__ctl_say("cannot connect to tickd at %s: socket path longer than %zu bytes",
                        socket, sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
        else
            tk__ctl_say("cannot connect to tickd at %s: %s%s", socket, strerror(c->err),
                        c->err == ENOENT || c->err == ECONNREFUSED
                            ? " (is tickd running? see --socket, TICKD_SOCKET)"
                            : "");
        return TK_CTL_EXIT_USAGE;
    case TK_CTL_ETIMEDOUT:
        tk__ctl_say("timed out after %g s %s tickd at %s", timeout, what, socket);
        return TK_CTL_EXIT_FAIL;
    case TK_CTL_ESTOPPED:
        return -1;
    case TK_CTL_ECLOSED:
        tk__ctl_say("tickd at %s closed the connection without a response", socket);
        return TK_CTL_EXIT_FAIL;
    case TK_CTL_EPARTIAL:
        tk__ctl_say("tickd at %s closed the connection in the middle of a message", socket);
        return TK_CTL_EXIT_FAIL;
    case TK_CTL_ETOOLONG:
        tk__ctl_say("message from tickd at %s is longer than %zu bytes", socket,
                    TK_CTL_MAX_LINE);
        return TK_CTL_EXIT_FAIL;
    default:
        tk__ctl_say("%s tickd at %s: %s", what, socket, strerror(c->err));
        return TK_CTL_EXIT_FAIL;
    }
}
