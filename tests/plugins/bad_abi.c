/*
 * bad_abi.c - a test plugin that is refused: it declares ABI version 999
 * (a plugin built against a tickd/plugin.h from the future).  The host must
 * compare the version before calling anything and name both versions.
 */
#include "tickd/plugin.h"

static void future_tick(tkp_obj *o, float dt, const tkp_ctx *c) {}

static const tkp_class future_class = {
    .abi = TICKD_PLUGIN_ABI, .name = "future", .position = -1, .tick = future_tick};

static const tkp_class *const classes[] = {&future_class};

const uint32_t tickd_plugin_abi = 999;

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = 1;
    return classes;
}
