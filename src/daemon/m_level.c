/*
 * m_level.c - level.*: list, add, remove (in slices past SLICE_FUNCS entities).
 */
#include <string.h>

#include "methods_int.h"

/* ---- levels ------------------------------------------------------------------------- */

static void m_level_list(req *r)
{
    tkd *d = r->d;
    json_t *a = json_array();
    for (size_t i = 0; i < tk_level_count(d->world); i++) {
        tk_level_id l = tk_level_at(d->world, i);
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(tk_level_name(d->world, l)));
        json_object_set_new(x, "entities", jid(tks_level_entities(d->sim, l)));
        json_array_append_new(a, x);
    }
    json_t *o = json_object();
    json_object_set_new(o, "levels", a);
    ok(r, o);
}

static void m_level_add(req *r)
{
    const char *name = arg(r, "name")->str;
    char err[TKS_ERR_MAX];
    int rc = tks_level_add(r->d->sim, name, err);
    if (rc) {
        fail(r, rc == TK_EEXIST ? -32602 : tkd_code_from_tk(rc), "%s", err);
        return;
    }
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    ok(r, o);
}

static void m_level_remove(req *r)
{
    const char *name = arg(r, "name")->str;
    char err[TKS_ERR_MAX];
    tk_level_id l;
    if (r->client && (!r->d->offline || r->d->replay) && strcmp(name, "persistent") &&
        tk_level_find(r->d->world, name, &l) == 0 && tks_level_entities(r->d->sim, l) > SLICE_FUNCS) {
        tkd_job *j = tk_calloc(1, sizeof *j);
        j->kind = JOB_LEVEL_REMOVE;
        j->level = tk_strdup(name);
        job_add(r, j);
        return;
    }
    uint64_t before = tks_entity_count(r->d->sim);
    int rc = tks_level_remove(r->d->sim, name, err);
    if (rc) {
        fail_tk(r, rc, err);
        return;
    }
    json_t *o = json_object();
    json_object_set_new(o, "destroyed", jid(before - tks_entity_count(r->d->sim)));
    ok(r, o);
}

/* ---- the table ------------------------------------------------------------------- */

static const tkd_field list_result[] = {
    R_ARR("levels", "each {name, entities}"), {0}};
static const tkd_field name_params[] = {P_STR("name", TKD_F_REQUIRED, "level name"), {0}};
static const tkd_field add_result[] = {R_STR("name", NULL), {0}};
static const tkd_field remove_result[] = {R_INT("destroyed", "entities destroyed with it"), {0}};

const tkd_method tkd__level_methods[] = {
    {"level.list", m_level_list, tkd__no_params, list_result, "levels and their entity counts",
     NULL},
    {"level.add", m_level_add, name_params, add_result, "add a level", NULL},
    {"level.remove", m_level_remove, name_params, remove_result,
     "remove a level and destroy its entities", "In slices past 8192 entities; the persistent "
     "level cannot be removed."},
    {0}};
