/*
 * bad_noabi.c - a test plugin that is refused: it exports
 * tickd_plugin_classes but not tickd_plugin_abi, so the host cannot tell
 * which ABI it was built against and must load nothing of it.
 */
#include "tickd/plugin.h"

static void noabi_tick(tkp_obj *o, float dt, const tkp_ctx *c) {}

static const tkp_class noabi_class = {
    .abi = TICKD_PLUGIN_ABI, .name = "noabi", .position = -1, .tick = noabi_tick};

static const tkp_class *const classes[] = {&noabi_class};

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = 1;
    return classes;
}
