/*
 * clash.c - a valid test plugin whose only class is named "probe", like the
 * class of probe.c: either loads alone, but configuring both is refused
 * (class names are unique across plugins) naming the second file and the
 * first one.
 */
#include "tickd/plugin.h"

static void nop_tick(tkp_obj *o, float dt, const tkp_ctx *c) {}

static const tkp_class clash_class = {
    .abi = TICKD_PLUGIN_ABI, .name = "probe", .position = -1, .tick = nop_tick};

static const tkp_class *const classes[] = {&clash_class};

const uint32_t tickd_plugin_abi = TICKD_PLUGIN_ABI;

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = 1;
    return classes;
}
