/*
 * jsonw.h - the daemon's JSON writer: jansson values as text, with reals in
 * the shortest form that reads back to the same double.
 *
 * jansson's encoder prints every real with %.17g, so 0.1 goes out as
 * 0.10000000000000001 and 0.3 as 0.29999999999999999.  This writer prints
 * a real with the fewest of 15, 16 or 17 significant digits whose text
 * strtod() reads back to the very same double (0.1, 1e300, 59.372455801311894),
 * and always with a '.' or an exponent, so a real stays a real when parsed
 * again (2.0, not 2).  For normal doubles that is the shortest text that
 * reads back (%.15g drops trailing zeros); a subnormal, which holds fewer
 * digits, may come out longer than it must ("4.94065645841247e-324" for the
 * smallest).  Exponents follow jansson's style: no '+', no leading
 * zeros ("1e300", "1e-5").
 *
 * Everything that is not a real comes out byte for byte as json_dumps() with
 * the same flags writes it: members in insertion order (JSON_PRESERVE_ORDER
 * is jansson's behaviour anyway), integers in decimal, strings escaped as
 * jansson escapes them ('"', '\\', \b \f \n \r \t, other control characters
 * and U+0000 as \u00XX with upper-case hex; '/' as is unless
 * JSON_ESCAPE_SLASH; non-ASCII as UTF-8 unless JSON_ENSURE_ASCII, then as
 * \uXXXX, with surrogate pairs above U+FFFF), and a string that is not valid
 * UTF-8 makes the whole dump fail, as in jansson.
 *
 * Flags honoured: JSON_COMPACT (required: this writer only writes compact
 * text; without it the call fails), JSON_ENCODE_ANY, JSON_SORT_KEYS,
 * JSON_ESCAPE_SLASH, JSON_ENSURE_ASCII, JSON_PRESERVE_ORDER (no effect).
 * JSON_REAL_PRECISION is ignored: reals are always shortest.
 *
 * What it deliberately does not do: pretty-print (tickctl does that,
 * src/cli/jsonout.c), stream, or write NaN/infinity (jansson cannot hold
 * them).  Recursion depth is that of the value; values built by the daemon
 * or parsed under TKD_RPC_MAX_DEPTH are shallow.
 */
#ifndef TICKD_DAEMON_JSONW_H
#define TICKD_DAEMON_JSONW_H

#include <stddef.h>

#include <jansson.h>

/* Longest text tkd_jsonw_real() writes, NUL included. */
#define TKD_JSONW_REAL_MAX 32

/*
 * Write the shortest round-trip text of `d` (finite) into `buf`
 * (TKD_JSONW_REAL_MAX bytes), NUL-terminated; returns its length.  The text
 * holds a '.' or an 'e': "0.1", "2.0", "1e300", "-1.5e-7".  A non-finite `d`
 * (not valid JSON) writes "null".  For snapshot and event writers that format
 * reals themselves.
 */
size_t tkd_jsonw_real(char *buf, double d);

/*
 * `json` (borrowed) as text per `flags` (see above).  Returns a NUL-terminated
 * string allocated with jansson's allocator (free it with tkd_jsonw_free(), or
 * wherever a json_dumps() result is freed), with its length in *len if `len`
 * is not NULL.  NULL on failure: no JSON_COMPACT, a scalar without
 * JSON_ENCODE_ANY, a string that is not valid UTF-8, or out of memory.
 */
char *tkd_jsonw_dump(const json_t *json, size_t flags, size_t *len);

/* Free a tkd_jsonw_dump() (or json_dumps()) result; NULL is a no-op. */
void tkd_jsonw_free(char *text);

#endif
