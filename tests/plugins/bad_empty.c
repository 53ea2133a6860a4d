/*
 * bad_empty.c - a test plugin that is refused: tickd_plugin_classes returns
 * a list but a count of 0 (a plugin with no class is a configuration error).
 */
#include "tickd/plugin.h"

static void empty_tick(tkp_obj *o, float dt, const tkp_ctx *c) {}

static const tkp_class empty_class = {
    .abi = TICKD_PLUGIN_ABI, .name = "empty", .position = -1, .tick = empty_tick};

static const tkp_class *const classes[] = {&empty_class};

const uint32_t tickd_plugin_abi = TICKD_PLUGIN_ABI;

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = 0;
    return classes;
}
