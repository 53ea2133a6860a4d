/*
 * discover.c - rpc.discover: the OpenRPC 1.x document (https://spec.open-rpc.org)
 * of every method the daemon answers, generated from the method table
 * (methods_int.h) and the param and result tables next to each handler:
 * the tables tkd_exec validates requests with, so the document says what
 * is accepted.
 *
 * A param row becomes a content descriptor ({name, schema, required,
 * description}) whose JSON Schema carries the row's type, range (minimum,
 * maximum, exclusiveMinimum), enum, default, maxItems and nested members;
 * a nested object described once (its row's `ref`) is written under
 * components/schemas and referred to by "$ref".  A result table becomes
 * the schema of the result object (its members, with "required" for those
 * always there; results may gain members, so they are not closed).
 *
 * The document is built once, at the first call, and kept as text (it only
 * depends on the tables); it is answered as a normal reply, so a
 * control.max_output too small for it is a -32003, not a cut document.
 *
 * What it deliberately does not do: describe entity classes or their props
 * (per class, from plugins: engine.info lists them), or the event
 * notifications' params (PROTOCOL.md "Events"; their topics are the enum of
 * events.subscribe).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods_int.h"

#define OPENRPC_VERSION "1.3.2"

static json_t *schema_of(const tkd_field *f, bool result, bool keep, json_t *schemas);

/* Members of an object schema from `fields` (TKD_T_INCLUDE expanded) into
 * `props` and `required`. */
static void members(const tkd_field *fields, bool result, bool keep, json_t *props,
                    json_t *required, json_t *schemas)
{
    for (const tkd_field *f = fields; f->name; f++) {
        if (f->type == TKD_T_INCLUDE) {
            members(f->fields, result, keep || (f->flags & TKD_F_KEEP), props, required, schemas);
            continue;
        }
        json_object_set_new(props, f->name, schema_of(f, result, keep, schemas));
        if (f->flags & TKD_F_REQUIRED)
            json_array_append_new(required, json_string(f->name));
    }
}

static json_t *object_schema(const tkd_field *fields, bool result, json_t *schemas)
{
    json_t *o = json_object(), *props = json_object(), *need = json_array();
    json_object_set_new(o, "type", json_string("object"));
    members(fields, result, false, props, need, schemas);
    json_object_set_new(o, "properties", props);
    if (json_array_size(need))
        json_object_set_new(o, "required", need);
    else
        json_decref(need);
    /* Params: an unknown name is refused.  Results may gain members. */
    if (!result)
        json_object_set_new(o, "additionalProperties", json_false());
    return o;
}

static const char *type_name(tkd_type t)
{
    switch (t) {
    case TKD_T_INT:
        return "integer";
    case TKD_T_NUM:
        return "number";
    case TKD_T_BOOL:
        return "boolean";
    case TKD_T_STR:
        return "string";
    case TKD_T_OBJ:
        return "object";
    case TKD_T_ARR:
        return "array";
    case TKD_T_NULL:
        return "null";
    default:
        return NULL;
    }
}

/*
 * The JSON Schema of row `f`: of a param (`result` false: ranges, enums,
 * defaults unless `keep`, closed objects) or of a result member.  New
 * reference.
 */
static json_t *schema_of(const tkd_field *f, bool result, bool keep, json_t *schemas)
{
    if (f->type == TKD_T_OBJ && f->fields && f->ref) {
        if (!json_object_get(schemas, f->ref))
            json_object_set_new(schemas, f->ref, object_schema(f->fields, result, schemas));
        char ref[128];
        snprintf(ref, sizeof ref, "#/components/schemas/%s", f->ref);
        json_t *s = json_pack("{s:s}", "$ref", ref);
        if (f->desc && !result) {
            /* "$ref" takes no siblings in draft 7: wrap it. */
            json_t *w = json_pack("{s:[o]}", "allOf", s);
            json_object_set_new(w, "description", json_string(f->desc));
            return w;
        }
        return s;
    }
    json_t *s;
    if (f->type == TKD_T_OBJ && f->fields)
        s = object_schema(f->fields, result, schemas);
    else
        s = json_object();
    const char *t = type_name(f->type);
    if (t && (f->flags & TKD_F_NULLABLE))
        json_object_set_new(s, "type", json_pack("[s,s]", t, "null"));
    else if (t && !json_object_get(s, "type"))
        json_object_set_new(s, "type", json_string(t));
    if (f->desc)
        json_object_set_new(s, "description", json_string(f->desc));
    switch (f->type) {
    case TKD_T_INT:
        if (!result) {
            json_object_set_new(s, "minimum", json_integer((json_int_t)f->lo));
            if (f->hi != UINT64_MAX)
                json_object_set_new(s, "maximum", json_integer((json_int_t)f->hi));
        }
        break;
    case TKD_T_NUM:
        if (!result) {
            if (isfinite(f->min))
                json_object_set_new(s, (f->flags & TKD_F_EXCL_MIN) ? "exclusiveMinimum" : "minimum",
                                    json_real(f->min));
            if (isfinite(f->max))
                json_object_set_new(s, "maximum", json_real(f->max));
        }
        break;
    case TKD_T_STR:
        if (f->enums) {
            json_t *e = json_array();
            for (size_t i = 0; f->enums[i]; i++)
                json_array_append_new(e, json_string(f->enums[i]));
            json_object_set_new(s, "enum", e);
        }
        break;
    case TKD_T_ARR:
        if (f->items)
            json_object_set_new(s, "items", schema_of(f->items, result, keep, schemas));
        if (f->hi && f->hi != UINT64_MAX)
            json_object_set_new(s, "maxItems", json_integer((json_int_t)f->hi));
        break;
    case TKD_T_ANY:
        if (f->items) {
            json_t *alt = json_array();
            for (const tkd_field *a = f->items; a->name; a++)
                json_array_append_new(alt, schema_of(a, result, keep, schemas));
            json_object_set_new(s, "oneOf", alt);
        }
        break;
    default:
        break;
    }
    if (!result && !keep && (f->flags & TKD_F_DEFAULT)) {
        json_t *d = NULL;
        switch (f->type) {
        case TKD_T_INT:
            d = json_integer((json_int_t)f->def);
            break;
        case TKD_T_NUM:
            d = json_real(f->def);
            break;
        case TKD_T_BOOL:
            d = json_boolean(f->def != 0);
            break;
        case TKD_T_STR:
            d = f->def_str ? json_string(f->def_str) : NULL;
            break;
        default:
            break;
        }
        if (d)
            json_object_set_new(s, "default", d);
    }
    return s;
}

/* Content descriptors of the param rows (TKD_T_INCLUDE expanded). */
static void params_of(const tkd_field *fields, bool keep, json_t *out, json_t *schemas)
{
    for (const tkd_field *f = fields; f->name; f++) {
        if (f->type == TKD_T_INCLUDE) {
            params_of(f->fields, keep || (f->flags & TKD_F_KEEP), out, schemas);
            continue;
        }
        json_t *cd = json_object();
        json_object_set_new(cd, "name", json_string(f->name));
        if (f->desc)
            json_object_set_new(cd, "description", json_string(f->desc));
        json_object_set_new(cd, "required", json_boolean(f->flags & TKD_F_REQUIRED));
        json_object_set_new(cd, "schema", schema_of(f, false, keep, schemas));
        json_array_append_new(out, cd);
    }
}

static const struct {
    int code;
    const char *name, *message;
} errors[] = {
    {-32700, "parse_error", "parse error: the line is not JSON"},
    {-32600, "invalid_request", "invalid request: not a JSON-RPC 2.0 request object"},
    {-32601, "method_not_found", "method not found"},
    {-32602, "invalid_params", "invalid params: the message names the param at fault"},
    {-32603, "internal_error", "internal error"},
    {-32001, "not_found", "not found: an entity, level, timer, tickable or component named"},
    {-32002, "invalid_state", "invalid state (world.step while not paused, ...)"},
    {-32003, "limit", "limit exceeded (max entities, max_output, max_memory, ...)"},
    {-32004, "shutting_down", "shutting down"},
    {-32005, "read_only", "not allowed on the read-only socket"},
};

json_t *tkd_discover_json(void)
{
    json_t *doc = json_object(), *schemas = json_object(), *methods = json_array();
    json_object_set_new(doc, "openrpc", json_string(OPENRPC_VERSION));
    json_t *info = json_object();
    json_object_set_new(info, "title", json_string("tickd"));
    json_object_set_new(info, "version", json_string(TKD_VERSION));
    json_object_set_new(info, "description",
                        json_string("tickd's control protocol: JSON-RPC 2.0 over a Unix socket, "
                                    "one JSON text per line; params by name. Protocol 1."));
    json_object_set_new(doc, "info", info);
    size_t n;
    const tkd_method *const *all = tkd__methods(&n);
    for (size_t i = 0; i < n; i++) {
        const tkd_method *m = all[i];
        json_t *jm = json_object(), *params = json_array();
        json_object_set_new(jm, "name", json_string(m->name));
        json_object_set_new(jm, "summary", json_string(m->summary));
        if (m->desc)
            json_object_set_new(jm, "description", json_string(m->desc));
        json_object_set_new(jm, "paramStructure", json_string("by-name"));
        params_of(m->params, false, params, schemas);
        json_object_set_new(jm, "params", params);
        json_t *res = json_object();
        json_object_set_new(res, "name", json_string("result"));
        json_object_set_new(res, "schema", object_schema(m->result, true, schemas));
        json_object_set_new(jm, "result", res);
        json_object_set_new(jm, "x-read-only", json_boolean(tkd_method_readonly(m->name)));
        json_array_append_new(methods, jm);
    }
    json_object_set_new(doc, "methods", methods);
    json_t *errs = json_object();
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
        json_object_set_new(errs, errors[i].name,
                            json_pack("{s:i,s:s}", "code", errors[i].code, "message",
                                      errors[i].message));
    json_object_set_new(doc, "components", json_pack("{s:o,s:o}", "schemas", schemas, "errors", errs));
    return doc;
}

static char *doc_text; /* the document, serialized once (it only depends on the tables) */

static void m_rpc_discover(req *r)
{
    if (!doc_text) {
        json_t *doc = tkd_discover_json();
        doc_text = tkd_jsonw_dump(doc, JSON_COMPACT, NULL);
        json_decref(doc);
    }
    size_t len = doc_text ? strlen(doc_text) : 0, budget = out_budget(r);
    if (!doc_text || len > budget) {
        fail(r, -32003,
             "the document is %zu bytes, more than a reply may hold here (control.max_output "
             "less room for the envelope: %zu bytes); raise [control] max_output",
             len, budget);
        return;
    }
    r->answered = true;
    if (r->call)
        tkd_call_reply_text(r->call, doc_text);
}

void tkd__discover_free(void)
{
    free(doc_text);
    doc_text = NULL;
}

/* ---- the table ------------------------------------------------------------------- */

static const tkd_field discover_result[] = {
    R_STR("openrpc", "the OpenRPC version, " OPENRPC_VERSION),
    R_OBJ("info", "title, version, description"), R_ARR("methods", "every method"),
    R_OBJ("components", "schemas and errors the methods refer to"), {0}};

const tkd_method tkd__rpc_methods[] = {
    {"rpc.discover", m_rpc_discover, tkd__no_params, discover_result,
     "this document: every method, its params and its result (OpenRPC " OPENRPC_VERSION ")",
     NULL},
    {0}};
