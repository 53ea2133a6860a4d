/*
 * dup_builtin.c - a test plugin that is refused: its second class is named
 * "counter", like a built-in class.  Class names are unique across built-in
 * and plugin classes, and the refusal loads none of the plugin's classes.
 */
#include "tickd/plugin.h"

static void nop_tick(tkp_obj *o, float dt, const tkp_ctx *c) {}

static const tkp_class fine_class = {
    .abi = TICKD_PLUGIN_ABI, .name = "fine", .position = -1, .tick = nop_tick};
static const tkp_class counter_class = {
    .abi = TICKD_PLUGIN_ABI, .name = "counter", .position = -1, .tick = nop_tick};

static const tkp_class *const classes[] = {&fine_class, &counter_class};

const uint32_t tickd_plugin_abi = TICKD_PLUGIN_ABI;

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = 2;
    return classes;
}
