/*
 * bad_old_abi.c - a test plugin that is refused: it declares ABI version 1
 * (built against the tickd/plugin.h before dense runs, whose tick_batch took
 * an array of instances).  The host must refuse it before calling anything,
 * naming both versions.
 */
#include "tickd/plugin.h"

static void old_tick(tkp_obj *o, float dt, const tkp_ctx *c) {}

static const tkp_class old_class = {.abi = 1, .name = "old", .position = -1, .tick = old_tick};

static const tkp_class *const classes[] = {&old_class};

const uint32_t tickd_plugin_abi = 1;

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = 1;
    return classes;
}
