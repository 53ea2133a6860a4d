/*
 * dup_within.c - a test plugin that is refused: it lists two different class
 * descriptors under the same name "twin".
 */
#include "tickd/plugin.h"

static void nop_tick(tkp_obj *o, float dt, const tkp_ctx *c) {}

static const tkp_class twin_a = {
    .abi = TICKD_PLUGIN_ABI, .name = "twin", .position = -1, .tick = nop_tick};
static const tkp_class twin_b = {
    .abi = TICKD_PLUGIN_ABI, .name = "twin", .position = -1, .tick = nop_tick};

static const tkp_class *const classes[] = {&twin_a, &twin_b};

const uint32_t tickd_plugin_abi = TICKD_PLUGIN_ABI;

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = 2;
    return classes;
}
