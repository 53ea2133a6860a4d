/*
 * suggest.c - "did you mean": the known method or parameter name closest
 * to a typo, as git does for its commands.
 *
 * Closeness is the optimal string alignment distance (Levenshtein with a
 * swap of two adjacent characters counted as one edit), so "levl" (a
 * deletion), "lveel" (a swap) and "entitty.spawn" (an insertion) all count
 * as one edit.  A name is suggested only when it is close for its length
 * (at most 1 edit up to 4 characters, 2 up to 8, else 3); equally close
 * names are all offered.
 *
 * The names come from tickctl's own tables (tickctl.c): the methods of
 * --help with their parameter lists, and the tick spec fields.  Nested
 * parameters are looked up by their parent: `tick` (and
 * `components[i].tick`) holds tick spec fields, `components[i]` holds
 * class, tick and props, `action` holds method and params, `prerequisite`
 * holds id and component.  Props are per class (engine.info): no guess.
 *
 * What it deliberately does not do: refuse to send a name it does not know
 * (tickd may be newer than this tickctl: it is the judge, and a suggestion
 * follows its -32601 or -32602).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "tickctl_int.h"

#define MAX_NAME 64 /* longer words are never close to a known name */

/* Optimal string alignment distance between a and b (both < MAX_NAME). */
static size_t distance(const char *a, size_t na, const char *b, size_t nb)
{
    size_t d[MAX_NAME + 1][MAX_NAME + 1];
    for (size_t i = 0; i <= na; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= na; i++) {
        for (size_t j = 1; j <= nb; j++) {
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[na][nb];
}

/* Edits allowed for a word of `n` characters to count as a typo. */
static size_t allowed_edits(size_t n)
{
    return n <= 4 ? 1 : n <= 8 ? 2 : 3;
}

/* Collects the closest candidates seen so far. */
typedef struct best {
    size_t dist;            /* distance of the best so far (SIZE_MAX: none) */
    const char *names[4];   /* equally close names, in table order */
    size_t n;
} best_t;

static void consider(best_t *b, const char *word, size_t wn, const char *shown,
                     const char *compared)
{
    size_t cn = strlen(compared);
    if (wn >= MAX_NAME || cn >= MAX_NAME)
        return;
    size_t d = distance(word, wn, compared, cn);
    if (d > allowed_edits(wn < cn ? cn : wn) || d > b->dist)
        return;
    if (d < b->dist) {
        b->dist = d;
        b->n = 0;
    }
    for (size_t i = 0; i < b->n; i++)
        if (!strcmp(b->names[i], shown))
            return;
    if (b->n < sizeof b->names / sizeof b->names[0])
        b->names[b->n++] = shown;
}

/* "'a'", "'a' or 'b'", "'a', 'b' or 'c'" with `prefix` before each name;
 * NULL when empty. */
static char *phrase(const best_t *b, const char *prefix)
{
    if (!b->n)
        return NULL;
    tk_ctl_buf_t s = {0};
    for (size_t i = 0; i < b->n; i++) {
        if (i)
            tk__ctl_buf_puts(&s, i + 1 == b->n ? " or " : ", ");
        tk__ctl_buf_putc(&s, '\'');
        tk__ctl_buf_puts(&s, prefix);
        tk__ctl_buf_puts(&s, b->names[i]);
        tk__ctl_buf_putc(&s, '\'');
    }
    tk__ctl_buf_putc(&s, '\0');
    return s.data;
}

char *tk__ctl_closest(const char *word, const char *const *cands, size_t n)
{
    best_t b = {.dist = (size_t)-1};
    size_t wn = strlen(word);
    for (size_t i = 0; i < n; i++)
        if (strcmp(word, cands[i]) != 0)
            consider(&b, word, wn, cands[i], cands[i]);
    return phrase(&b, "");
}

char *tk__ctl_suggest_method(const char *name)
{
    size_t n;
    const tk_ctl_method_t *m = tk__ctl_methods(&n);
    best_t b = {.dist = (size_t)-1};
    size_t wn = strlen(name);
    bool dotted = strchr(name, '.') != NULL;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(name, m[i].name))
            return NULL; /* known here: tickd is older than this tickctl */
        consider(&b, name, wn, m[i].name, m[i].name);
        /* "spawn" for "entity.spawn": compare with the verb alone. */
        const char *verb = strchr(m[i].name, '.');
        if (!dotted && verb)
            consider(&b, name, wn, m[i].name, verb + 1);
    }
    return phrase(&b, "");
}

/* The names of a help table's parameter list ("class [level count]"):
 * words of [a-z_], skipping "<...>" placeholders.  Appends to names[]. */
static size_t param_names(const char *list, char names[][MAX_NAME], size_t cap, bool *tick_fields)
{
    size_t n = 0;
    for (const char *p = list; *p;) {
        if (*p == '<') {
            *tick_fields = true; /* "<tick spec fields>" */
            p += strcspn(p, ">");
            if (*p)
                p++;
            continue;
        }
        size_t k = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
        if (k == 0) {
            p++;
            continue;
        }
        if (k < MAX_NAME && n < cap) {
            memcpy(names[n], p, k);
            names[n][k] = '\0';
            n++;
        }
        p += k;
    }
    return n;
}

char *tk__ctl_suggest_param(const char *method, const char *path)
{
    /* Split "components[0].tick.grup" into parent "components[0].tick" and
     * the name "grup"; the parent's last name ("tick") picks the table. */
    const char *dot = strrchr(path, '.');
    const char *word = dot ? dot + 1 : path;
    size_t plen = dot ? (size_t)(dot - path) : 0;
    char parent[MAX_NAME] = "";
    if (dot) {
        const char *start = path;
        for (const char *q = path; q < dot; q++)
            if (*q == '.')
                start = q + 1;
        size_t k = strcspn(start, ".[");
        if (k >= sizeof parent)
            return NULL;
        memcpy(parent, start, k);
        parent[k] = '\0';
    }

    static const char *const component_fields[] = {"class", "tick", "props", NULL};
    static const char *const action_fields[] = {"method", "params", NULL};
    static const char *const target_fields[] = {"id", "component", NULL};
    const char *const *table = NULL;
    char names[32][MAX_NAME];
    const char *cands[48];
    size_t nc = 0;
    bool tick_fields = false;
    if (!dot) {
        size_t n;
        const tk_ctl_method_t *m = tk__ctl_methods(&n);
        for (size_t i = 0; i < n; i++) {
            if (strcmp(m[i].name, method) != 0)
                continue;
            size_t k = param_names(m[i].params, names, 32, &tick_fields);
            for (size_t j = 0; j < k; j++)
                cands[nc++] = names[j];
        }
        if (tick_fields)
            table = tk__ctl_tick_fields;
    } else if (!strcmp(parent, "tick")) {
        table = tk__ctl_tick_fields;
    } else if (!strcmp(parent, "components")) {
        table = component_fields;
    } else if (!strcmp(parent, "action")) {
        table = action_fields;
    } else if (!strcmp(parent, "prerequisite") || !strcmp(parent, "prerequisites")) {
        table = target_fields;
    }
    for (size_t i = 0; table && table[i] && nc < sizeof cands / sizeof cands[0]; i++)
        cands[nc++] = table[i];

    best_t b = {.dist = (size_t)-1};
    size_t wn = strlen(word);
    for (size_t i = 0; i < nc; i++)
        if (strcmp(word, cands[i]) != 0)
            consider(&b, word, wn, cands[i], cands[i]);
    if (!b.n)
        return NULL;
    char *prefix = tk__ctl_strf("%.*s%s", (int)plen, path, dot ? "." : "");
    char *s = phrase(&b, prefix);
    free(prefix);
    return s;
}
